package codemode

import (
	"context"
	"sync"
	"time"
)

// clock is a run's deadline. By default it is fixed: the run's start plus
// Limits.Deadline (or the caller's deadline, if sooner). With a queue
// timeout ([WithQueueTimeout]) it counts the run's own time: it stops
// while the run waits for a sandbox or an execution right, so each wait
// moves the deadline later by its length, never past the caller's
// deadline (hard). The contexts it makes follow it: they end at its
// deadline, never while it is stopped, so a host call is never cut off
// by time the run spent queued.
type clock struct {
	mu       sync.Mutex
	deadline time.Time
	hard     time.Time     // the caller's deadline; zero: none
	queueMax time.Duration // the most the run may wait in queues, in all; zero: a fixed clock
	queued   time.Duration // waited so far
	stopped  time.Time     // when the current wait began; zero: running
	ctxs     []*runContext
}

// newClock is the clock of a run whose deadline is deadline (start plus
// the limit, or the caller's if sooner: runDeadline) and, when queueMax is
// positive, whose queue waits are not its time.
func newClock(ctx context.Context, deadline time.Time, queueMax time.Duration) *clock {
	c := &clock{deadline: deadline, queueMax: queueMax}
	c.hard, _ = ctx.Deadline()
	return c
}

// capped is t, or the caller's deadline if that is sooner.
func (c *clock) capped(t time.Time) time.Time {
	if !c.hard.IsZero() && c.hard.Before(t) {
		return c.hard
	}
	return t
}

// now is the deadline, whether it has passed (a stopped clock's has not,
// unless the caller's has), and whether the clock is stopped.
func (c *clock) now() (deadline time.Time, passed, stopped bool) {
	if c.queueMax <= 0 { // fixed: no lock, and one reading of the monotonic clock
		return c.deadline, time.Until(c.deadline) <= 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := time.Now()
	if !c.stopped.IsZero() {
		return c.capped(c.deadline.Add(t.Sub(c.stopped))), !c.hard.IsZero() && !t.Before(c.hard), true
	}
	return c.deadline, !t.Before(c.deadline), false
}

// Deadline is when the run must end, as of now.
func (c *clock) Deadline() time.Time {
	d, _, _ := c.now()
	return d
}

// passedAt reports whether the deadline had passed at t (monoNow's, taken
// just before: it saves reading the clock again); a clock that stops
// reads its own.
func (c *clock) passedAt(t monoTime) bool {
	if c.queueMax > 0 {
		return c.passed()
	}
	return t >= monoTime(c.deadline.Sub(monoBase))
}

// passed reports whether the deadline has passed.
func (c *clock) passed() bool {
	_, p, _ := c.now()
	return p
}

// waitUntil is how long a wait for a sandbox or a right may last: to the
// deadline on a fixed clock; to the end of the queue time left (and the
// caller's deadline) on one that stops. queue says that bound is the
// queue's, not the deadline's.
func (c *clock) waitUntil() (until time.Time, queue bool) {
	if c.queueMax <= 0 {
		return c.deadline, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	until = time.Now().Add(c.queueMax - c.queued)
	if capped := c.capped(until); capped != until {
		return capped, false
	}
	return until, true
}

// stop stops the clock while the run waits in a queue (a fixed clock, or
// none, does not stop).
func (c *clock) stop() {
	if c == nil || c.queueMax <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped.IsZero() {
		c.stopped = time.Now()
	}
}

// start starts a stopped clock: the deadline moves later by the wait.
func (c *clock) start() {
	if c == nil || c.queueMax <= 0 {
		return
	}
	c.mu.Lock()
	if c.stopped.IsZero() {
		c.mu.Unlock()
		return
	}
	waited := time.Since(c.stopped)
	c.stopped = time.Time{}
	c.queued += waited
	c.deadline = c.capped(c.deadline.Add(waited))
	d := c.deadline
	ctxs := c.ctxs
	c.mu.Unlock()
	for _, r := range ctxs {
		r.timer.Reset(time.Until(d))
	}
}

// context returns a context that ends at the clock's deadline or with
// parent, and its cancel. A fixed clock's is context.WithDeadline's.
func (c *clock) context(parent context.Context) (context.Context, context.CancelFunc) {
	if c.queueMax <= 0 {
		return context.WithDeadline(parent, c.deadline)
	}
	r := &runContext{Context: parent, clock: c, done: make(chan struct{})}
	r.stopParent = context.AfterFunc(parent, func() { r.end(parent.Err()) })
	c.mu.Lock()
	c.ctxs = append(c.ctxs, r)
	r.timer = time.AfterFunc(time.Until(c.deadline), r.check) // set before it can fire early: start needs mu
	c.mu.Unlock()
	return r, func() {
		r.end(context.Canceled)
		r.timer.Stop()
		r.stopParent()
	}
}

// runContext is a context that follows a clock that stops.
type runContext struct {
	context.Context // the parent: its values
	clock           *clock
	timer           *time.Timer
	stopParent      func() bool
	done            chan struct{}
	mu              sync.Mutex
	err             error
}

// check ends the context if the deadline has passed; a stopped clock's
// start sets its timer again.
func (r *runContext) check() {
	d, passed, stopped := r.clock.now()
	switch {
	case passed:
		r.end(context.DeadlineExceeded)
		r.stopParent()
	case !stopped:
		r.timer.Reset(time.Until(d))
	}
}

func (r *runContext) end(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
		close(r.done)
	}
}

func (r *runContext) Deadline() (time.Time, bool) { return r.clock.Deadline(), true }
func (r *runContext) Done() <-chan struct{}       { return r.done }

func (r *runContext) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// monoTime is a moment on the process's monotonic clock: the time since
// monoBase. The effects ledger keeps its calls' times so: one reading of
// the monotonic clock (time.Since's), where time.Now reads the wall clock
// too, twice the cost on every host call.
type monoTime = time.Duration

// monoBase is the origin of monoTime.
var monoBase = time.Now()

// monoNow is the monotonic clock now.
func monoNow() monoTime { return time.Since(monoBase) }
