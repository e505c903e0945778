package codemode

/*
#include "bridge.h"
*/
import "C"

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/internal/jspos"
)

// Session is a sandbox whose realm outlives a run: each run in it sees the
// globals and the top-level declarations of the runs before it, as a REPL
// does. Open one with [Executor.NewSession].
//
// What a later run sees: what the earlier runs declared at the top level
// of their bodies (`let`, `const`, `var`, `function`, `class`) and what
// they put on the global object. A name declared again fails the run
// before any of it runs, as Node's REPL does for an input that awaits: a
// `let`, `const` or `class` name with a SyntaxError, while a `var` or a
// function name may be declared again (the new function replaces the
// old). As in Node's REPL, a `const` so declared may be assigned by a
// later run, and a name read before its declaration within its run reads
// undefined. Where Node's REPL and a script differ, a session is a
// script: a `var` declared again without an initializer keeps its value
// (Node's REPL resets it to undefined). TestSessionMatchesNodeREPL types
// the same inputs into both. What a run declares below its top level (in
// a block, a loop's head, a nested function) is its own, as is everything
// of a program written as one arrow or function (it is called, not
// declared).
//
// Each run is a transaction: one that fails in any way (a throw, its
// deadline, the memory limit, a cancel, a result past the payload limit,
// a promise that can never settle) leaves the session exactly as it was
// before it — no half-built object, no timer it set — and the next run
// goes on from there. A run that succeeds keeps what it built, and drops
// only what belongs to it alone: the timers it left and the host calls it
// did not await (their promises never settle).
//
// Each run keeps its own deadline, stats and outcome, as a fresh run
// does; the session's heap is bounded by the executor's memory limit. A
// session's runs are deterministic (a fresh seed for Math.random, and a
// virtual clock from the run's start: see [Determinism]), unless the
// run's context fixes them. Runs in one session take turns; sessions run
// side by side like any runs. A session holds a sandbox of its own, apart
// from the executor's pool, until [Session.Close] or the executor's
// Close.
type Session struct {
	ex *Executor
	id string     // random: a paused run's continuation names it
	mu sync.Mutex // the session's turn: one run (or seal, eviction, rest) at a time
	// evicted: the sandbox was given back for memory; the journal makes
	// it again on the next run. expired: WithSessionTTL ended it.
	evicted, expired bool
	rested           bool          // the checkpoint's pages went back since the last run
	used             atomic.Uint64 // when it last ran, on the executor's session clock (LRU)
	timer            *time.Timer   // rest, then TTL
	// journal is every run the session kept, in order: what Seal writes
	// and a restore replays.
	journal []sessionRun
	// slot is the session's, out of the pool; nil until its first run.
	// Atomic: Close cancels the run in progress through it.
	slot   atomic.Pointer[slot]
	closed bool
	caps   *capTable // the capabilities the session's sandbox was opened with
}

// ErrSessionClosed matches the error of a run in a closed session, and
// ErrSessionExpired (which matches ErrSessionClosed too) that of one
// WithSessionTTL ended.
var (
	ErrSessionClosed  = errors.New("codemode: the session is closed")
	ErrSessionExpired = fmt.Errorf("%w: it was idle past its TTL (WithSessionTTL)", ErrSessionClosed)
)

// NewSession opens a session on the executor. The sandbox is made by its
// first run.
func (e *Executor) NewSession() (*Session, error) {
	if e.isClosed() {
		return nil, internalError(RunJSToolName, ErrClosed)
	}
	s := &Session{ex: e, id: newContinuationID()}
	return s, e.sessions.add(s)
}

// add registers an open session; an error matching ErrClosed once the
// executor is closed.
func (ss *sessionSet) add(s *Session) error {
	e := s.ex
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if e.isClosed() {
		return internalError(RunJSToolName, ErrClosed)
	}
	if ss.all == nil {
		ss.all = make(map[*Session]struct{})
	}
	ss.all[s] = struct{}{}
	return nil
}

// WithSessionTTL ends a session idle for ttl: its sandbox and journal are
// freed, and its next run fails with an error matching
// [ErrSessionExpired]. Zero (the default) keeps sessions until they are
// closed. A negative ttl is refused.
func WithSessionTTL(ttl time.Duration) Option {
	return func(c *config) error {
		if ttl < 0 {
			return fmt.Errorf("%w: session TTL %v is negative", ErrInvalidLimits, ttl)
		}
		c.sessionTTL = ttl
		return nil
	}
}

// sessionSet is an executor's open sessions, which its Close ends.
type sessionSet struct {
	mu    sync.Mutex
	all   map[*Session]struct{}
	clock atomic.Uint64 // orders the sessions' runs (LRU)
}

// evict gives back the sandboxes of idle sessions for memory, the least
// recently used first, until need bytes of charge came back (need <= 0:
// every idle one). It reports what came back. A session in use, or being
// sealed, is skipped: its turn is taken.
func (ss *sessionSet) evict(need int64) int64 {
	ss.mu.Lock()
	idle := make([]*Session, 0, len(ss.all))
	for s := range ss.all {
		if s.slot.Load() != nil {
			idle = append(idle, s)
		}
	}
	ss.mu.Unlock()
	slices.SortFunc(idle, func(a, b *Session) int { return cmp.Compare(a.used.Load(), b.used.Load()) })
	var got int64
	for _, s := range idle {
		if need > 0 && got >= need {
			break
		}
		if !s.mu.TryLock() {
			continue
		}
		if sl := s.slot.Load(); sl != nil && !s.closed {
			got += sl.charged()
			s.drop()
			s.evicted = true
		}
		s.mu.Unlock()
	}
	return got
}

// idleCharge is what the budget charges idle sessions.
func (ss *sessionSet) idleCharge() int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var n int64
	for s := range ss.all {
		if sl := s.slot.Load(); sl != nil {
			n += sl.charged()
		}
	}
	return n
}

// remove forgets s (closed).
func (ss *sessionSet) remove(s *Session) {
	ss.mu.Lock()
	delete(ss.all, s)
	ss.mu.Unlock()
}

// cancelAll stops the runs in progress in every session (Close).
func (ss *sessionSet) cancelAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for s := range ss.all {
		if sl := s.slot.Load(); sl != nil {
			C.bridge_slot_cancel(sl.c, -1)
		}
	}
}

// closeAll frees every session's sandbox (Close, once no run is in
// progress).
func (ss *sessionSet) closeAll() {
	ss.mu.Lock()
	all := ss.all
	ss.all = nil
	ss.mu.Unlock()
	for s := range all {
		s.free()
	}
}

// Run runs script in the session as [Executor.Run] runs it in a fresh
// sandbox, with the session's globals and declarations in scope (see
// [Session]). Its failures are Run's; a run in a closed session fails
// with an error matching [ErrSessionClosed], and one in a closed
// executor with [ErrClosed].
func (s *Session) Run(ctx context.Context, script string) (*Result, error) {
	if ctx == nil {
		return nil, nilContext(RunJSToolName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runObserved(ctx, script, nil)
}

// runObserved is Run, or Resume's run of a Run program (resumed set),
// told to the Observer; the caller has the session's turn.
func (s *Session) runObserved(ctx context.Context, script string, resumed *govRun) (*Result, error) {
	return s.ex.observeRun(ctx, resumed, s, func(ctx context.Context) (*Result, error, bool) {
		return s.run(ctx, script, resumed)
	})
}

// run is Run's input to the run's path, or a resumed or replayed one's
// (resumed set).
func (s *Session) run(ctx context.Context, script string, resumed *govRun) (_ *Result, _ error, cached bool) {
	e := s.ex
	start := time.Now()
	p := &program{name: RunJSToolName, file: scriptFile,
		smap:     sourceMap{file: scriptFileName, head: runHead, shape: jspos.SessionBody, src: script, ts: e.ts, mods: e.modules},
		outbound: e.outbound, session: true}
	in := runInput{start: start, unit: unitSession, mode: modeRun, resumed: resumed, cacheBC: true, session: s}
	if resumed == nil {
		in.typeCheck = e.typeCheckMode(ctx, TypeCheckDefault)
	}
	o := s.do(ctx, p, in)
	if o.refused {
		return nil, o.err, false
	}
	res := &Result{Value: o.value, Logs: o.logs, Stats: o.stats, Paused: o.paused, Diagnostics: o.diagnostics,
		Effects: o.effects}
	if o.err != nil {
		return res, o.err, o.cached
	}
	return res, nil, o.cached
}

// Call calls a registered tool (see [Executor.Call]) in the session's
// sandbox: the tool sees the session's globals, and a call that succeeds
// keeps what the tool left on them.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if ctx == nil {
		return nil, nilContext(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.call(ctx, name, args, nil)
}

// call is Call, or a replayed one (resumed set).
func (s *Session) call(ctx context.Context, name string, args json.RawMessage, resumed *govRun) (json.RawMessage, error) {
	e := s.ex
	start := time.Now()
	t, err := e.tool(name, args)
	if err != nil {
		return nil, err
	}
	p := &program{name: name, mode: C.BRIDGE_MODE_TOOL, file: toolFile, smap: toolMap(t.source, e.ts),
		src: noSource, bc: t.bc, args: cString(trimArgs(args)), session: true}
	o := s.do(ctx, p, runInput{start: start, resumed: resumed, session: s})
	if o.err != nil {
		return nil, o.err
	}
	return o.value, nil
}

// Execute runs a request in the session as [Executor.Execute] runs it in a
// fresh sandbox, with the session's globals in scope. The providers (and
// the dispatch) are the request's, and may differ from run to run: they
// are bound for this run only, as the program's parameters, so a helper
// an earlier run declared that calls a provider reaches the provider
// object it closed over, whose calls go to the dispatch of the run in
// progress when it is called. A program written as statements keeps its
// top-level declarations as Run does in a session; one written as a
// function keeps only what it puts on globalThis. RetainHandles is
// refused: the session keeps its sandbox.
func (s *Session) Execute(ctx context.Context, req Request) ExecuteResult {
	if ctx == nil {
		return refusedResult(nilContext(ExecuteName))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ex.executeObserved(ctx, req, nil, s)
}

// do runs in on the run's path; the caller has the session's turn (s.mu).
// An evicted session is made again from its journal first.
func (s *Session) do(ctx context.Context, p *program, in runInput) outcome {
	if s.closed {
		err := ErrSessionClosed
		if s.expired {
			err = ErrSessionExpired
		}
		return outcome{err: internalError(p.name, err), refused: true}
	}
	if s.evicted {
		if err := s.rebuild(ctx); err != nil {
			return outcome{err: err, refused: true}
		}
	}
	d, ok := determinismOf(ctx)
	if !ok {
		var b [8]byte
		rand.Read(b[:])
		d.Seed = binary.LittleEndian.Uint64(b[:])
	}
	if !ok || d.Clock.IsZero() {
		d.Clock = time.Now().UTC()
		ctx = WithDeterminism(ctx, d)
	}
	o := s.ex.do(ctx, p, in)
	if o.err == nil && o.paused == nil && !o.refused {
		s.keep(p, in, d, ctx)
	} else if o.status == C.BRIDGE_DONE && !o.refused {
		// C kept the run (it ended well there) and Go failed it (a
		// resumed run that diverged): the sandbox holds what the journal
		// does not, so it goes, and the journal makes it again.
		s.drop()
		s.evicted = true
	}
	s.used.Store(s.ex.sessions.clock.Add(1))
	s.rested = false
	s.idle()
	return o
}

// rebuild makes an evicted session's sandbox again: its journal replays
// (as RestoreSession's does), no tool called again.
func (s *Session) rebuild(ctx context.Context) *ExecError {
	journal := s.journal
	s.journal, s.evicted = nil, false
	for i := range journal {
		if err := s.replay(ctx, &journal[i]); err != nil {
			s.journal, s.evicted = journal, true
			s.drop()
			var ee *ExecError
			if !errors.As(err, &ee) {
				ee = internalError(RunJSToolName, err)
			}
			return &ExecError{Kind: KindDiverged, Name: ee.Name,
				Message: fmt.Sprintf("the evicted session did not replay (run %d): %s", i+1, ee.Error())}
		}
	}
	return nil
}

// drop frees the session's slot (its sandbox and its checkpoint); the
// caller has the session's turn.
func (s *Session) drop() {
	if sl := s.slot.Load(); sl != nil {
		var out C.bridge_out
		C.bridge_slot_close(sl.c, &out)
		C.bridge_out_free(&out)
		// Forgotten under the set's lock: cancelAll, idleCharge and Close
		// read the slot under it, never one being freed.
		ss := &s.ex.sessions
		ss.mu.Lock()
		s.slot.Store(nil)
		ss.mu.Unlock()
		sl.free()
		s.caps = nil
		s.ex.memory.released()
	}
}

// idle arms the session's timer for its next rest (the checkpoint given
// back) and, with WithSessionTTL, its end; the caller has the turn.
func (s *Session) idle() {
	after := sessionRest
	if ttl := s.ex.sessionTTL; ttl > 0 && (s.rested || ttl < after) {
		after = ttl
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(after, s.wake)
	} else {
		s.timer.Reset(after)
	}
}

// sessionRest is how long a session is idle before its checkpoint's pages
// go back.
const sessionRest = time.Second

// wake is the session's idle timer: the first time it rests the session,
// then (WithSessionTTL) it ends it. A session in use is left alone.
func (s *Session) wake() {
	if !s.mu.TryLock() {
		// In use (a run re-arms it as it ends; a seal or a look does
		// not): try again shortly.
		s.timer.Reset(50 * time.Millisecond)
		return
	}
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	ttl := s.ex.sessionTTL
	if !s.rested {
		if sl := s.slot.Load(); sl != nil {
			sl.rest()
			s.ex.memory.released()
		}
		s.rested = true
		if ttl > sessionRest {
			s.timer.Reset(ttl - sessionRest)
			return
		}
	}
	if ttl > 0 {
		s.ex.sessions.remove(s)
		s.expired, s.closed = true, true
		s.drop()
		s.journal = nil
	}
}

// keep appends a run the session kept to its journal: its program, the
// seed and clock it ran with, its grants, and every host call it made
// with its answer.
func (s *Session) keep(p *program, in runInput, d Determinism, ctx context.Context) {
	e := sessionRun{Mode: in.mode, Code: p.smap.src, Providers: p.providers, Seed: d.Seed, Clock: d.Clock}
	if in.mode == "" {
		e.Mode, e.Code, e.Tool, e.Args = modeCall, "", p.name, string(bytes.TrimSuffix(p.args, []byte{0}))
	}
	if names, ok := grantsOf(ctx); ok {
		e.Grants = append([]string{}, names...)
	}
	if g := p.gov; g != nil {
		g.mu.Lock()
		e.Calls = append([]callRecord(nil), g.calls...)
		g.mu.Unlock()
	}
	s.journal = append(s.journal, e)
}

// Close ends the session and frees its sandbox; a run in progress ends
// first (Close waits for it). It is idempotent and returns nil.
func (s *Session) Close() error {
	e := s.ex
	e.sessions.mu.Lock()
	_, open := e.sessions.all[s]
	delete(e.sessions.all, s)
	if sl := s.slot.Load(); open && sl != nil {
		C.bridge_slot_cancel(sl.c, -1) // under the set's lock: drop cannot free it meanwhile
	}
	e.sessions.mu.Unlock()
	if !open {
		return nil // closed, or the executor's Close frees it
	}
	s.free()
	return nil
}

// ended reports whether the session was closed (by Close, its TTL or the
// executor's Close).
func (s *Session) ended() bool {
	e := s.ex
	e.sessions.mu.Lock()
	defer e.sessions.mu.Unlock()
	_, open := e.sessions.all[s]
	return !open
}

// free closes the session and frees its slot, once its run (if any) is
// over.
func (s *Session) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.drop()
	s.journal = nil
}

// rest gives a session slot's checkpoint pages back.
func (sl *slot) rest() { C.bridge_slot_rest(sl.c) }
