package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// scriptFileName is the name scripts carry in stack traces.
const scriptFileName = "script.js"

var scriptFile = C.CString(scriptFileName)

// MaxStack returns the largest [Limits].Stack this process accepts: half of
// the smallest thread stack its goroutines may run JavaScript on.
var MaxStack = sync.OnceValue(func() int { return int(C.bridge_max_stack()) })

// stringBytes views s as bytes without a copy, for readers that neither
// keep nor modify them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// slot is a C bridge_slot: the shell a sandbox runs in. gen numbers its
// runs so that a late cancel of a finished run cannot stop the next one.
type slot struct {
	c      *C.bridge_slot
	gen    int64
	handle uintptr // to this slot, for C's host calls (slotTable)
	call   *call   // the run in progress: &run, or nil
	run    call
	prog   program // the run's program, copied here so the caller's stays on its stack

	// io is the scratch C reads and writes, in C memory, allocated once per
	// slot: a Go allocation would escape, and cgo would check it (and the
	// Go memory its config points at) on every call. The Go pointers a run
	// stores in it are pinned for the run.
	io     *slotIO
	cancel sync.WaitGroup // an AfterFunc cancel in flight
}

type slotIO struct {
	cfg C.bridge_config
	out C.bridge_out
}

// alive reports whether the slot holds a live sandbox.
func (s *slot) alive() bool { return C.bridge_slot_alive(s.c) != 0 }

// zeroAbove reports whether the slot's arena is zero above what the sandbox
// in it uses, as far as anything was ever written.
func (s *slot) zeroAbove() bool { return C.bridge_slot_zero_above(s.c) != 0 }

// imageKind names a slot's images, in bridge_internal.h's order.
type imageKind int32

const (
	imagePlain   imageKind = iota // Run and tools
	imageRuntime                  // Execute programs: the runtime too
	imageUnit                     // a unit evaluated: an Execute entry or a tool
)

// imageSize reports the bytes the slot restores per run from its image of
// a kind, 0 if it has none.
func (s *slot) imageSize(kind imageKind) int {
	return int(C.bridge_slot_image_size(s.c, C.int32_t(kind)))
}

// tmplStats is what the executor's current capability set's template of
// one image kind learnt (tests): its verdict and word counts.
type tmplStats struct {
	State                                      int
	Words, Reloc, Self, Hashes, Others, Clones uint64
}

// cloneRuns is how many runs a slot serves on clones of its template
// before it builds an image of its own (tests).
const cloneRuns = C.BRIDGE_CLONE_RUNS

func (ex *Executor) tmplStats(runtime bool) tmplStats {
	var r C.int32_t
	if runtime {
		r = 1
	}
	var st C.bridge_tmpl_stats
	C.bridge_tmpls_stats(ex.caps.Load().tmpls, r, &st)
	return tmplStats{State: int(st.state), Words: uint64(st.words), Reloc: uint64(st.reloc), Self: uint64(st.self),
		Hashes: uint64(st.hashes), Others: uint64(st.others), Clones: uint64(st.clones)}
}

// free releases a slot's C side.
func (s *slot) free() {
	C.bridge_slot_free(s.c)
	C.free(unsafe.Pointer(s.io))
	slots.remove(s.handle)
}

// noSource is the src of a program run from cached bytecode.
var noSource = []byte{0}

// program is what one run executes: for Run a wrapped script, for Execute
// the program unit with its entry source, the runtime and the dispatch.
type program struct {
	name        string // attribution of errors: run_js, execute or a tool's name
	mode        C.int32_t
	file        *C.char    // the name of src in stack traces
	smap        sourceMap  // how the positions in src's errors map to the model's source
	src         []byte     // NUL-terminated; unused when bc is set
	bc          []byte     // src's cached bytecode, or nil
	wantBC      bool       // hand out src's bytecode when compiling it
	entry       []byte     // NUL-terminated entry source (Execute), or nil
	entryBC     []byte     // the entry's cached bytecode, or nil
	providers   []Provider // Execute: the request's (their names, for the dispatch)
	toolNames   *toolNames // Execute: "provider.tool" joined once per provider set
	syncBody    bool       // Run: the body has no await and runs in a plain function (see wrapScript)
	unit        bool       // the entry or the tool may live in the slot's unit image
	unitKey     [32]byte   // which entry or tool
	wantEntryBC bool       // hand out the entry's bytecode when compiling it
	runtime     []byte     // runtime bytecode (Execute), or nil
	args        []byte     // NUL-terminated argument JSON (tool calls)
	selftest    []byte     // NUL-terminated self-test (registration), or nil
	selftestMap *sourceMap // the self-test's positions, with selftest
	prologue    []byte     // NUL-terminated: a session run's declarations (see jspos.SessionBody), or nil
	session     bool       // a session's run: in the session's sandbox, a transaction on it
	dispatch    DispatchFunc
	retain      bool
	outbound    http.RoundTripper // the network the run is granted (fetch), or nil
	gov         *govRun           // the run's governed side, or nil
}

// call is one run of one sandbox: what the Go side needs while C works.
type call struct {
	ex       *Executor
	prog     *program
	name     string
	slot     *slot
	start    time.Time
	clock    *clock        // the deadline: start + Limits.Deadline (plus queue waits, WithQueueTimeout), or the caller's if sooner
	budget   time.Duration // deadline - start: a timeout's deadline_ms
	queueErr error         // the run waited out its queue timeout after it started
	fixed    clock         // the clock of a run without a queue timeout
	caps     *capTable
	ctx      context.Context
	host     *hostRun // made by the run's first host call
	holding  bool     // the run holds an execution right
	started  bool     // it has had one: it goes before runs that have not
}

// runDeadline is when a run that starts at start must end: after the
// executor's deadline, or at the caller's if that comes sooner.
func runDeadline(ctx context.Context, start time.Time, limit time.Duration) (time.Time, time.Duration) {
	deadline := start.Add(limit)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline, max(deadline.Sub(start), 0)
}

// hostRun returns the run's host side, making it on first use.
func (c *call) hostRun() *hostRun {
	if c.host == nil {
		c.host = newHostRun(c.ex, c.caps, c.prog.dispatch, c.ctx, c.clock, c.prog.gov)
		c.host.run = c
	}
	return c.host
}

// outcome is what a finished call hands back.
type outcome struct {
	value    json.RawMessage
	logs     []string
	err      *ExecError
	retained *Retained
	paused   *Paused   // a governed run stopped at a call that needs a decision
	status   C.int32_t // the C status the run ended with
	detail   string    // BRIDGE_COMPILE's error, BRIDGE_NOT_FUNCTION's type
	bytecode []byte    // src's bytecode when wantBC compiled it
	entryBC  []byte    // the entry's when wantEntryBC compiled it
	stats    RunStats  // HostCalls, PeakMemory and Elapsed
	refused  bool      // admit or prepare refused the run: it never opened a sandbox
	// diagnostics are the run's type check's, in warn mode.
	diagnostics []TypeDiagnostic
	cached      bool     // its bytecode came from the cache
	effects     *Effects // the run's ledger; nil: no call
}

// enter takes an execution right for the run, under its deadline, its
// context and the executor's life.
func (c *call) enter() error {
	until, queue := c.clock.waitUntil()
	err := c.ex.gate.enter(c.ctx, until, c.ex.closing, c.started, c.clock)
	c.clock.start()
	if err == errWaitDeadline && queue {
		err = c.ex.queueTimeoutError()
		c.queueErr = err
	}
	if err != nil {
		return err
	}
	c.holding, c.started = true, true
	return nil
}

// enterAtOnce takes an execution right for the run if one is free and no
// run waits for one, on a clock that does not stop (a synchronous call's
// way back into the engine, most of the time): no lock, no clock reading.
func (c *call) enterAtOnce() bool {
	if c.clock.queueMax > 0 || !c.ex.gate.tryEnter() {
		return false
	}
	c.holding, c.started = true, true
	return true
}

// leave gives the run's execution right back, if it holds one (a
// synchronous capability that could not take one back after its handler
// returned to C without it).
func (c *call) leave() {
	if c.holding {
		c.holding = false
		c.ex.gate.leave()
	}
}

// queueTimeoutError is the cause of a run that waited out its queue
// timeout.
func (ex *Executor) queueTimeoutError() error {
	return fmt.Errorf("%w (it waited %v in queues: WithQueueTimeout)", errQueueTimeout, ex.queueTimeout)
}

// errQueueTimeout: a run waited its queue timeout for a sandbox or an
// execution right.
var errQueueTimeout = errors.New("no sandbox or execution right was free within the queue timeout")

// busyError is the error of a run that never started: no sandbox, or no
// execution right, before its deadline or its context ended (ErrBusy,
// with the context's error), or a closed executor.
func busyError(ctx context.Context, name string, cause error) *ExecError {
	switch {
	case errors.Is(cause, ErrClosed):
		return internalError(name, ErrClosed)
	case cause == nil || cause == errWaitDeadline:
		// The caller's deadline may be the run's, and ctx may not have
		// noticed yet.
		cause = ctx.Err()
		if d, ok := ctx.Deadline(); ok && cause == nil && !time.Now().Before(d) {
			cause = context.DeadlineExceeded
		}
		if cause == nil {
			return internalError(name, ErrBusy)
		}
	}
	return internalError(name, errors.Join(ErrBusy, cause))
}

// loop is the run's event loop: between cgo calls it waits for an async
// completion or the next timer, under the deadline, the caller's context
// and the executor's life, then lets C settle and run jobs.
func (c *call) loop(ctx context.Context) C.int32_t {
	s := c.slot
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		wait := time.Until(c.clock.Deadline())
		if wait <= 0 {
			return c.abandon(C.BRIDGE_TIMEOUT)
		}
		if w := time.Duration(s.io.out.wait_ns); w >= 0 && w < wait {
			wait = w
		}
		if c.host != nil && c.host.spinForCompletion(wait) {
			if st, ok := c.ended(ctx); ok {
				return c.abandon(st)
			}
			if st := c.step(c.host.take()); st != C.BRIDGE_PENDING {
				return st
			}
			continue
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		var notify <-chan struct{} // the first host call may come from a timer
		if c.host != nil {
			notify = c.host.notify
		}
		select {
		case <-notify:
		case <-timer.C:
		case <-ctx.Done():
		case <-c.ex.closing.Done():
		}
		// A completion that comes with the caller's cancellation or the
		// deadline (a dispatch failing because its context ended) must not
		// reach the program: the outcome is the cancellation or the timeout.
		if st, ok := c.ended(ctx); ok {
			return c.abandon(st)
		}
		var done []completion
		if c.host != nil {
			done = c.host.take()
		}
		if st := c.step(done); st != C.BRIDGE_PENDING {
			return st
		}
	}
}

// step hands C the completions done, then lets it fire due timers and run
// jobs, holding an execution right for all of it (settling runs program
// code: an envelope's or a result's getters, a revived value's then); a
// run that cannot get one by its deadline (or before its context or the
// executor ends) is abandoned with that outcome.
func (c *call) step(done []completion) C.int32_t {
	if err := c.enter(); err != nil {
		if err == errWaitDeadline {
			return c.abandon(C.BRIDGE_TIMEOUT)
		}
		return c.abandon(C.BRIDGE_CANCELED)
	}
	var budget time.Duration // 0: C keeps its deadline
	if c.clock.queueMax > 0 {
		if budget = time.Until(c.clock.Deadline()); budget <= 0 {
			c.leave()
			return c.abandon(C.BRIDGE_TIMEOUT)
		}
		if len(done) > 0 {
			C.bridge_slot_rearm(c.slot.c, C.int64_t(budget))
		}
	}
	for _, d := range done {
		c.settle(d, false)
	}
	st := C.bridge_slot_step(c.slot.c, C.int64_t(budget), &c.slot.io.out)
	c.leave()
	return st
}

// ended reports whether the run must end before anything more reaches
// the program, and with which outcome: the caller's context ended or the
// executor closed (canceled), or the deadline passed (timeout). The
// deadline is read on the clock the handlers' contexts follow, so a call
// its context ended is never delivered.
func (c *call) ended(ctx context.Context) (C.int32_t, bool) {
	switch {
	case ctx.Err() != nil || c.ex.isClosed():
		return C.BRIDGE_CANCELED, true
	case c.clock.passed():
		return C.BRIDGE_TIMEOUT, true
	}
	return 0, false
}

// settle hands one async completion to C; nested: from inside the host
// call's callback (a non-blocking call, settled as it starts).
func (c *call) settle(d completion, nested bool) {
	var in C.int32_t
	if nested {
		in = 1
	}
	if d.str {
		C.bridge_slot_settle(c.slot.c, C.uint32_t(d.id), C.BRIDGE_CALL_STRING,
			(*C.char)(unsafe.Pointer(&d.result[0])), C.size_t(len(d.result)-1), nil, 0, in)
		return
	}
	if d.failed {
		st := C.int32_t(C.BRIDGE_CALL_ERROR)
		if d.badArgs {
			st = C.BRIDGE_CALL_TYPE_ERROR
		}
		msg, name := cText(d.failure), cText(d.tool)
		C.bridge_slot_settle(c.slot.c, C.uint32_t(d.id), st, msg, C.size_t(len(d.failure)),
			name, C.size_t(len(d.tool)), in)
		return
	}
	C.bridge_slot_settle(c.slot.c, C.uint32_t(d.id), C.BRIDGE_CALL_OK,
		(*C.char)(unsafe.Pointer(&d.result[0])), C.size_t(len(d.result)-1), nil, 0, in)
}

// abandon ends a pending run from the Go side with the given outcome.
func (c *call) abandon(st C.int32_t) C.int32_t {
	C.bridge_slot_close(c.slot.c, &c.slot.io.out)
	return st
}

// bridgeConfig is the C view of the run: the executor's limits, the run's
// deadline, and the capabilities.
func (c *call) bridgeConfig() C.bridge_config {
	lim := &c.ex.limits
	cfg := C.bridge_config{
		memory:    C.uint64_t(lim.Memory),
		stack:     C.uint64_t(lim.Stack),
		logs:      C.uint64_t(lim.Logs),
		payload:   C.uint64_t(lim.Payload),
		budget_ns: C.int64_t(time.Until(c.clock.Deadline())),
		run_id:    C.int64_t(c.slot.gen),
		filename:  scriptFile,
		cap_names: c.caps.names,
		cap_async: c.caps.async,
		ncaps:     C.int32_t(len(c.caps.caps)),
	}
	if m := c.ex.modules; m != nil {
		cfg.modules, cfg.nmodules = m.mods, C.int32_t(m.n)
	}
	cfg.handle = C.uintptr_t(c.slot.handle)
	if bc, err := guardsBytecode(); err == nil {
		cfg.guards_bc = (*C.uint8_t)(unsafe.Pointer(&bc[0]))
		cfg.guards_bc_len = C.size_t(len(bc))
	}
	if d, ok := determinismOf(c.ctx); ok {
		w := splitmix64(d.Seed)
		cfg.seed[0], cfg.seed[1] = C.uint64_t(w), C.uint64_t(splitmix64(w))
		if !d.Clock.IsZero() {
			cfg.det_clock, cfg.det_start_ns = 1, C.int64_t(d.Clock.UnixNano())
			if bc, err := clockBytecode(); err == nil {
				cfg.det_bc, cfg.det_bc_len = (*C.uint8_t)(unsafe.Pointer(&bc[0])), C.size_t(len(bc))
			}
		}
	} else {
		cfg.seed[0], cfg.seed[1] = C.uint64_t(mrand.Uint64()), C.uint64_t(mrand.Uint64())
	}
	if !c.ex.checked {
		cfg.snapshot = 1
		cfg.image_id = C.uintptr_t(uintptr(unsafe.Pointer(c.caps)))
		cfg.tmpls = c.caps.tmpls
	}
	if p := c.prog; p != nil {
		cfg.filename = p.file
		if p.runtime != nil {
			cfg.runtime_bc = (*C.uint8_t)(unsafe.Pointer(&p.runtime[0]))
			cfg.runtime_bc_len = C.size_t(len(p.runtime))
			if p.wantEntryBC {
				cfg.want_entry_bc = 1
			}
		}
		if p.retain {
			cfg.retain = 1
		}
		cfg.mode = p.mode
		if p.syncBody {
			cfg.sync_body = 1
		}
		if p.unit {
			cfg.unit_image = 1
			cfg.unit_key = *(*[32]C.uint8_t)(unsafe.Pointer(&p.unitKey))
		}
		if p.wantBC {
			cfg.want_bc = 1
		}
		if p.session {
			// A session's sandbox lives in an arena (its runs are
			// checkpoints of it), in checked mode too.
			cfg.session, cfg.unit_image = 1, 0
			cfg.snapshot = 1
			cfg.image_id = C.uintptr_t(uintptr(unsafe.Pointer(c.caps)))
			cfg.tmpls = c.caps.tmpls
		}
	}
	return cfg
}

// slotRun runs the program's first slice in the slot, whose config is set.
// The program's inputs in Go memory are arguments of the call (see
// bridge_slot_run), read by C only during it: nothing needs pinning.
func slotRun(s *slot, p *program) C.int32_t {
	bc, bcLen := bytesArg(p.bc)
	entryBC, entryBCLen := bytesArg(p.entryBC)
	entry, entryLen := textArg(p.entry)
	args, argsLen := textArg(p.args)
	self, selfLen := textArg(p.selftest)
	pro, proLen := textArg(p.prologue)
	return C.bridge_slot_run(s.c, &s.io.cfg, (*C.char)(unsafe.Pointer(&p.src[0])), C.size_t(len(p.src)-1),
		bc, bcLen, entry, entryLen, entryBC, entryBCLen, args, argsLen, self, selfLen, pro, proLen, &s.io.out)
}

// bytesArg is b as a C buffer argument (NULL when empty).
func bytesArg(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// textArg is the NUL-terminated b as a C string argument and its length
// (NULL when empty).
func textArg(b []byte) (*C.char, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(b) - 1)
}

// rawLifecycle runs one program in a single C call with no Go in between
// and returns its JSON length (or -1): the floor that benchmarks hold Run
// against. p carries what Run would pass (the cached bytecode, if any).
func (ex *Executor) rawLifecycle(p *program) int64 {
	s, noSlot := ex.slots.get(context.Background(), time.Now().Add(time.Hour), nil, nil)
	if noSlot != nil {
		return -1
	}
	defer ex.slots.put(s)
	s.gen++
	c := call{ex: ex, slot: s, caps: ex.caps.Load(), prog: p, clock: &clock{deadline: time.Now().Add(ex.limits.Deadline)},
		ctx: context.Background()}
	s.io.cfg = c.bridgeConfig()
	bc, bcLen := bytesArg(p.bc)
	return int64(C.bridge_raw_lifecycle(s.c, &s.io.cfg, (*C.char)(unsafe.Pointer(&p.src[0])), C.size_t(len(p.src)-1), bc, bcLen))
}

// imageFloor restores the plain image of the slot a run would get next,
// evaluates bc (a compiled expression) in it and takes its JSON, in one C
// call: the floor of a run on a snapshot, below rawLifecycle (benchmarks).
// The JSON's length, or -1 when that slot has no image yet.
func (ex *Executor) imageFloor(bc []byte) int64 {
	s, noSlot := ex.slots.get(context.Background(), time.Now().Add(time.Hour), nil, nil)
	if noSlot != nil {
		return -1
	}
	defer ex.slots.put(s)
	p, n := bytesArg(bc)
	return int64(C.bridge_image_floor(s.c, p, n))
}

// takeBytecode copies out bytecode C handed out with a run's first slice,
// if any, and frees it.
func takeBytecode(p **C.uint8_t, n *C.size_t) []byte {
	if *p == nil {
		return nil
	}
	bc := C.GoBytes(unsafe.Pointer(*p), C.int(*n))
	C.free(unsafe.Pointer(*p))
	*p, *n = nil, 0
	return bc
}

// finish turns the C outcome into Go values and releases the C buffers.
func (c *call) finish(ctx context.Context, st C.int32_t, out *C.bridge_out) outcome {
	defer C.bridge_out_free(out)
	o := outcome{status: st}
	o.stats.PeakMemory = int64(out.peak_heap)
	o.stats.Limits = c.ex.limits
	if c.host != nil {
		o.stats.HostCalls = int(c.host.calls.Load())
	}
	o.logs = readLogs(out, c.ex.limits.Logs)
	for i, l := range o.logs {
		o.logs[i] = c.prog.smap.frames(l)
		if sm := c.prog.selftestMap; sm != nil {
			o.logs[i] = sm.frames(o.logs[i])
		}
	}
	var data []byte
	if out.data != nil {
		data = C.GoBytes(unsafe.Pointer(out.data), C.int(out.size))
	}
	syntax := out.syntax != 0
	switch st {
	case C.BRIDGE_COMPILE:
		o.detail = c.prog.smap.render(string(data), syntax)
		o.err = &ExecError{Kind: KindJS, Name: c.name, Message: o.detail}
		o.err.Line, o.err.Column = c.prog.smap.placed(o.detail)
	case C.BRIDGE_NOT_FUNCTION:
		o.detail = string(data)
		o.err = &ExecError{Kind: KindJS, Name: c.name, Message: "TypeError: the source evaluated to " + o.detail}
	case C.BRIDGE_DONE:
		o.value = data
	case C.BRIDGE_THROWN:
		smap := &c.prog.smap
		if sm := c.prog.selftestMap; sm != nil && (syntax || !strings.Contains(string(data), smap.file+":")) &&
			strings.Contains(string(data), sm.file+":") {
			smap = sm // the self-test's own error
		}
		msg := smap.render(string(data), syntax)
		if sm := c.prog.selftestMap; sm != nil && smap != sm {
			msg = sm.frames(msg)
		}
		o.err = &ExecError{Kind: KindJS, Name: c.name, Message: msg}
		o.err.Line, o.err.Column = smap.placed(msg)
	case C.BRIDGE_TIMEOUT:
		o.err = c.timeout()
	case C.BRIDGE_MEMORY:
		o.err = &ExecError{Kind: KindMemoryExceeded, Name: c.name, LimitBytes: int64(c.ex.limits.Memory)}
	case C.BRIDGE_BUDGET:
		o.err = c.ex.spent(c.name)
	case C.BRIDGE_CANCELED:
		o.err = c.canceled(ctx)
	case C.BRIDGE_STALLED:
		o.err = &ExecError{Kind: KindPendingPromise, Name: c.name}
	case C.BRIDGE_CAPABILITY:
		o.err = &ExecError{Kind: KindCapability, Name: c.name, Capability: capabilityName(c.caps, out), Message: string(data)}
		o.err.Line, o.err.Column = c.prog.smap.site(int(out.cap_site), o.err.Capability)
	case C.BRIDGE_BAD_ARGS:
		o.err = &ExecError{Kind: KindInvalidArgs, Name: c.name, Reason: "the sandbox cannot read the arguments: " +
			firstLine(string(data))}
	case C.BRIDGE_TOO_LARGE:
		o.err = &ExecError{Kind: KindJS, Name: c.name, Message: "RangeError: the result is " +
			strconv.FormatUint(uint64(out.size), 10) + " bytes of JSON, over the payload limit of " +
			strconv.Itoa(c.ex.limits.Payload) + " bytes"}
	default:
		if c.host != nil && c.host.internal != nil {
			o.err = internalError(c.name, c.host.internal)
		} else {
			o.err = &ExecError{Kind: KindInternal, Message: "codemode: " + c.name + ": " + string(data)}
		}
	}
	return o
}

func (c *call) timeout() *ExecError {
	return &ExecError{Kind: KindTimeout, Name: c.name, DeadlineMS: budgetMS(c.budget)}
}

// budgetMS is a budget in whole milliseconds, rounded up: a caller's
// 60 ms timeout, a little of which passed before the call began, reads as
// the 60 ms it set.
func budgetMS(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// canceled explains a run stopped by its cancel flag: the executor closed,
// the caller cancelled, or the caller's deadline came (a timeout, like the
// executor's own).
func (c *call) canceled(ctx context.Context) *ExecError {
	if c.queueErr != nil {
		return busyError(ctx, c.name, c.queueErr)
	}
	if c.ex.isClosed() {
		return internalError(c.name, ErrClosed)
	}
	cause := ctx.Err()
	switch cause {
	case context.DeadlineExceeded:
		return c.timeout()
	case nil:
		cause = context.Canceled
	}
	return internalError(c.name, cause)
}

// capabilityName names what failed in a BRIDGE_CAPABILITY outcome: a
// capability, or a provider tool as "provider.tool".
func capabilityName(caps *capTable, out *C.bridge_out) string {
	if out.cap >= 0 && int(out.cap) < len(caps.caps) {
		return caps.caps[out.cap].Name
	}
	return C.GoStringN(out.cap_name, C.int(out.cap_name_len))
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// readLogs decodes the C log records and appends the line about what was
// dropped.
func readLogs(out *C.bridge_out, limit int) []string {
	n := int(out.logs_size)
	if n == 0 && out.logs_dropped == 0 {
		return nil
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(out.logs)), n)
	var logs []string
	for len(buf) >= 4 {
		l := int(binary.NativeEndian.Uint32(buf))
		logs = append(logs, string(buf[4:4+l]))
		buf = buf[4+l:]
	}
	if d := uint64(out.logs_dropped); d > 0 {
		logs = append(logs, "[codemode: "+strconv.FormatUint(d, 10)+" more log lines dropped: the "+
			strconv.Itoa(limit)+"-byte log limit was reached]")
	}
	return logs
}

// cText points C at the bytes of s (not NUL-terminated; C takes a length),
// or is nil for an empty s. C only reads them during the call.
func cText(s string) *C.char {
	if s == "" {
		return nil
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s)))
}

// cString returns a NUL-terminated copy of b, for C to read: the caller's
// memory is never written, not even past its length.
func cString(b []byte) []byte {
	c := make([]byte, len(b)+1)
	copy(c, b)
	return c
}
