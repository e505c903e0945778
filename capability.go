package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/codemode-go/codemode/internal/gopool"
)

// Capability is a host function injected into every sandbox as a global JS
// function: the only doorway out of the sandbox besides providers.
//
// A script calls it with one argument object (no argument sends {}; any
// other value is a TypeError in the script). Func receives that object as
// JSON and returns any value encoding/json can marshal, or a
// json.RawMessage that is passed through untouched. A returned error
// becomes a catchable JS Error whose message is exactly err.Error(); if the
// script lets it escape, the run fails with an [ExecError] of kind
// capability. A panic in Func is recovered and reported the same way, with
// the message "panic: <value>".
//
// A synchronous capability (Async false) looks synchronous to the script
// (`const rows = query({q: 'x'})`) and is served inline on the goroutine
// running the script: it blocks the script, and must honour ctx, which
// carries the run's deadline and ends when the run ends or the caller's
// context is cancelled. If it returns after the deadline, the run is a
// timeout. An async capability returns a Promise at once; Func then runs on
// a goroutine of its own, at most 32 per run at a time (further calls wait
// their turn in call order), and the run abandons it at the deadline even
// if it ignores ctx.
//
// Func must be safe for concurrent use: runs call it in parallel.
type Capability struct {
	// Name is the global the script calls: a JavaScript identifier that is
	// not a reserved word, not a built-in global, and not in the
	// __codemode namespace (see [JSIdentifier]).
	Name string
	// Description says what the capability does, for the model.
	Description string
	// Params is the JSON Schema of the one argument object: shown to the
	// model, and checked before Func runs (compiled once, by a compiler
	// that loads nothing from outside the schema). A call whose argument
	// fails it throws a catchable TypeError in the sandbox naming the
	// capability and the path ("search: `query` is required", "get_user:
	// `id`: got string, want integer"), and Func never runs. Empty: any
	// object.
	Params json.RawMessage
	// Returns is the JSON Schema of the result, for the model; empty:
	// unknown.
	Returns json.RawMessage
	// Unchecked skips checking arguments against Params (the handler
	// checks them itself).
	Unchecked bool
	// Async makes the capability return a Promise.
	Async bool
	// NonBlocking declares that Func honours its context and returns
	// quickly (no network round trip, no lock held for long: a cache, a
	// computation, an in-memory store). An async call then runs Func on the
	// program's own goroutine as the call starts, instead of handing it to
	// a goroutine of its own: the Promise still settles on the program's
	// next turn, but the call costs what a synchronous one does, with no
	// wake-up of another core. The price is the async contract's guarantee:
	// such a Func that blocks anyway blocks the run (as a synchronous
	// capability does), and calls a Promise.all starts together run one
	// after another. Governed calls ([WithGovernance]) always get a
	// goroutine. Ignored for a synchronous capability.
	NonBlocking bool
	// Func serves a call. For a synchronous capability, args is valid
	// only until Func returns (as with json.Unmarshaler's data): it is a
	// buffer the run reuses for its next call, so a handler that keeps
	// the arguments keeps a copy. An async capability's args are its own.
	Func func(ctx context.Context, args json.RawMessage) (any, error)

	check *argCheck // Params compiled, unless Unchecked
	// encode, when set, serves a call in place of Func, appending the
	// result's JSON to dst ([Func]: no boxing, no intermediate buffer).
	// It checks args itself (see refusal).
	encode func(ctx context.Context, c *Capability, args, dst []byte) ([]byte, error)
	// flat is a [Func]'s plan of its argument, when flat; once check is
	// compiled, a flat decode that set every field in flatNeed passes the
	// check too when flatVouches (see flatPlan.vouches).
	flat        *flatPlan
	flatNeed    uint64
	flatVouches bool
}

// API is the capability as the model is told of it ([Declarations],
// [Describe]): its name, description, schemas, and whether it returns a
// Promise.
func (c Capability) API() ToolAPI {
	return ToolAPI{JSName: c.Name, Description: c.Description, Parameters: c.Params, Returns: c.Returns, Async: c.Async}
}

// WithCapability adds a capability to every sandbox of the executor. New
// fails with a [*RegisterError] of stage invalid_capability if its name is
// refused or taken.
func WithCapability(c Capability) Option {
	return func(cfg *config) error {
		cfg.caps = append(cfg.caps, c)
		return nil
	}
}

// AddCapability adds a capability to the sandboxes of runs that start
// afterwards; runs in progress are not disturbed. It fails with a
// [*RegisterError] of stage invalid_capability if the name is refused or
// already registered, and with an error matching [ErrClosed] on a closed
// executor. Safe for concurrent use.
func (e *Executor) AddCapability(c Capability) error {
	e.capMu.Lock()
	defer e.capMu.Unlock()
	if e.isClosed() {
		return internalError("add capability", ErrClosed)
	}
	cur := e.caps.Load()
	if err := e.compileCapability(&c); err != nil {
		return err
	}
	if err := validateCapability(c, cur.caps); err != nil {
		return err
	}
	t := newCapTable(append(cur.caps[:len(cur.caps):len(cur.caps)], c))
	e.capTables = append(e.capTables, t)
	e.caps.Store(t)
	return nil
}

// Capabilities returns the names of the executor's capabilities in
// registration order.
func (e *Executor) Capabilities() []string {
	caps := e.caps.Load().caps
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = c.Name
	}
	return names
}

// capTable is an immutable set of capabilities with its C view: the names
// as C strings and the async flags, in C memory that lives until Close
// (runs in progress may still use a replaced table).
type capTable struct {
	caps  []Capability
	names **C.char
	async *C.uint8_t
	// tmpls are the sandboxes slots clone for this capability set
	// (bridge_image.c, Templates); freed with the table, after every slot.
	tmpls      *C.bridge_tmpls
	fetchState // the table with fetch added (Executor.fetchTable)
	grantState // the table narrowed to grants (Executor.grantTable)
}

func newCapTable(caps []Capability) *capTable {
	t := &capTable{caps: caps, tmpls: C.bridge_tmpls_new()}
	if len(caps) == 0 {
		return t
	}
	t.names = (**C.char)(C.malloc(C.size_t(len(caps)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	t.async = (*C.uint8_t)(C.malloc(C.size_t(len(caps))))
	names := unsafe.Slice(t.names, len(caps))
	async := unsafe.Slice(t.async, len(caps))
	for i, c := range caps {
		names[i] = C.CString(c.Name)
		async[i] = 0
		if c.Async {
			async[i] = 1
		}
	}
	return t
}

func (t *capTable) free() {
	C.bridge_tmpls_free(t.tmpls)
	t.tmpls = nil
	if t.names == nil {
		return
	}
	for _, p := range unsafe.Slice(t.names, len(t.caps)) {
		C.free(unsafe.Pointer(p))
	}
	C.free(unsafe.Pointer(t.names))
	C.free(unsafe.Pointer(t.async))
	t.names, t.async = nil, nil
}

// reservedPrefix is the namespace of codemode's own globals.
const reservedPrefix = "__codemode"

// validateCapability checks c against the capabilities already registered.
func validateCapability(c Capability, existing []Capability) *RegisterError {
	if reason := identifierProblem(c.Name); reason != "" {
		return &RegisterError{Stage: StageInvalidCapability, Name: c.Name, Reason: reason}
	}
	if c.Func == nil {
		return &RegisterError{Stage: StageInvalidCapability, Name: c.Name, Reason: "Func is nil"}
	}
	for _, o := range existing {
		if o.Name == c.Name {
			return &RegisterError{Stage: StageInvalidCapability, Name: c.Name,
				Reason: fmt.Sprintf("a capability named %q is already registered", c.Name)}
		}
	}
	return nil
}

// compileCapability compiles c's Params for checking its arguments.
func (e *Executor) compileCapability(c *Capability) *RegisterError {
	if !c.Unchecked {
		check, err := e.schemas.compileCheck(c.Params)
		if err != nil {
			err.Name = c.Name
			return err
		}
		c.check = check
	}
	if c.flat != nil {
		c.flatNeed, c.flatVouches = c.flat.vouches(c.check)
	}
	return nil
}

// refusal is the check's verdict on args as the handler's refusal (an
// [*argsError]), or nil when they pass or nothing checks them.
func (c *Capability) refusal(args []byte) error {
	if c.check != nil {
		if problem := c.check.problem(args); problem != "" {
			return &argsError{msg: problem}
		}
	}
	return nil
}

// identifierProblem says why name cannot be a capability global, or "".
func identifierProblem(name string) string {
	if name == "" {
		return "the name is empty"
	}
	for i, r := range name {
		switch {
		case r == '_' || r == '$' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z'):
		case '0' <= r && r <= '9':
			if i == 0 {
				return fmt.Sprintf("the name starts with %q: it must start with a letter, `_` or `$`", r)
			}
		default:
			if i == 0 {
				return fmt.Sprintf("the name starts with %q: it must start with a letter, `_` or `$`", r)
			}
			return fmt.Sprintf("the name contains %q: only [A-Za-z0-9_$] are allowed", r)
		}
	}
	switch {
	case strings.HasPrefix(name, reservedPrefix):
		return "the `" + reservedPrefix + "` prefix is reserved for codemode's own globals"
	case jsReservedWords[name]:
		return fmt.Sprintf("%q is a JavaScript reserved word", name)
	case sandboxGlobals[name]:
		return fmt.Sprintf("%q is a built-in global of the sandbox", name)
	}
	return ""
}

// JSIdentifier mangles an arbitrary tool name into a valid capability name,
// following the reference executor's rules: every character outside
// [A-Za-z0-9_$] becomes `_`; a leading digit gets a `_` prepended; an empty
// name becomes `_tool`; a name starting with the reserved `__codemode`
// prefix gets one more leading `_`. Beyond the reference, a JavaScript
// reserved word or built-in global gets a `_tool` suffix. The result always
// passes the capability name checks of [Executor.AddCapability]. The
// mapping is not injective: callers must refuse collisions.
func JSIdentifier(name string) string {
	var b strings.Builder
	b.Grow(len(name) + 5)
	for i, r := range name {
		if i == 0 && '0' <= r && r <= '9' {
			b.WriteByte('_')
		}
		switch {
		case r == '_' || r == '$' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteByte('_')
		default:
			b.WriteByte('_')
		}
	}
	id := b.String()
	switch {
	case id == "":
		return "_tool"
	case strings.HasPrefix(id, reservedPrefix):
		return "_" + id
	case jsReservedWords[id] || sandboxGlobals[id]:
		return id + "_tool"
	}
	return id
}

// jsReservedWords are ECMAScript's keywords and reserved words, those strict
// mode reserves, the literals, and the words that cannot be bound in strict
// code (arguments, eval) or that read as keywords (async, await, yield, let,
// static, of, get, set are not reserved and stay allowed except where the
// language forbids them).
var jsReservedWords = setOf(
	"await", "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete",
	"do", "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "import",
	"in", "instanceof", "new", "null", "return", "super", "switch", "this", "throw", "true", "try",
	"typeof", "var", "void", "while", "with", "yield",
	"implements", "interface", "let", "package", "private", "protected", "public", "static",
	"arguments", "eval", "async",
)

// sandboxGlobals are the global names a sandbox defines before any
// capability; TestSandboxGlobalsListed keeps this list complete.
var sandboxGlobals = setOf(
	"AggregateError", "Array", "ArrayBuffer", "AsyncDisposableStack", "Atomics", "BigInt",
	"BigInt64Array", "BigUint64Array", "Boolean", "DataView", "Date", "DisposableStack", "Error",
	"EvalError", "Float16Array", "Float32Array", "Float64Array", "Function", "Infinity", "Int16Array",
	"Int32Array", "Int8Array", "InternalError", "Iterator", "JSON", "Map", "Math", "NaN", "Number",
	"Object", "Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set",
	"SharedArrayBuffer", "String", "SuppressedError", "Symbol", "SyntaxError", "TypeError", "URIError",
	"Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray", "WeakMap", "WeakSet",
	"clearInterval", "clearTimeout", "console", "decodeURI", "decodeURIComponent", "encodeURI",
	"encodeURIComponent", "escape", "eval", "globalThis", "isFinite", "isNaN", "parseFloat", "parseInt",
	"queueMicrotask", "setInterval", "setTimeout", "undefined", "unescape",
	// The web globals (js/web.js).
	"AbortController", "AbortSignal", "DOMException", "Event", "EventTarget", "TextDecoder", "TextEncoder",
	"URL", "URLSearchParams", "atob", "btoa", "crypto", "performance", "structuredClone",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// hostRun is the Go side of one run's host calls. C reaches it through
// the run's cgo.Handle; sync calls and async starts arrive on the run's
// own goroutine, completions from handler goroutines.
type hostRun struct {
	ex       *Executor
	run      *call // the run it serves (its execution right)
	caps     *capTable
	dispatch DispatchFunc
	caller   context.Context
	clock    *clock // the run's deadline

	// The handlers' context, made on the first call.
	ctx      context.Context
	cancel   context.CancelFunc
	stopExec func() bool
	// The dispatch's context, made on the first provider call: it carries
	// the deadline but does not end with the run, so a call the program did
	// not await (a write, say) can finish. It ends at the deadline, or
	// once the run has ended and no provider call is in its handler: left
	// to its deadline alone, every run's context and timer stayed live
	// until then (a rate of runs times the deadline of them).
	dctx    context.Context
	dcancel context.CancelFunc // nil once called

	internal error // a failure of the glue, reported as kind internal

	gov *govRun  // the run's governed side (WithGovernance, Resume), or nil
	obs Observer // WithObserver, or nil
	led ledger   // the run's effects ledger
	seq int      // calls made so far (the run's goroutine only): the next call's ToolCallInfo.Seq

	calls   atomic.Int64 // host calls made (RunStats.HostCalls)
	scratch []byte       // callSync's result encoding, reused across the run's calls
	args    []byte       // callSync's arguments, likewise

	// entered counts calls handed to a goroutine that have not yet entered
	// their handler: close waits for them, so a call the script made has
	// started by the time the run returns, awaited or not.
	entered sync.WaitGroup

	// spin: workers wait briefly for the run's next call (awaitCall),
	// where there is another processor to wait on.
	spin bool
	// ended is closed, read without mu.
	ended atomic.Bool

	mu       sync.Mutex
	closed   bool
	inflight int
	// spinners counts the workers waiting for the run's next call less the
	// calls handed to them and not yet taken (claimed).
	spinners int
	claimed  []asyncCall
	nclaimed atomic.Int32
	lone     int         // calls started with none in flight
	dlive    int         // provider calls handed to a handler that have not returned
	queue    []asyncCall // waiting for a free handler, in call order
	done     []completion
	notify   chan struct{} // one token when done turns non-empty
	// For the ledger at the run's end (close): the completions the run did
	// not take, the calls still queued (never started), and the governed
	// calls governance let reach their handler.
	late       []completion
	unstarted  []int
	govEntered []int
}

// maxInflight bounds the async handlers running at once for one run.
const maxInflight = 32

// maxScratch bounds the result buffer a run keeps between its sync calls.
const maxScratch = 64 << 10

// asyncCall is a call waiting for or running on a handler goroutine: a
// capability's (cap ≥ 0) or a provider dispatch (cap < 0).
type asyncCall struct {
	cap            int
	id             uint32
	args           json.RawMessage // the argument object, or argsJSON of a dispatch
	provider, tool string
	departed       uint64   // latchClock as a dispatch call left the sandbox
	gov            *verdict // a governed call's verdict, or nil
	seq            int      // its place among the run's calls
	led            string   // its name in the ledger
	write          bool     // its tool's effect is a write
	inline         bool     // its handler is declared non-blocking: served as it starts
}

// completion is a finished async call: NUL-terminated JSON (a dispatch's
// answer when str is set) or a failure.
type completion struct {
	id      uint32
	str     bool
	failed  bool
	badArgs bool     // the failure is the arguments': a TypeError
	why     callNote // an Observer's outcome when it is not "ok" or "error"
	policy  callNote // what governance decided of the call (ToolCallEnd.Policy)
	result  []byte
	failure string
	tool    string // a failed dispatch: "provider.tool", what the failure is attributed to
	// The ledger's: the call, its name and effect, when its handler
	// returned, and whether the ledger has it already.
	seq     int
	led     string
	write   bool
	endedAt monoTime
	logged  bool
}

func newHostRun(ex *Executor, caps *capTable, dispatch DispatchFunc, caller context.Context, clk *clock, gov *govRun) *hostRun {
	return &hostRun{ex: ex, caps: caps, dispatch: dispatch, caller: caller, clock: clk, notify: make(chan struct{}, 1), gov: gov,
		obs: ex.observer, spin: runtime.GOMAXPROCS(0) > 1}
}

// toolObs is a call an Observer was told of.
type toolObs struct {
	info  ToolCallInfo
	ctx   context.Context
	start time.Time
}

// toolStart tells the Observer of a call (cap < 0: a provider tool's) and
// returns the context its handler gets.
func (h *hostRun) toolStart(ctx context.Context, cap int, provider, tool string, seq int) (context.Context, toolObs) {
	info := ToolCallInfo{Tool: observedName(provider + "." + tool), Provider: observedName(provider), Seq: seq}
	if cap >= 0 {
		info = ToolCallInfo{Tool: h.caps.caps[cap].Name, Seq: seq}
	}
	ctx = h.obs.ToolStart(ctx, info)
	return ctx, toolObs{info: info, ctx: ctx, start: time.Now()}
}

// toolEnd tells the Observer how a call ended: a failure as the program
// sees it, also an answer the engine fails (seenFailure).
func (h *hostRun) toolEnd(t toolObs, d completion) {
	end := ToolCallEnd{Outcome: "ok", Elapsed: time.Since(t.start), Policy: d.policy.String()}
	if msg, ok := d.seenFailure(); ok {
		d.failed, d.failure = true, msg
	}
	switch {
	case d.why != noteNone:
		end.Outcome = d.why.String()
		if d.failed {
			end.Err = errors.New(observedText(d.failure))
		}
	case d.failed:
		end.Outcome, end.Err = "error", errors.New(observedText(d.failure))
	}
	h.obs.ToolEnd(t.ctx, t.info, end)
}

// context returns the handlers' context, creating it on first use: it
// carries the deadline and ends with the run, the caller's context or the
// executor.
func (h *hostRun) context() context.Context {
	if h.ctx == nil {
		h.ctx, h.cancel = h.clock.context(h.caller)
		h.stopExec = context.AfterFunc(h.ex.closing, h.cancel)
	}
	return h.ctx
}

// dispatchContext returns the context provider calls get.
func (h *hostRun) dispatchContext() context.Context {
	if h.dctx == nil {
		h.dctx, h.dcancel = h.clock.context(h.caller)
	}
	return h.dctx
}

// close ends the run's host side: queued calls are dropped (and so are
// governed calls still waiting for their approval or their place in
// flight), started ones have entered their handlers, later completions
// are ignored, handlers see their context end.
func (h *hostRun) close() {
	h.gov.end() // a call still waiting for its approval never runs
	h.mu.Lock()
	h.closed = true
	h.ended.Store(true)
	for _, q := range h.queue {
		h.unstarted = append(h.unstarted, q.seq)
	}
	h.queue = nil
	h.late, h.done = h.done, nil
	end := h.endDispatch()
	h.mu.Unlock()
	end()
	h.entered.Wait()
	if h.cancel != nil {
		h.stopExec()
		h.cancel()
	}
}

// endDispatch returns the dispatch context's cancel if the run has ended
// and no provider call is in its handler, once; otherwise a no-op. The
// caller holds mu and calls what it returns after unlocking.
func (h *hostRun) endDispatch() context.CancelFunc {
	if !h.closed || h.dlive > 0 || h.dcancel == nil {
		return noCancel
	}
	end := h.dcancel
	h.dcancel = nil
	return end
}

func noCancel() {}

// spinWindow is how long the event loop polls for a completion before it
// parks: handing a goroutine back and forth through the scheduler costs
// several µs of futex wake-ups, more than most fast handlers take.
const spinWindow = 20 * time.Microsecond

// spinForCompletion polls briefly for the completion of a lone call in
// flight, yielding the processor meanwhile, and reports whether it arrived
// (its token is consumed). A script awaiting calls one after another pays
// the park and wake-up of its goroutine on every call otherwise; with
// several calls in flight, parking lets the handlers have the processors.
func (h *hostRun) spinForCompletion(wait time.Duration) bool {
	end := time.Now().Add(min(wait, spinWindow))
	for {
		h.mu.Lock()
		inflight, done := h.inflight, len(h.done)
		h.mu.Unlock()
		if done > 0 || inflight != 1 || time.Now().After(end) {
			break
		}
		runtime.Gosched()
	}
	select {
	case <-h.notify:
		return true
	default:
		return false
	}
}

// take returns the completions gathered so far.
func (h *hostRun) take() []completion {
	h.mu.Lock()
	done := h.done
	h.done = nil
	h.mu.Unlock()
	for i := range done {
		h.logEnd(&done[i])
	}
	return done
}

// invoke runs a handler, turning a panic into a failure, and appends its
// result to dst as NUL-terminated JSON.
func invoke(c *Capability, ctx context.Context, args json.RawMessage, dst []byte) (result []byte, failure string, failed, badArgs bool) {
	defer func() {
		if r := recover(); r != nil {
			result, failure, failed = nil, fmt.Sprintf("panic: %v", r), true
		}
	}()
	var err error
	if c.encode != nil {
		dst, err = c.encode(ctx, c, args, dst)
	} else if err = c.refusal(args); err == nil {
		var v any
		if v, err = c.Func(ctx, args); err == nil {
			if dst, err = appendJSON(dst, v); err != nil {
				return nil, "cannot encode the result as JSON: " + err.Error(), true, false
			}
		}
	}
	if err != nil {
		var ae *argsError
		if errors.As(err, &ae) {
			return nil, c.Name + ": " + ae.msg, true, true
		}
		var ee *encodeError
		if errors.As(err, &ee) {
			return nil, "cannot encode the result as JSON: " + ee.err.Error(), true, false
		}
		return nil, err.Error(), true, false
	}
	return append(dst, 0), "", false, false
}

// appendJSON appends v's JSON to dst: a json.RawMessage as it is (the
// sandbox's parser judges it), the common scalars directly, anything else
// through encoding/json. The text may differ from json.Marshal's (a float's
// exponent form, say), never the value the script reads.
func appendJSON(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case json.RawMessage:
		if v == nil {
			return append(dst, "null"...), nil
		}
		return append(dst, v...), nil
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case float64:
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			return strconv.AppendFloat(dst, v, 'g', -1, 64), nil
		}
	case string:
		if plainASCII(v) {
			dst = append(dst, '"')
			dst = append(dst, v...)
			return append(dst, '"'), nil
		}
	}
	// The codec's rules: encoding/json's, with every []byte (at any
	// depth) as a binary envelope, which the sandbox revives as a
	// Uint8Array; encoding/json itself (faster) when v holds no []byte.
	var b []byte
	var err error
	if holdsBytes(v, 0) {
		if err := checkNesting(v); err != nil {
			return dst, err
		}
		b, err = jsonv2.Marshal(v, codecOptions)
	} else {
		b, err = json.Marshal(v)
	}
	if dst == nil {
		return b, err
	}
	return append(dst, b...), err
}

// holdsBytes says whether v may hold a []byte that the codec would tag:
// the dynamic values of maps and slices of any, and for other types
// whether their type can (cached per type). Past holdsDepth levels it
// says yes: the codec's path checks the value's nesting (a map that holds
// itself) before it encodes.
func holdsBytes(v any, depth int) bool {
	if depth > holdsDepth {
		return true
	}
	switch v := v.(type) {
	case nil, bool, string, float64, int, int64, json.Number, json.RawMessage:
		return false
	case []byte:
		return true
	case map[string]any:
		for _, e := range v {
			if holdsBytes(e, depth+1) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range v {
			if holdsBytes(e, depth+1) {
				return true
			}
		}
		return false
	}
	return typeHoldsBytes(reflect.TypeOf(v))
}

// holdsDepth is how deep holdsBytes looks into maps and slices of any.
const holdsDepth = 64

var bytesTypes sync.Map // reflect.Type -> bool

// typeHoldsBytes says whether a value of t may hold a []byte: a byte
// slice, or an interface (anything) anywhere in it.
func typeHoldsBytes(t reflect.Type) bool {
	if v, ok := bytesTypes.Load(t); ok {
		return v.(bool)
	}
	bytesTypes.Store(t, true) // a recursive type: assume so while deciding
	r := walkBytes(t, map[reflect.Type]bool{})
	bytesTypes.Store(t, r)
	return r
}

func walkBytes(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && t != reflect.TypeFor[json.RawMessage]() {
			return true
		}
		return walkBytes(t.Elem(), seen)
	case reflect.Array, reflect.Pointer:
		return walkBytes(t.Elem(), seen)
	case reflect.Map:
		return walkBytes(t.Key(), seen) || walkBytes(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && walkBytes(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// plainASCII reports whether s needs no escaping inside JSON quotes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// borrow copies a sync call's arguments from C into the run's argument
// buffer, reused from call to call (see Capability.Func); a large one gets
// a buffer of its own.
func (h *hostRun) borrow(args []byte) json.RawMessage {
	if len(args) > maxScratch {
		return bytes.Clone(args)
	}
	h.args = append(h.args[:0], args...)
	return h.args
}

// callSync serves a synchronous capability inline.
func (h *hostRun) callSync(index int, args json.RawMessage, reply *C.bridge_reply) {
	h.calls.Add(1)
	ctx := h.context()
	seq := h.seq
	h.seq++
	led, f := h.effectName(index, "", "", args)
	write := f == EffectWrite
	began := monoNow()
	if h.gov != nil {
		h.led.begin(seq, led, f, true, began)
	}
	var t toolObs
	if h.obs != nil {
		ctx, t = h.toolStart(ctx, index, "", "", seq)
	}
	var v verdict
	if h.gov != nil {
		name := h.caps.caps[index].Name
		if v = h.gov.issue(h.caller, name, args); v.act != actLive {
			h.calls.Add(-1) // it reaches no handler
		}
		if v.act == actStop {
			h.led.end(seq, led, write, "paused", monoNow())
			if h.obs != nil {
				h.toolEnd(t, completion{why: notePaused})
			}
			reply.status = C.BRIDGE_CALL_CANCELED // the run ends here: a pause or a divergence
			return
		}
	}
	// The handler blocks this goroutine, not an execution right: another
	// run may execute meanwhile. The right is taken back before C goes on.
	h.run.leave()
	var result []byte
	var failure string
	var failed, badArgs bool
	var end monoTime
	if h.gov == nil {
		result, failure, failed, badArgs = invoke(&h.caps.caps[index], ctx, args, h.scratch[:0])
		if !failed && cap(result) <= maxScratch {
			h.scratch = result
		}
		end = monoNow()
		h.led.record(seq, led, f, outcomeOf(failed, badArgs), began, end)
	} else {
		var d completion
		switch v.act {
		case actAnswer:
			d = v.rec.completion(0, false)
			d.why, d.policy = noteReplayed, noteReplayed
		case actFail:
			d = completion{failed: true, failure: v.msg, why: v.why, policy: v.why}
			h.gov.complete(v.seq, d)
		default:
			d = h.governedCall(ctx, v, h.caps.caps[index].Name, 0, args, func(ctx context.Context, args []byte) completion {
				var d completion
				d.result, d.failure, d.failed, d.badArgs = invoke(&h.caps.caps[index], ctx, args, nil)
				return d
			})
		}
		end = monoNow()
		h.led.end(seq, led, write, d.outcome(), end)
		result, failure, failed, badArgs = d.result, d.failure, d.failed, d.badArgs
		if h.obs != nil {
			h.toolEnd(t, d)
		}
	}
	if h.obs != nil && h.gov == nil {
		h.toolEnd(t, completion{result: result, failure: failure, failed: failed})
	}
	switch h.retake(end) {
	case startCancel:
		reply.status = C.BRIDGE_CALL_CANCELED
		return
	case startTimeout:
		reply.status = C.BRIDGE_CALL_TIMEOUT
		return
	}
	switch {
	case badArgs:
		reply.status = C.BRIDGE_CALL_TYPE_ERROR
		result = []byte(failure)
	case failed:
		reply.status = C.BRIDGE_CALL_ERROR
		result = []byte(failure)
	default:
		reply.status = C.BRIDGE_CALL_OK
		result = result[:len(result)-1] // C gets the NUL from the copy below
	}
	if reply.buf != nil && len(result)+1 <= int(reply.cap) {
		reply.data = reply.buf // C's own room: no allocation across the boundary
	} else {
		reply.data = (*C.char)(C.malloc(C.size_t(len(result) + 1)))
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(reply.data)), len(result)+1)
	copy(buf, result)
	buf[len(result)] = 0
	reply.size = C.size_t(len(result))
}

// start begins an async call, or queues it behind the in-flight bound. It
// returns what C does next: startGoOn, or the run ends at the call
// (startCancel: a pause, a divergence, the caller's cancellation;
// startTimeout: the deadline passed in a handler served inline).
func (h *hostRun) start(call asyncCall) C.int32_t {
	h.calls.Add(1)
	// Made here, on the run's goroutine, before the call is handed over.
	if call.cap >= 0 {
		h.context()
	} else {
		h.dispatchContext()
	}
	call.seq = h.seq
	h.seq++
	if call.cap >= 0 {
		call.inline = h.caps.caps[call.cap].NonBlocking
	}
	if call.inline && h.gov == nil {
		return h.serveInline(call)
	}
	call.led, call.write = h.track(call.cap, call.provider, call.tool, call.args, call.seq)
	if h.gov != nil {
		name := call.provider + "." + call.tool
		if call.cap >= 0 {
			name = h.caps.caps[call.cap].Name
		}
		v := h.gov.issue(h.caller, name, call.args)
		if v.act != actLive {
			h.calls.Add(-1) // it reaches no handler
		}
		var d completion
		switch v.act {
		case actStop:
			d.why = notePaused
		case actAnswer:
			d = v.rec.completion(call.id, call.cap < 0)
			d.why, d.policy = noteReplayed, noteReplayed
		case actFail:
			d = completion{id: call.id, failed: true, failure: v.msg, why: v.why, policy: v.why}
			if call.cap < 0 {
				d.tool = name
			}
			h.gov.complete(v.seq, d)
		}
		if v.act != actLive {
			h.led.end(call.seq, call.led, call.write, d.outcome(), monoNow())
			d.logged = true
			if h.obs != nil {
				_, t := h.toolStart(h.ctxOf(call), call.cap, call.provider, call.tool, call.seq)
				h.toolEnd(t, d)
			}
		}
		switch v.act {
		case actStop:
			return startCancel
		case actAnswer, actFail:
			h.deliver(d)
			return startGoOn
		}
		call.gov = &v
	}
	h.mu.Lock()
	if h.inflight >= maxInflight {
		h.queue = append(h.queue, call)
		h.mu.Unlock()
		return startGoOn
	}
	if h.inflight == 0 {
		h.lone++
	}
	h.inflight++
	if call.cap < 0 {
		h.dlive++
	}
	h.entered.Add(1)
	if h.spinners > 0 { // a worker waits for this run's next call
		h.spinners--
		h.claimed = append(h.claimed, call)
		h.nclaimed.Add(1)
		h.mu.Unlock()
		return startGoOn
	}
	h.mu.Unlock()
	gopool.Go(func() {
		// A go statement would carry the run's goroutine's profiler
		// labels; a reused goroutine takes the caller's (pprof.Do's).
		pprof.SetGoroutineLabels(h.caller)
		h.serve(call)
		pprof.SetGoroutineLabels(context.Background())
	})
	return startGoOn
}

// retake takes the run's execution right back after a handler that ran
// without it (the handler blocks the run's goroutine, not a right: another
// run may execute meanwhile), end being the handler's end, and says
// whether the run goes on (startGoOn), was cancelled, or passed its
// deadline. Most of the time a right is free at once, and the handler's
// end was the last reading of the clock; else the wait for one is timed.
func (h *hostRun) retake(end monoTime) C.int32_t {
	var entered error
	atOnce := h.run.enterAtOnce()
	if !atOnce {
		entered = h.run.enter()
		if entered == nil && h.clock.queueMax > 0 {
			// The wait for the right was not the run's time: C's deadline moves.
			C.bridge_slot_rearm(h.run.slot.c, C.int64_t(max(time.Until(h.clock.Deadline()), 1)))
		}
	}
	switch {
	case h.caller.Err() != nil || h.ex.isClosed() || (entered != nil && entered != errWaitDeadline):
		return startCancel
	case entered != nil || atOnce && h.clock.passedAt(end) || !atOnce && h.clock.passed():
		return startTimeout
	}
	return startGoOn
}

// What start tells C (bridge_host.c's call_async and send_dispatch).
const (
	startGoOn    C.int32_t = 0
	startCancel  C.int32_t = 1
	startTimeout C.int32_t = 2
)

// serveInline serves a call whose handler is declared non-blocking on the
// run's goroutine, as it starts (in the C callback that started it), and
// settles its promise there: no goroutine, no wake-up, no turn of the
// event loop. The promise's reactions still run as jobs, after the code
// that made the call. The handler's time is the run's, as a synchronous
// call's is: a deadline that passed in it (or a cancellation) ends the run.
func (h *hostRun) serveInline(call asyncCall) C.int32_t {
	name, f := h.effectName(call.cap, call.provider, call.tool, call.args)
	began := monoNow()
	ctx := h.ctxOf(call)
	var t toolObs
	if h.obs != nil {
		ctx, t = h.toolStart(ctx, call.cap, call.provider, call.tool, call.seq)
	}
	h.run.leave() // as a synchronous call's handler, it runs without the run's execution right
	d := h.serveOne(call, ctx, call.args)
	end := monoNow()
	if h.obs != nil {
		h.toolEnd(t, d)
	}
	h.led.record(call.seq, name, f, d.outcome(), began, end)
	if st := h.retake(end); st != startGoOn {
		return st
	}
	d.id = call.id
	h.run.settle(d, true)
	return startGoOn
}

// deliver hands a completion made on the run's goroutine (an answer from
// the record, a governed failure) to the event loop.
func (h *hostRun) deliver(d completion) {
	h.mu.Lock()
	h.done = append(h.done, d)
	h.mu.Unlock()
	h.signal()
}

// governedCall serves one live governed call (name is its policy name) and
// records its answer.
func (h *hostRun) governedCall(ctx context.Context, v verdict, name string, id uint32, args []byte,
	do func(ctx context.Context, args []byte) completion) completion {
	d, ran := h.gov.governed(ctx, v, name, args, id, false, do)
	if !ran {
		h.calls.Add(-1) // refused before its handler: no host call
	}
	h.gov.complete(v.seq, d)
	return d
}

// serve runs async calls on one goroutine (a reused one, see gopool):
// the given one, then queued ones while any wait, so the in-flight bound
// holds without a hand-off.
func (h *hostRun) serve(call asyncCall) {
	for {
		h.entered.Done()
		var d completion
		ctx := h.ctxOf(call)
		var t toolObs
		if h.obs != nil {
			ctx, t = h.toolStart(ctx, call.cap, call.provider, call.tool, call.seq)
		}
		if call.gov == nil {
			d = h.serveOne(call, ctx, call.args)
		} else {
			name := call.provider + "." + call.tool
			if call.cap >= 0 {
				name = h.caps.caps[call.cap].Name
			}
			c := call
			var ran bool
			d, ran = h.gov.governed(ctx, *call.gov, name, call.args, call.id, call.cap < 0,
				func(ctx context.Context, args []byte) completion {
					h.mu.Lock()
					h.govEntered = append(h.govEntered, c.seq)
					h.mu.Unlock()
					return h.serveOne(c, ctx, args)
				})
			if !ran {
				h.calls.Add(-1) // refused before its handler: no host call
			}
			h.gov.complete(call.gov.seq, d)
		}
		d.seq, d.led, d.write, d.endedAt = call.seq, call.led, call.write, monoNow()
		if h.obs != nil {
			h.toolEnd(t, d)
		}
		d.id = call.id
		h.mu.Lock()
		if call.cap < 0 {
			h.dlive--
		}
		// A call handed to a waiting worker (claimed) is that worker's: it
		// takes it however the wait ends (awaitCall). Taking it here left
		// this call counted in flight and the waiter's count below zero.
		if h.closed {
			end := h.endDispatch()
			h.mu.Unlock()
			end()
			return
		}
		h.done = append(h.done, d)
		next := len(h.queue) > 0
		if next {
			call = h.queue[0]
			h.queue[0] = asyncCall{}
			h.queue = h.queue[1:]
			if call.cap < 0 {
				h.dlive++
			}
			h.entered.Add(1)
		}
		wait := false
		if !next {
			h.inflight--
			// A worker waits only when it served the run's last call in
			// flight and the run has started calls alone before (a
			// program awaiting calls one after another, not a run making
			// its only call, whose end the wait would only delay): calls
			// started together start their own, and workers waiting beside
			// them would take the processors from them and from the run.
			if wait = h.spin && h.lone >= 2 && h.inflight == 0 && h.spinners == 0 && len(h.claimed) == 0; wait {
				h.spinners++
			}
		}
		h.mu.Unlock()
		h.signal()
		if next {
			continue
		}
		if !wait {
			return
		}
		var ok bool
		if call, ok = h.awaitCall(); !ok {
			return
		}
	}
}

// signal tells the event loop that a completion is in.
func (h *hostRun) signal() {
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

// workerWait is how long a worker that served one of a run's calls waits
// for the run's next call before it leaves. A program awaiting calls one
// after another makes the next a few µs after the last completed; a
// worker already running takes it with no wake-up of a parked goroutine
// on another core (a futex wake and, on a VM, an interprocessor
// interrupt: most of what an async call cost on two cores).
const workerWait = 20 * time.Microsecond

// awaitCall is a worker waiting briefly for the next call of its run,
// yielding its processor meanwhile: the call start hands it over
// (claimed), or the wait ends (false) at workerWait or the run's end.
func (h *hostRun) awaitCall() (asyncCall, bool) {
	end := time.Now().Add(workerWait)
	for {
		runtime.Gosched()
		if h.nclaimed.Load() > 0 || h.ended.Load() || time.Now().After(end) {
			h.mu.Lock()
			if len(h.claimed) > 0 {
				call := h.takeClaimed()
				h.mu.Unlock()
				return call, true
			}
			if h.closed || time.Now().After(end) {
				h.spinners--
				h.mu.Unlock()
				return asyncCall{}, false
			}
			h.mu.Unlock()
		}
	}
}

// takeClaimed takes the first call handed to a waiting worker (mu held).
func (h *hostRun) takeClaimed() asyncCall {
	call := h.claimed[0]
	h.claimed[0] = asyncCall{}
	h.claimed = h.claimed[1:]
	h.nclaimed.Add(-1)
	return call
}

// ctxOf is the context a call's handler gets: the run's for a capability,
// the dispatch's, marked with the call's departure, for a provider tool.
func (h *hostRun) ctxOf(call asyncCall) context.Context {
	if call.cap >= 0 {
		return h.ctx
	}
	return &departureContext{h.dctx, call.departed}
}

// serveOne runs one async call's handler with ctx and args.
func (h *hostRun) serveOne(call asyncCall, ctx context.Context, args []byte) (d completion) {
	if call.cap >= 0 {
		d.result, d.failure, d.failed, d.badArgs = invoke(&h.caps.caps[call.cap], ctx, args, nil)
		return d
	}
	call.args = args
	d.result, d.failure, d.failed = h.callDispatch(ctx, call)
	d.str = !d.failed
	if d.failed {
		d.tool = call.provider + "." + call.tool
	}
	return d
}

// callDispatch serves one provider call through the request's
// DispatchFunc: its answer is the envelope string, a Go error a failure
// with its message, no DispatchFunc the pinned not-found text.
func (h *hostRun) callDispatch(ctx context.Context, call asyncCall) (result []byte, failure string, failed bool) {
	if h.dispatch == nil {
		return nil, ToolNotFoundError{Tool: call.tool}.Error(), true
	}
	defer func() {
		if r := recover(); r != nil {
			result, failure, failed = nil, fmt.Sprintf("panic: %v", r), true
		}
	}()
	answer, err := h.dispatch(ctx, call.provider, call.tool, string(call.args))
	if err != nil {
		return nil, err.Error(), true
	}
	b := make([]byte, len(answer)+1)
	copy(b, answer)
	return b, "", false
}

// glueFailure records a failure of our own code during a host call.
func (h *hostRun) glueFailure(r any) {
	if h.internal == nil {
		h.internal = fmt.Errorf("host call: %v", r)
	}
}

// hostOf finds the host side of the run in progress in the slot behind a
// C handle, making it on the run's first host call.
func hostOf(handle C.uintptr_t) *hostRun {
	return slots.get(uintptr(handle)).call.hostRun()
}

// recoverGlue is deferred first by every export: a panic of our own code
// must never unwind through the engine's frames. It records the failure on
// the run (h is still nil if the panic came before the run was found) and
// sets *status to the export's failure value.
func recoverGlue(h **hostRun, status *C.int32_t, failed C.int32_t) {
	if r := recover(); r != nil {
		if *h != nil {
			(*h).glueFailure(r)
		}
		*status = failed
	}
}

//export go_capability_call
func go_capability_call(handle C.uintptr_t, index C.int32_t, args *C.char, n C.size_t, reply *C.bridge_reply) {
	var h *hostRun
	defer recoverGlue(&h, &reply.status, C.BRIDGE_CALL_INTERNAL)
	h = hostOf(handle)
	h.callSync(int(index), h.borrow(unsafe.Slice((*byte)(unsafe.Pointer(args)), int(n))), reply)
}

//export go_capability_start
func go_capability_start(handle C.uintptr_t, index C.int32_t, id C.uint32_t, args *C.char, n C.size_t) (rc C.int32_t) {
	var h *hostRun
	defer recoverGlue(&h, &rc, -1)
	h = hostOf(handle)
	return h.start(asyncCall{cap: int(index), id: uint32(id), args: C.GoBytes(unsafe.Pointer(args), C.int(n))})
}

//export go_dispatch_start
func go_dispatch_start(handle C.uintptr_t, id C.uint32_t, provider *C.char, np C.size_t, tool *C.char, nt C.size_t,
	args *C.char, na C.size_t) (rc C.int32_t) {
	var h *hostRun
	defer recoverGlue(&h, &rc, -1)
	h = hostOf(handle)
	p, t, inline := h.names(unsafe.String((*byte)(unsafe.Pointer(provider)), int(np)),
		unsafe.String((*byte)(unsafe.Pointer(tool)), int(nt)))
	return h.start(asyncCall{cap: -1, id: uint32(id), provider: p, tool: t, args: C.GoBytes(unsafe.Pointer(args), C.int(na)),
		departed: latchClock.Load(), inline: inline})
}

// names returns a provider call's provider and tool names as strings of
// their own: the request's own strings when they name a declared
// provider and a listed tool (no copy), else copies of C's bytes, which
// are only valid during the callback; and whether the provider declared
// its tools non-blocking.
func (h *hostRun) names(provider, tool string) (string, string, bool) {
	var providers []Provider
	if h.run != nil && h.run.prog != nil {
		providers = h.run.prog.providers
	}
	for i := range providers {
		p := &providers[i]
		if p.Name != provider {
			continue
		}
		for _, t := range p.Tools {
			if t == tool {
				return p.Name, t, p.NonBlocking
			}
		}
		return p.Name, strings.Clone(tool), p.NonBlocking
	}
	return strings.Clone(provider), strings.Clone(tool), false
}
