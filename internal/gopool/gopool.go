// Package gopool runs functions on reused goroutines.
//
// A goroutine that starts fresh for each unit of work grows its stack,
// copying it, to what the work needs every time; one that ran such work
// before has grown already. The engine serves each asynchronous host call
// on a goroutine of its own, and the daemon each program stream's reader
// and writer: [Go] hands such work to an idle goroutine left by earlier
// work when one is waiting, and starts a new one otherwise. A goroutine
// idle for a second leaves, so none stays past a burst.
//
// A worker waiting for work has [Worker] as its top function: a leak check
// ignores exactly that, and still sees a worker stuck in its work.
package gopool

import "time"

// Worker is the top function of a goroutine waiting for work, as a leak
// check (goleak.IgnoreTopFunction) names it.
const Worker = "github.com/codemode-go/codemode/internal/gopool.worker"

// idleFor is how long a worker waits for more work before it leaves.
const idleFor = time.Second

// Go runs f on a goroutine of its own: an idle one if one is waiting, or
// a new one. Like a go statement, it does not wait for f.
func Go(f func()) {
	select {
	case idle <- f:
	default:
		go worker(f)
	}
}

// idle hands work to a goroutine waiting in worker.
var idle = make(chan func())

// worker runs f, then each f handed to it, until it has waited idleFor.
func worker(f func()) {
	t := time.NewTimer(idleFor)
	defer t.Stop()
	for {
		f()
		t.Reset(idleFor)
		select {
		case f = <-idle:
		case <-t.C:
			return
		}
	}
}
