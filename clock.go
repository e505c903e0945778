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

// newClock is the clock of a run that starts at start with the limit
// and, when queueMax is positive, whose queue waits are not its time.
func newClock(ctx context.Context, start time.Time, limit, queueMax time.Duration) *clock {
	c := &clock{deadline: start.Add(limit), queueMax: queueMax}
	if d, ok := ctx.Deadline(); ok {
		c.hard = d
		c.deadline = minTime(c.deadline, d)
	}
	return c
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// now is the deadline and whether it has passed (a stopped clock's has
// not, unless the caller's has).
func (c *clock) now() (time.Time, bool) {
	if c.queueMax <= 0 { // fixed: no lock
		return c.deadline, !time.Now().Before(c.deadline)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := time.Now()
	if !c.stopped.IsZero() {
		d := minTime(c.deadline.Add(t.Sub(c.stopped)), c.hardOr(t.Add(time.Hour)))
		return d, !c.hard.IsZero() && !t.Before(c.hard)
	}
	return c.deadline, !t.Before(c.deadline)
}

func (c *clock) hardOr(t time.Time) time.Time {
	if c.hard.IsZero() {
		return t
	}
	return c.hard
}

// Deadline is when the run must end, as of now.
func (c *clock) Deadline() time.Time {
	d, _ := c.now()
	return d
}

// passed reports whether the deadline has passed.
func (c *clock) passed() bool {
	_, p := c.now()
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
	if !c.hard.IsZero() && c.hard.Before(until) {
		return c.hard, false
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
	c.deadline = c.deadline.Add(waited)
	if !c.hard.IsZero() {
		c.deadline = minTime(c.deadline, c.hard)
	}
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
	d, passed := r.clock.now()
	switch {
	case passed:
		r.end(context.DeadlineExceeded)
		r.stopParent()
	case r.clock.running():
		r.timer.Reset(time.Until(d))
	}
}

// running reports whether the clock runs (is not stopped).
func (c *clock) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped.IsZero()
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
