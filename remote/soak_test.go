//go:build soak

package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/proc"
	"github.com/codemode-go/codemode/remote"
)

// TestDaemonSoak (make soak): SOAK_PROGRAMS (default 100,000) programs
// through one daemon on loopback from 8 clients, each program calling back
// into its client; one in ten is abandoned mid-run (the client cancels
// its stream), one in a hundred drops its whole connection and dials
// again. Every program that was not abandoned comes back right; RSS is
// within 64 MiB of its value after the first 10 % (the daemon's bytecode
// cache is bounded at 256 KiB, which the programs' distinct sources
// overflow: with the default 64 MiB bound it fills, by design, for the
// whole soak); once the daemon stops, goroutines and open file descriptors
// are back to where they started.
func TestDaemonSoak(t *testing.T) {
	n := 100_000
	if s := os.Getenv("SOAK_PROGRAMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		n = v
	}
	baseGoroutines, baseFDs := runtime.NumGoroutine(), proc.OpenFDs(t)
	func() {
		// Not the tests' daemon helper: its recorder keeps every message.
		// The cache is bounded below what the programs' distinct sources
		// fill, so it evicts all along and RSS must stay flat.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g := grpc.NewServer()
		srv := remote.NewServer(remote.ServerOptions{Max: codemode.Limits{Memory: 16 << 20, Deadline: 5 * time.Second},
			Executor: []codemode.Option{codemode.WithCacheSize(256 << 10)}})
		srv.Register(g)
		go g.Serve(ln)
		defer func() {
			g.Stop()
			srv.Close()
		}()
		addr := ln.Addr().String()
		var next, abandoned, redials, failures atomic.Int64
		var rss10 atomic.Int64
		var once sync.Once
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				c, err := remote.Dial(addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer func() { c.Close() }()
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					if i == n/10 {
						once.Do(func() { rss10.Store(proc.RSS(t)) })
					}
					if i > 0 && i%(n/10) == 0 {
						var ms runtime.MemStats
						runtime.ReadMemStats(&ms)
						t.Logf("%3d %%: RSS %.1f MiB, Go heap in use %.1f MiB, %d goroutines", 100*i/n, float64(proc.RSS(t))/(1<<20),
							float64(ms.HeapInuse)/(1<<20), runtime.NumGoroutine())
					}
					dispatch := codemode.EnvelopeDispatch(nil, func(_ context.Context, _, tool, args string) (any, error) {
						return json.RawMessage(args), nil
					})
					req := codemode.Request{Code: fmt.Sprintf("async () => { const [a, b] = await Promise.all([s.get(%d), s.get(1)]); return a[0] + b[0] }", i),
						Providers: []codemode.Provider{{Name: "s", Tools: []string{"get"}}}, Dispatch: dispatch}
					switch r := rng.IntN(100); {
					case r < 10: // abandoned: the client's stream goes away mid-run
						ctx, cancel := context.WithCancel(context.Background())
						time.AfterFunc(time.Duration(rng.IntN(500))*time.Microsecond, cancel)
						c.Execute(ctx, req)
						cancel()
						abandoned.Add(1)
					case r < 11: // the whole connection goes away mid-run, and the client dials again
						old := c
						time.AfterFunc(time.Duration(rng.IntN(500))*time.Microsecond, func() { old.Close() })
						old.Execute(context.Background(), req)
						old.Close()
						if c, err = remote.Dial(addr); err != nil {
							t.Error(err)
							return
						}
						redials.Add(1)
					default:
						res := c.Execute(context.Background(), req)
						if res.Error != "" || string(res.Result) != strconv.Itoa(i+1) {
							if failures.Add(1) <= 10 {
								t.Errorf("program %d: %q, %s", i, res.Result, res.Error)
							}
						}
					}
				}
			}()
		}
		wg.Wait()
		rssEnd := proc.RSS(t)
		t.Logf("%d programs (%d abandoned, %d with the connection dropped); RSS at 10 %%: %.1f MiB, at 100 %%: %.1f MiB",
			n, abandoned.Load(), redials.Load(), float64(rss10.Load())/(1<<20), float64(rssEnd)/(1<<20))
		if failures.Load() > 0 {
			t.Fatalf("%d programs came back wrong", failures.Load())
		}
		if rssEnd > rss10.Load()+64<<20 {
			t.Errorf("RSS grew from %d to %d bytes", rss10.Load(), rssEnd)
		}
	}()
	// The daemon has stopped: every goroutine and descriptor it and the
	// clients had must be gone.
	if !proc.Settle(func() bool { return runtime.NumGoroutine() <= baseGoroutines }) {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d at the start, %d at the end\n%s", baseGoroutines, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
	if !proc.Settle(func() bool { return proc.OpenFDs(t) <= baseFDs }) {
		t.Errorf("open file descriptors: %d at the start, %d at the end", baseFDs, proc.OpenFDs(t))
	}
	t.Logf("goroutines %d → %d, fds %d → %d", baseGoroutines, runtime.NumGoroutine(), baseFDs, proc.OpenFDs(t))
}
