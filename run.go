package codemode

/*
#include "bridge.h"
*/
import "C"

import (
	"context"
	"time"
)

// run.go: the life of one run, in one room. Every entry point (Run,
// Execute, Call, Register, Resume, a session's run, and the global code the
// tests run) shapes a runInput on its stack and hands it to Executor.do,
// which takes it through six stages, in order:
//
//	admit    may it begin: the executor's life, the caller's context,
//	         governance (a fresh governed side, or Resume's replay), the
//	         deadline it keeps from the entry's call on
//	prepare  what it runs: the source keyed, then the cached bytecode or
//	         the text shaped, stripped, instrumented and wrapped
//	open     where it runs: a sandbox (the pool's, or its session's), the
//	         grants and the network it is given, the memory budget's
//	         admission (a refusal waits and tries again), an execution
//	         right, the first slice of C
//	step     the event loop, until the program settles or its deadline or
//	         its context ends it
//	settle   what happened: the outcome and its error, governance's pause,
//	         the bytecode for the cache, the stats
//	close    everything given back, in the reverse order it was taken
//
// The policies are the stages' collaborators, called from one place each:
// governance (govern, in admit; governedOutcome, in settle), determinism
// and grants (read from the context in admit and open), the queue clock
// (open and step), the memory budget (open: waitMemory, turnedAway), the
// pool and retained handles (open, close), the cache and the positions
// (prepare, settle). RATIONALE.md, "The run's path", says why the stages
// are cut where they are.

// runInput is what an entry point gives the run's path besides its
// program: how the stages treat it. The program (on the entry's stack) is
// an argument of its own: escape analysis does not tell one field of a
// struct from another, and some of these reach the heap, which would take
// the program with them on every run.
type runInput struct {
	start time.Time // when the entry was called: the deadline counts from here
	// unit is how prepare readies the source; unitNone: there is nothing
	// to ready (a registered tool's pinned bytecode, or global code).
	unit unitKind
	// mode is what a governed run records in its continuation as its
	// kind (modeRun, modeExecute; its code and providers are the
	// program's); "": the run is not governed (Call, Register).
	mode string
	// ownNetwork: an Execute request brought its own network.
	ownNetwork bool
	// resumed is Resume's governed side (its replay and decision), which
	// the run takes instead of a fresh one.
	resumed *govRun
	// cacheBC hands the bytecode the run compiles to the cache (Run,
	// Execute); Register pins it itself.
	cacheBC bool
	// closedName is what an executor that is closed attributes its
	// refusal to, when it is not the program's name.
	closedName string
	// typeCheck is the run's type check mode (resolved: off, warn or
	// enforce).
	typeCheck TypeCheck
	// session is the session the run is one of (its sandbox is the
	// session's), or nil: a fresh sandbox from the pool.
	session *Session
}

// errSessionCaps is why a session's run is refused capabilities other
// than its sandbox's.
const errSessionCaps = "the session's sandbox was opened with other capabilities: its first run's grants, network " +
	"and the executor's capabilities then are the session's (open a new session for others)"

// run is one run on its way through the stages; it lives on do's stack.
// It holds no pointer to a stack value (its input is the stages'
// argument): escape analysis does not tell its fields apart, and some of
// them (the context, the clock) reach the heap.
type run struct {
	ex       *Executor
	ctx      context.Context
	deadline time.Time
	budget   time.Duration
	clk      *clock // the queue clock (WithQueueTimeout), or nil: the call's fixed one
	locked   bool   // holds the executor's life
	key      [32]byte
	release  func() // drops the source's instrumentation, once compiled
	s        *slot
	c        *call
	caps     *capTable
	stop     func() bool // the cancel's AfterFunc, while the slot is bound
	kept     bool        // the sandbox outlives the run (a retained handle)
	bc       []byte      // the bytecode the first slice compiled
	entryBC  []byte      // and the entry's
}

// do takes a run through its stages and returns its outcome.
func (ex *Executor) do(ctx context.Context, p *program, in runInput) (o outcome) {
	r := run{ex: ex, ctx: ctx}
	defer r.close(p, &in, &o)
	if o.err = r.admit(p, &in); o.err != nil {
		o.refused = true
		return o
	}
	if o.err = r.prepare(p, &in); o.err != nil {
		o.refused = true
		return o
	}
	var diagnostics []TypeDiagnostic
	if in.typeCheck > TypeCheckOff {
		if diagnostics, o.err = r.check(p, in.typeCheck); o.err != nil {
			o.refused = true
			return o
		}
	}
	o.cached = p.bc != nil
	st, err := r.open(p, &in)
	if err != nil {
		o.err = err
		return o
	}
	if st == C.BRIDGE_PENDING {
		st = r.step()
	}
	r.settle(&in, st, &o)
	o.diagnostics = diagnostics
	return o
}

// check is a type check of the program before anything of it runs, in
// the run's mode: against the capabilities it is granted and its
// providers (typecheck.go).
func (r *run) check(p *program, mode TypeCheck) ([]TypeDiagnostic, *ExecError) {
	ex := r.ex
	caps := ex.caps.Load()
	if names, ok := grantsOf(r.ctx); ok {
		caps = ex.grantTable(caps, names)
	}
	return ex.typeCheck(r.ctx, p, mode, caps)
}

// admit decides whether the run may begin: the executor is open, the
// caller's context is live, the run's governed side (a fresh one under
// the executor's Governance, which makes a run that may pause
// deterministic; or Resume's). It fixes the deadline.
func (r *run) admit(p *program, in *runInput) *ExecError {
	ex := r.ex
	if !ex.enter() {
		name := p.name
		if in.closedName != "" {
			name = in.closedName
		}
		return internalError(name, ErrClosed)
	}
	r.locked = true
	if err := r.ctx.Err(); err != nil {
		return contextError(p.name, err)
	}
	switch {
	case in.resumed != nil:
		p.gov = in.resumed
	case in.session != nil:
		// A session's run is recorded (its journal replays it), and
		// governed as any run when the executor has a Governance.
		origin := continuationBody{Mode: in.mode, Code: p.smap.src, Providers: p.providers, OwnNetwork: in.ownNetwork,
			Session: in.session.id, SessionRuns: len(in.session.journal)}
		if ex.gov != nil && in.mode != "" {
			r.ctx, p.gov = ex.govern(r.ctx, origin)
		} else {
			p.gov = newGovRun(&sessionRecorder, origin)
		}
	case in.mode != "" && ex.gov != nil:
		r.ctx, p.gov = ex.govern(r.ctx, continuationBody{Mode: in.mode, Code: p.smap.src, Providers: p.providers,
			OwnNetwork: in.ownNetwork})
	}
	if p.gov != nil && p.mode == C.BRIDGE_MODE_EXECUTE && ex.gov != nil && ex.gov.mayPause() {
		if why := undeclarable(p.providers); why != "" {
			return &ExecError{Kind: KindInvalidArgs, Name: p.name, Reason: why}
		}
	}
	r.deadline, r.budget = runDeadline(r.ctx, in.start, ex.limits.Deadline)
	return nil
}

// prepare readies what the run executes: its source's key, and the cached
// bytecode or the text to compile (source.go); an Execute program's entry
// from the cache too.
func (r *run) prepare(p *program, in *runInput) *ExecError {
	ex := r.ex
	if in.unit == unitNone {
		if p.bc != nil {
			ex.cache.hits.Add(1) // a registered tool's pinned bytecode
		}
		return nil
	}
	key, release, err := ex.load(r.ctx, r.deadline, r.budget, p, in.unit)
	if err != nil {
		return err
	}
	r.key, r.release = key, release
	if p.mode == C.BRIDGE_MODE_EXECUTE {
		if bc, ok := ex.cache.get(p.unitKey); ok {
			p.entryBC = bc
		} else {
			p.wantEntryBC = true
		}
	}
	return nil
}

// open gets the run a sandbox and runs its first slice. A memory budget
// that has no room for the run refuses it before any of its code ran: the
// sandbox goes back, the run waits for memory (waitMemory) and tries
// again, or is turned away.
func (r *run) open(p *program, in *runInput) (C.int32_t, *ExecError) {
	ex := r.ex
	if ex.queueTimeout > 0 {
		r.clk = newClock(r.ctx, r.deadline, ex.queueTimeout)
	}
	for tries := 1; ; tries++ {
		st, again, err := r.try(p, in)
		if !again {
			return st, err
		}
		r.unbind(p, in, nil)
		if err := ex.waitMemory(r.ctx, r.deadline, r.clk, tries); err != nil {
			return 0, ex.turnedAway(r.ctx, p.name, err)
		}
	}
}

// try is one of open's tries: a sandbox from the pool, bound to the run
// (its program, its capabilities, its cancel), an execution right, and the
// first slice. again says the memory budget refused it unstarted.
func (r *run) try(p *program, in *runInput) (st C.int32_t, again bool, err *ExecError) {
	ex, ctx := r.ex, r.ctx
	until, queue := r.deadline, false
	if r.clk != nil {
		until, queue = r.clk.waitUntil()
	}
	sess := in.session
	var s *slot
	if sess != nil {
		s = sess.slot.Load()
	}
	if s == nil {
		var noSlot *errNoSlot
		s, noSlot = ex.slots.get(ctx, until, ex.closing.Done(), r.clk)
		r.clk.start()
		if noSlot != nil {
			cause := noSlot.cause
			if noSlot.timeout && queue {
				cause = ex.queueTimeoutError()
			}
			return 0, false, busyError(ctx, p.name, cause)
		}
		if sess != nil {
			ex.slots.detach(s) // the session's from now on
			sess.slot.Store(s)
		}
	}
	caps := ex.caps.Load()
	if names, ok := grantsOf(ctx); ok {
		caps = ex.grantTable(caps, names)
	}
	if p.outbound != nil {
		caps = ex.fetchTable(caps)
		ctx = context.WithValue(ctx, outboundKey{}, p.outbound)
	}
	if sess != nil {
		// The session's sandbox has the capabilities it was opened with:
		// a run granted others cannot run in it.
		if sess.caps == nil || C.bridge_slot_alive(s.c) == 0 {
			sess.caps = caps
		} else if caps != sess.caps {
			return 0, false, &ExecError{Kind: KindInvalidArgs, Name: p.name, Reason: errSessionCaps}
		}
	}
	r.s, r.caps = s, caps
	s.gen++
	s.prog = *p // the caller's program stays on its stack
	sp := &s.prog
	s.run = call{ex: ex, prog: sp, name: sp.name, slot: s, start: in.start, clock: r.clk, budget: r.budget,
		caps: caps, ctx: ctx, fixed: clock{deadline: r.deadline}}
	c := &s.run
	if c.clock == nil {
		c.clock = &c.fixed
	}
	s.call, r.c = c, c
	if ctx.Done() != nil {
		s.cancel.Add(1)
		gen := s.gen
		r.stop = context.AfterFunc(ctx, func() {
			C.bridge_slot_cancel(s.c, C.int64_t(gen))
			s.cancel.Done()
		})
	}
	if err := c.enter(); err != nil {
		return 0, false, busyError(ctx, p.name, err) // it never started
	}
	s.io.cfg = c.bridgeConfig()
	st = slotRun(s, sp)
	c.leave()
	if st == C.BRIDGE_BUDGET && s.io.out.unstarted != 0 {
		C.bridge_out_free(&s.io.out)
		return 0, true, nil
	}
	// Bytecode comes with the first slice; the loop's steps reuse out.
	r.bc = takeBytecode(&s.io.out.bc, &s.io.out.bc_len)
	r.entryBC = takeBytecode(&s.io.out.entry_bc, &s.io.out.entry_bc_len)
	return st, false, nil
}

// step runs the event loop until the program settles or is ended.
func (r *run) step() C.int32_t { return r.c.loop(r.c.ctx) }

// settle turns the run's end into its outcome: the value or the error
// (with its positions, stats and logs), a governed run's pause, the
// bytecode it compiled, and whether its sandbox outlives it.
func (r *run) settle(in *runInput, st C.int32_t, o *outcome) {
	c, s := r.c, r.s
	cached := o.cached
	*o = c.finish(c.ctx, st, &s.io.out)
	o.cached = cached
	if c.prog.gov != nil {
		c.governedOutcome(c.ctx, o)
	}
	if in.cacheBC {
		if r.bc != nil {
			r.ex.cache.put(r.key, r.bc)
			if in.unit == unitSession || in.unit == unitSessionProgram {
				r.ex.cache.put(globalsKey(r.key), c.prog.prologue)
			}
		}
		if r.entryBC != nil {
			r.ex.cache.put(c.prog.unitKey, r.entryBC)
		}
	} else {
		o.bytecode = r.bc
	}
	o.stats.Elapsed = time.Since(in.start)
	r.kept = c.prog.retain && C.bridge_slot_alive(s.c) != 0
}

// unbind gives back the sandbox the run holds, in the reverse order it was
// bound: the cancel (waited for, so the slot outlives one in flight), the
// host side (every handler's context ended; un-awaited calls have
// started), the slot's binding to the run, then the slot itself: to the
// pool, or, when the run's sandbox is kept, to a retained handle in o.
func (r *run) unbind(p *program, in *runInput, o *outcome) {
	s := r.s
	if s == nil {
		return
	}
	if r.stop != nil {
		if r.stop() {
			s.cancel.Done()
		}
		s.cancel.Wait()
		r.stop = nil
	}
	if c := r.c; c != nil && c.host != nil {
		c.host.close()
		if o != nil {
			o.effects = c.host.effects(monoNow())
		}
	}
	s.call, s.run, s.prog = nil, call{}, program{}
	switch {
	case in.session != nil:
		// The session keeps its slot.
	case r.kept && o != nil:
		o.retained = r.ex.retain(s, p.name, p.smap, r.caps)
	default:
		r.ex.slots.put(s)
	}
	r.s, r.c, r.kept = nil, nil, false
}

// close ends the run: the sandbox back (or kept), the source's
// instrumentation dropped, the executor's life let go.
func (r *run) close(p *program, in *runInput, o *outcome) {
	r.unbind(p, in, o)
	if o.err != nil && o.effects != nil {
		o.effects.End = o.err.Kind
	}
	if r.release != nil {
		r.release()
	}
	if r.locked {
		r.ex.life.RUnlock()
	}
}
