package codemode

/*
#include "bridge.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// DefaultRetainIdle is how long a retained sandbox waits for a
// [Retained.Call] before it closes itself (see [WithRetainIdle]).
const DefaultRetainIdle = time.Minute

// WithRetainIdle sets how long a retained sandbox may go without a
// [Retained.Call] before it closes itself; timers firing do not count as
// activity. Zero keeps [DefaultRetainIdle]; New refuses a negative value.
func WithRetainIdle(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: negative retain idle time %v", ErrInvalidLimits, d)
		}
		c.retainIdle = d
		return nil
	}
}

// ErrRetainedClosed is matched by the errors of a [Retained] sandbox that
// has closed: by Close, by its idle bound, by a kill of code it ran, or by
// the executor closing. A kill is an [*ExecError] of kind timeout or
// memory_exceeded that matches ErrRetainedClosed too.
var ErrRetainedClosed = errors.New("codemode: retained sandbox closed")

// Retained is the sandbox of an Execute request with RetainHandles, kept
// alive after Execute returned: its timers keep firing (each firing, and
// each Call, under a fresh Limits.Deadline), tool calls made from it meet
// [MsgExecutionCompleted], and the host can call the functions the program
// passed to its tools. It closes on Close, after the executor's retain idle
// time without a Call, when code it runs is killed, or when the executor
// closes. Its methods are safe for concurrent use; calls run one at a time.
// A nil *Retained (ExecuteResult.Retained of a request without
// RetainHandles) acts as one already closed: Call and Err give an error
// matching ErrRetainedClosed, Done is closed, Close and Logs do nothing.
type Retained struct {
	ex   *Executor
	name string
	smap sourceMap // the program's: for the positions in errors
	caps *capTable
	slot *slot
	reqs chan retainedReq
	quit chan struct{}
	done chan struct{} // closed once the sandbox is gone
	stop sync.Once

	err error // why it closed; set before done is closed

	backend RetainedBackend // a sandbox kept elsewhere (NewRetained), or nil
}

// RetainedBackend is a retained sandbox kept somewhere else — the daemon of
// package github.com/codemode-go/codemode/remote — behind a [Retained]
// ([NewRetained]); its methods are Retained's.
type RetainedBackend interface {
	Call(ctx context.Context, h Handle, args []any) (any, error)
	Logs() []string
	Close() error
	Done() <-chan struct{}
	Err() error
}

// NewRetained returns a Retained served by b, for a [Runner] whose
// sandboxes live elsewhere.
func NewRetained(b RetainedBackend) *Retained { return &Retained{backend: b} }

type retainedReq struct {
	logs     bool // hand over the logs instead of calling
	handle   float64
	args     []byte    // NUL-terminated argument array
	deadline time.Time // when the call times out
	budget   time.Duration
	reply    chan retainedReply
}

type retainedReply struct {
	value any
	logs  []string
	err   error
}

// retain hands slot s, holding a settled retained sandbox, to a new
// Retained and its loop goroutine.
func (e *Executor) retain(s *slot, name string, smap sourceMap, caps *capTable) *Retained {
	e.slots.detach(s)
	r := &Retained{ex: e, name: name, smap: smap, caps: caps, slot: s, reqs: make(chan retainedReq),
		quit: make(chan struct{}), done: make(chan struct{})}
	e.retained.Add(1)
	go r.loop(int64(C.bridge_slot_wait(s.c)))
	return r
}

// Call invokes the function behind h with args (encoded by the codec:
// []byte crosses as a Uint8Array, a Handle as its function) and returns its
// result, awaited if it is a promise, decoded by [ParseForDispatch].
//
// Each call has a fresh Limits.Deadline (or ctx's deadline, if sooner).
// Failures are [*ExecError] values: a throw is kind js (capability when a
// host call's failure escaped); a promise still pending at the deadline is
// kind timeout, and one that can never settle (no timer left to fire) is
// kind pending_promise at once; the sandbox lives on after either. Code
// that runs past the deadline or the memory limit is killed, and so is the
// sandbox: kind timeout or memory_exceeded, matching [ErrRetainedClosed]
// as well. A cancelled ctx gives kind internal matching context.Canceled;
// a sandbox that closed earlier gives an error matching ErrRetainedClosed.
func (r *Retained) Call(ctx context.Context, h Handle, args ...any) (any, error) {
	if r == nil {
		return nil, errNilRetained
	}
	if ctx == nil {
		return nil, nilContext(r.name)
	}
	if args == nil {
		args = []any{}
	}
	if r.backend != nil {
		return r.backend.Call(ctx, h, args)
	}
	argsJSON, err := StringifyForDispatch(args)
	if err != nil {
		return nil, fmt.Errorf("codemode: retained call: %w", err)
	}
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, contextError(r.name, err)
	}
	deadline, budget := runDeadline(ctx, start, r.ex.limits.Deadline)
	rep, err := r.request(ctx, retainedReq{handle: h.id, args: cString(stringBytes(argsJSON)), deadline: deadline,
		budget: budget})
	if err != nil {
		return nil, err
	}
	return rep.value, rep.err
}

// Logs returns the console lines the sandbox wrote since Execute returned
// or since the last Logs.
func (r *Retained) Logs() []string {
	if r == nil {
		return nil
	}
	if r.backend != nil {
		return r.backend.Logs()
	}
	rep, err := r.request(context.Background(), retainedReq{logs: true})
	if err != nil {
		return nil
	}
	return rep.logs
}

// Close frees the sandbox. It is idempotent and returns nil.
func (r *Retained) Close() error {
	if r == nil {
		return nil
	}
	if r.backend != nil {
		return r.backend.Close()
	}
	r.stop.Do(func() { close(r.quit) })
	<-r.done
	return nil
}

// Done is closed once the sandbox is gone; Err then says why.
func (r *Retained) Done() <-chan struct{} {
	if r == nil {
		return closedChan
	}
	if r.backend != nil {
		return r.backend.Done()
	}
	return r.done
}

// Err returns why the sandbox closed, or nil while it lives.
func (r *Retained) Err() error {
	if r == nil {
		return errNilRetained
	}
	if r.backend != nil {
		return r.backend.Err()
	}
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

func (r *Retained) request(ctx context.Context, req retainedReq) (retainedReply, error) {
	req.reply = make(chan retainedReply, 1)
	select {
	case r.reqs <- req:
	case <-r.done:
		return retainedReply{}, r.err
	case <-ctx.Done():
		return retainedReply{}, r.contextEnded(ctx, req)
	}
	select {
	case rep := <-req.reply:
		return rep, nil
	case <-ctx.Done():
		return retainedReply{}, r.contextEnded(ctx, req)
	}
}

// contextEnded is the error of a call whose caller's context ended first.
func (r *Retained) contextEnded(ctx context.Context, req retainedReq) error {
	if ctx.Err() == context.DeadlineExceeded {
		return &ExecError{Kind: KindTimeout, Name: r.name, DeadlineMS: budgetMS(req.budget)}
	}
	return internalError(r.name, ctx.Err())
}

// closedError explains the end of a retained sandbox.
func closedError(why string) error { return fmt.Errorf("%w: %s", ErrRetainedClosed, why) }

// errNilRetained is the Call and Err of a nil *Retained.
var errNilRetained = closedError("no sandbox was retained (a nil *Retained)")

// closedChan is the Done of a nil *Retained.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// loop owns the slot from Execute's return until the sandbox is gone: it
// fires timers, runs Calls and answers them as their promises settle, time
// out, or are found unable to settle.
func (r *Retained) loop(waitNs int64) {
	e, s := r.ex, r.slot
	pending := map[C.uint32_t]retainedReq{}
	var logs []string
	var why error = closedError("closed")
	defer func() {
		var out C.bridge_out
		C.bridge_slot_close(s.c, &out)
		C.bridge_out_free(&out)
		s.free()
		e.memory.released()
		r.err = why
		for _, req := range pending {
			req.reply <- retainedReply{err: why}
		}
		close(r.done)
		e.retained.Done()
	}()
	budget := C.int64_t(e.limits.Deadline)
	idle := time.NewTimer(e.retainIdle)
	defer idle.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// killed ends the sandbox after a kill of code it ran.
	killed := func(st C.int32_t) bool {
		switch st {
		case C.BRIDGE_TIMEOUT, C.BRIDGE_MEMORY, C.BRIDGE_BUDGET, C.BRIDGE_CANCELED, C.BRIDGE_INTERNAL:
			why = r.killError(st)
			return true
		}
		return false
	}
	for {
		// Wake for the next timer or the first call deadline.
		wake, armed := time.Duration(waitNs), waitNs >= 0
		for _, req := range pending {
			if d := max(time.Until(req.deadline), 0); !armed || d < wake {
				wake, armed = d, true
			}
		}
		var fire <-chan time.Time
		if armed {
			timer.Reset(wake)
			fire = timer.C
		}
		var req retainedReq
		fired := false
		select {
		case req = <-r.reqs:
			idle.Reset(e.retainIdle)
			if req.logs {
				var out C.bridge_out
				C.bridge_slot_take_logs(s.c, &out)
				logs = append(logs, readLogs(&out, e.limits.Logs)...)
				C.bridge_out_free(&out)
				req.reply <- retainedReply{logs: logs}
				logs = nil
				waitNs = int64(C.bridge_slot_wait(s.c))
				continue
			}
		case <-fire: // a timer is due, or a call's deadline came
			fired = true
		case <-idle.C:
			why = closedError(fmt.Sprintf("idle for %v", e.retainIdle))
			return
		case <-r.quit:
			return
		case <-e.closing.Done():
			why = closedError("the executor closed")
			return
		}
		// The engine runs from here to the end of the iteration: it takes an
		// execution right, like any run.
		if e.gate.enter(context.Background(), time.Now().Add(365*24*time.Hour), e.closing, true, nil) != nil {
			why = closedError("the executor closed")
			if !fired {
				req.reply <- retainedReply{err: why}
			}
			return
		}
		done := r.advance(pending, req, fired, budget, killed, &why)
		e.gate.leave()
		if done {
			return
		}
		waitNs = int64(C.bridge_slot_wait(s.c))
	}
}

// advance does one iteration's engine work: it starts a call (or fires the
// timers that are due), then answers the calls that settled, timed out or
// can no longer settle. It reports whether the sandbox is gone.
func (r *Retained) advance(pending map[C.uint32_t]retainedReq, req retainedReq, fired bool, budget C.int64_t,
	killed func(C.int32_t) bool, why *error) bool {
	s := r.slot
	if fired {
		st := C.bridge_slot_step(s.c, budget, &s.io.out)
		C.bridge_out_free(&s.io.out)
		if killed(st) {
			return true
		}
	} else {
		var inv C.uint32_t
		st := C.bridge_slot_invoke(s.c, C.int64_t(max(time.Until(req.deadline), 1)), C.double(req.handle),
			(*C.char)(unsafe.Pointer(&req.args[0])), C.size_t(len(req.args)-1), &inv)
		if killed(st) {
			req.reply <- retainedReply{err: *why}
			return true
		}
		pending[inv] = req
	}
	waitNs := int64(C.bridge_slot_wait(s.c))
	for inv, req := range pending {
		var out C.bridge_out
		st := C.bridge_slot_invocation(s.c, inv, &out)
		if st == C.BRIDGE_PENDING {
			// Nothing can settle it once no timer is left (host calls from a
			// retained sandbox never leave it); past its deadline it has had
			// its time.
			var err *ExecError
			switch {
			case !time.Now().Before(req.deadline):
				err = &ExecError{Kind: KindTimeout, Name: r.name, DeadlineMS: budgetMS(req.budget)}
			case waitNs < 0:
				err = &ExecError{Kind: KindPendingPromise, Name: r.name}
			default:
				continue
			}
			C.bridge_slot_invocation_drop(s.c, inv)
			delete(pending, inv)
			req.reply <- retainedReply{err: err}
			continue
		}
		delete(pending, inv)
		rep := r.reply(st, &out)
		C.bridge_out_free(&out)
		req.reply <- rep
		if killed(st) {
			return true
		}
	}
	return false
}

// reply decodes a settled invocation.
func (r *Retained) reply(st C.int32_t, out *C.bridge_out) retainedReply {
	data := C.GoStringN(out.data, C.int(out.size))
	switch st {
	case C.BRIDGE_DONE:
		v, err := ParseForDispatch(data)
		if err != nil {
			return retainedReply{err: fmt.Errorf("codemode: retained call: %w", err)}
		}
		return retainedReply{value: v}
	case C.BRIDGE_THROWN:
		ee := &ExecError{Kind: KindJS, Name: r.name, Message: r.smap.render(data, false)}
		ee.Line, ee.Column = r.smap.placed(ee.Message)
		return retainedReply{err: ee}
	case C.BRIDGE_CAPABILITY:
		ee := &ExecError{Kind: KindCapability, Name: r.name, Capability: capabilityName(r.caps, out), Message: data}
		ee.Line, ee.Column = r.smap.site(int(out.cap_site), ee.Capability)
		return retainedReply{err: ee}
	default:
		return retainedReply{err: r.killError(st)}
	}
}

// killError is the error of a kill that ended the sandbox: it matches
// ErrRetainedClosed as well as its kind's sentinels.
func (r *Retained) killError(st C.int32_t) *ExecError {
	lim := r.ex.limits
	switch st {
	case C.BRIDGE_TIMEOUT:
		return &ExecError{Kind: KindTimeout, Name: r.name, DeadlineMS: lim.Deadline.Milliseconds(), cause: ErrRetainedClosed}
	case C.BRIDGE_MEMORY:
		return &ExecError{Kind: KindMemoryExceeded, Name: r.name, LimitBytes: int64(lim.Memory), cause: ErrRetainedClosed}
	case C.BRIDGE_BUDGET:
		err := r.ex.spent(r.name)
		err.cause = errors.Join(ErrMemoryBudget, ErrRetainedClosed)
		return err
	case C.BRIDGE_CANCELED:
		return internalError(r.name, errors.Join(ErrClosed, ErrRetainedClosed))
	default:
		return &ExecError{Kind: KindInternal, Message: "codemode: " + r.name + ": the sandbox failed", cause: ErrRetainedClosed}
	}
}
