package gopool

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestWorkerReused: work handed to Go runs on a goroutine that then waits
// for more with Worker on top (a leak check ignoring exactly that passes),
// the next work runs on that same goroutine, and it leaves once idle.
func TestWorkerReused(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ids := make(chan string, 1)
	Go(func() { ids <- goroutineID() })
	first := <-ids
	// Until it waits in select, the next Go may start another goroutine.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stacks(), "[select"); {
		if time.Now().After(deadline) {
			t.Fatalf("the worker never waits for more work:\n%s", stacks())
		}
		time.Sleep(time.Millisecond)
	}
	if err := goleak.Find(before, goleak.IgnoreTopFunction(Worker)); err != nil {
		t.Errorf("a waiting worker is not named Worker: %v", err)
	}
	Go(func() { ids <- goroutineID() })
	if second := <-ids; second != first {
		t.Errorf("the second work ran on goroutine %s, not the waiting %s", second, first)
	}
	// It leaves idleFor after its last work (goleak.Find itself retries
	// for under a second).
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if err = goleak.Find(before); err == nil {
			return
		}
	}
	t.Errorf("a worker stays long past its idle time: %v", err)
}

// goroutineID is the calling goroutine's number, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

// stacks is the headers and frames of every goroutine but the caller's
// that runs a worker.
func stacks() string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "gopool.worker(") && !strings.Contains(g, "gopool.stacks(") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
