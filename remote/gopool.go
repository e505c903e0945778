package remote

import "time"

// reuse runs f on a goroutine of its own: an idle one that ran an earlier
// f, if one is waiting, or a new one. A program's stream has goroutines
// of its own on both sides (the daemon's reader and writer, the client's
// answers), and a new goroutine's stack grows, copied, to what gRPC's
// Recv and Send need on every program; a reused one has grown already.
// A goroutine idle for a second leaves, so none stays past a burst.
func reuse(f func()) {
	select {
	case idle <- f:
	default:
		go worker(f)
	}
}

// idle hands work to a goroutine waiting in worker.
var idle = make(chan func())

// worker runs f, then each f handed to it, until it has waited a second.
func worker(f func()) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		f()
		t.Reset(time.Second)
		select {
		case f = <-idle:
		case <-t.C:
			return
		}
	}
}
