package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/codemode-go/codemode/internal/jspos"
)

// Provider declares a namespace of tools to the program: its Name becomes
// a const in the program's scope, a Proxy whose every property is an async
// tool function calling the request's [DispatchFunc].
//
// The proxy returns a tool function for every property a program reads,
// listed in Tools or not (Tools is what the model was told about; the
// dispatch decides what a call gets), except symbol keys and `then`
// (awaiting a provider yields the provider and calls nothing), and except
// properties written onto it, which win over the trap.
type Provider struct {
	// Name is the program's name for the namespace: an ASCII identifier,
	// not reserved, not a reserved word, unique in the request.
	Name string
	// Tools lists the tools the model was told about.
	Tools []string
	// APIs describes tools to the model ([ProviderDeclarations]): their
	// descriptions and schemas. A provider with only Tools keeps working;
	// its tools are declared as taking and returning unknown.
	APIs []ProviderTool
	// ObjectArgs makes tools take one options object, sent as the
	// arguments JSON as it is ({} for none). By default a call's arguments
	// are sent as a JSON array ([] for none).
	ObjectArgs bool
	// Prelude is host source that runs after every proxy is declared and
	// before the program, in a block of its own in the entry scope: it can
	// hang helpers on the namespace (store.helpers = {...}).
	Prelude string
	// NonBlocking declares that the DispatchFunc serves this provider's
	// tools without blocking: it honours its context and returns quickly
	// (an in-memory store, a cache, a computation). Its calls then run on
	// the program's own goroutine as they start instead of on a goroutine
	// each (see [Capability].NonBlocking for what that saves and costs).
	NonBlocking bool
	// ProxySource replaces the generated proxy outright: statements in the
	// entry scope that must declare Name. __dispatch, __stringifyForDispatch
	// and __parseForDispatch are in scope. The generated trap's guards go
	// with it.
	ProxySource string
}

// DispatchFunc serves a program's tool calls: the provider name, the tool
// name and the arguments as one JSON string (see [ParseDispatchArguments]).
// It returns the result envelope as a JSON string: {"result": value} or
// {"error": text} ([EnvelopeDispatch] builds it); an object with neither
// gives undefined, and a text that is not a JSON object throws
// [MsgOutsideEnvelope]. A returned error reaches the program as an Error
// carrying its message. Failures the program does not catch end the run
// as kind capability, attributed to "provider.tool". It runs on a goroutine of
// its own per call, at most 32 per run at once, and must be safe for
// concurrent use. Its context carries the run's deadline and ends with the
// caller's context; it does not end when the run returns while a call the
// program did not await is still in the DispatchFunc, so that call can
// finish. It ends once the run has returned and no call is in the
// DispatchFunc: like a request's context, it is for the call's duration.
type DispatchFunc func(ctx context.Context, provider, tool, argsJSON string) (string, error)

// Request is one program for [Executor.Execute].
type Request struct {
	// Code is an async arrow function, `async () => { ... }`, or any
	// expression evaluating to a function, which is called; its result is
	// the run's result. Any other shape models write is taken too (a body,
	// statements whose last expression is the result, a named function, a
	// markdown fence; see the package documentation, What models write).
	// It runs in strict mode with the providers in scope.
	Code string
	// Providers are the namespaces declared to the program.
	Providers []Provider
	// Dispatch serves the tool calls. Without it every call fails with
	// Tool "<tool>" not found.
	Dispatch DispatchFunc
	// RetainHandles keeps the sandbox alive after Execute returns, so the
	// host can call functions the program passed to tools
	// ([ExecuteResult].Retained).
	RetainHandles bool
	// TypeCheck is this request's type check mode (WithTypeCheck); the
	// default is the context's (WithTypeCheckMode), then the executor's.
	TypeCheck TypeCheck
	// Outbound grants this program the network through its handler (see
	// [WithOutbound]), in place of the executor's; nil keeps the
	// executor's (by default none: no fetch at all).
	Outbound http.RoundTripper
}

// ProviderTool describes one tool of a provider to the model.
type ProviderTool struct {
	Name        string
	Description string
	// Params is the JSON Schema of the arguments, in the provider's calling
	// convention: with ObjectArgs the options object's; otherwise an array
	// schema whose prefixItems are the positional arguments (each item's
	// "title" names its parameter). Empty: any arguments.
	Params json.RawMessage
	// Returns is the JSON Schema of the result; empty: unknown.
	Returns json.RawMessage
}

// ExecuteResult is what [Executor.Execute] returns: the program's result as
// codec JSON (binary tagged), or a readable Error; the logs in every case.
type ExecuteResult struct {
	Result json.RawMessage `json:"result,omitempty"`
	Logs   []string        `json:"logs"`
	Error  string          `json:"error,omitempty"`
	// Err is the typed failure behind Error, when the program ran (nil for
	// a refused request).
	Err *ExecError `json:"-"`
	// Retained is the still-running sandbox of a request with
	// RetainHandles whose program did not die; close it when done.
	Retained *Retained `json:"-"`
	// Stats is what the run measured (Elapsed also for a refused request).
	Stats RunStats `json:"-"`
	// Paused, when set, is a governed program that stopped at a call
	// needing a decision (see [Governance]): Result and Error are empty;
	// the program goes on with [Executor.Resume].
	Paused *Paused `json:"-"`
	// Diagnostics are what a type check in warn mode found (see
	// WithTypeCheck): the program ran anyway.
	Diagnostics []TypeDiagnostic `json:"diagnostics,omitempty"`
	// Effects is the ledger of the program's host calls: which tools ran,
	// in order, and how each ended, also when it
	// failed; nil: the program called no tool. Not part of the
	// reference's JSON.
	Effects *Effects `json:"-"`
}

// ReservedProviderNames are the names the entry scope already binds, which
// no provider may take: the codec pair and the dispatch it hands to
// provider source, the console it binds, and its own two parameters. Every
// name starting with __codemode is reserved as well.
var ReservedProviderNames = []string{
	"__dispatch", "__stringifyForDispatch", "__parseForDispatch", "console", "__codemode_rt", "__codemode_program",
}

// providerProblem returns the pinned text refusing the first bad provider
// name of a request, or "".
func providerProblem(providers []Provider) string {
	seen := make(map[string]bool, len(providers))
	for _, p := range providers {
		name := p.Name
		switch {
		case isReservedProviderName(name):
			return fmt.Sprintf("Provider name %q is reserved. Give the provider a name the entry scope does not bind.", name)
		case !isASCIIIdentifier(name):
			return fmt.Sprintf("Provider name %q must be ASCII letters, digits, underscore and dollar, and must not start with a digit.", name)
		case jsReservedWords[name]:
			return fmt.Sprintf("Provider name %q is on the list this executor refuses: every ECMAScript reserved word, the names strict mode reserves, and async. Pick a name outside it.", name)
		case seen[name]:
			return fmt.Sprintf("Provider name %q is declared twice. Give each provider its own name.", name)
		}
		seen[name] = true
	}
	return ""
}

func isReservedProviderName(name string) bool {
	for _, r := range ReservedProviderNames {
		if name == r {
			return true
		}
	}
	return strings.HasPrefix(name, reservedPrefix)
}

func isASCIIIdentifier(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '$' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// contractNames are handed to the program unit after the providers.
const contractNames = "__dispatch, __stringifyForDispatch, __parseForDispatch"

// entrySource generates the entry scope of an Execute program, in two
// parts: the provider scope, which a slot keeps evaluated in its unit
// image (see bridge_image.c, Units), and the function it returns, which runs
// the preludes and the program on every run:
//
//	(async function (__codemode_rt) {
//	'use strict';
//	const __dispatch = …, __stringifyForDispatch = …, __parseForDispatch = …, console = …;
//	const store = __codemode_rt.provider("store", true);   // or the ProxySource
//	return async function (__codemode_program) {
//	{ <Prelude> }
//	return await __codemode_program(store, …, __dispatch, …)();
//	};
//	})
//
// entries memoizes the entry source and its cache key per provider set:
// building the text and hashing it was a tenth of a small Execute.
type entries struct {
	mu sync.Mutex
	m  map[string]*entryUnit
}

type entryUnit struct {
	src   []byte // NUL-terminated; read by C, never written
	key   [32]byte
	names toolNames // its tools' policy names, as calls meet them
}

// maxEntries bounds the memo; past it, it starts afresh.
const maxEntries = 256

func (c *entries) get(providers []Provider) *entryUnit {
	// What the entry depends on, each part length-prefixed (no fmt: this
	// runs on every Execute).
	var buf [512]byte
	b := buf[:0]
	for _, p := range providers {
		for _, part := range [...]string{p.Name, p.ProxySource, p.Prelude} {
			b = strconv.AppendInt(b, int64(len(part)), 10)
			b = append(b, ':')
			b = append(b, part...)
		}
		b = strconv.AppendBool(b, p.ObjectArgs)
	}
	c.mu.Lock()
	u := c.m[string(b)] // no copy: the compiler looks the bytes up as they are
	c.mu.Unlock()
	if u != nil {
		return u
	}
	id := string(b)
	src := entrySource(providers)
	u = &entryUnit{src: src, key: scriptKey("entry", unsafe.String(&src[0], len(src)))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxEntries {
		c.m = map[string]*entryUnit{}
	}
	c.m[id] = u
	return u
}

func entrySource(providers []Provider) []byte {
	var b strings.Builder
	b.WriteString("(async function (__codemode_rt) {\n'use strict';\n" +
		"const __dispatch = __codemode_rt.dispatch, __stringifyForDispatch = __codemode_rt.stringify, " +
		"__parseForDispatch = __codemode_rt.parse, console = __codemode_rt.console;\n")
	for _, p := range providers {
		if p.ProxySource != "" {
			b.WriteString(p.ProxySource)
			b.WriteString("\n;\n")
			continue
		}
		fmt.Fprintf(&b, "const %s = __codemode_rt.provider(%s, %t);\n", p.Name, strconv.Quote(p.Name), !p.ObjectArgs)
	}
	b.WriteString("return async function (__codemode_program) {\n")
	for _, p := range providers {
		if p.Prelude != "" {
			b.WriteString("{\n")
			b.WriteString(p.Prelude)
			b.WriteString("\n}\n")
		}
	}
	b.WriteString("return await __codemode_program(")
	for _, p := range providers {
		b.WriteString(p.Name)
		b.WriteString(", ")
	}
	b.WriteString(contractNames + ")();\n};\n})")
	b.WriteByte(0)
	return []byte(b.String())
}

//go:embed js/runtime.js
var runtimeSource string

// runtimeFile names the runtime's frames, which error renderings drop.
const runtimeFile = "<codemode:runtime>"

// runtimeBytecode is runtime.js compiled once per process, kept in C
// memory for the life of the process (the bridge config points at it).
// Without its source text: it is in every Execute run's image, which each
// run copies back (frames keep their file and lines, which renderings
// drop by).
var runtimeBytecode = sync.OnceValues(func() ([]byte, error) {
	bc, err := compileScriptStripped(runtimeSource, runtimeFile, C.BRIDGE_STRIP_SOURCE)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(C.CBytes(bc)), len(bc)), nil
})

//go:embed js/guards.js
var guardsSource string

//go:embed js/clock.js
var clockSource string

// clockBytecode is clock.js, the Date of a deterministic run, compiled
// once into C memory (it lives as long as the process): a run reads it
// rather than parse it, which was most of a deterministic run's start. Its
// functions print as [native code], as the engine's Date does.
var clockBytecode = sync.OnceValues(func() ([]byte, error) {
	bc, err := compileScriptStripped(clockSource, "<codemode:clock>", C.BRIDGE_STRIP_SOURCE)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(C.CBytes(bc)), len(bc)), nil
})

// guardsFile names the guards' slow paths' frames, which error renderings
// drop.
const guardsFile = "<codemode:guards>"

// guardsBytecode is guards.js (the guarded built-ins' slow paths, see
// bridge_guards.c) compiled once per process, kept in C memory for its
// life: every run's config points at it, and a sandbox reads it only when
// a run needs a slow path.
var guardsBytecode = sync.OnceValues(func() ([]byte, error) {
	bc, err := compileScript(guardsSource, guardsFile)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(C.CBytes(bc)), len(bc)), nil
})

// Execute runs a provider program (the protocol of providers and dispatch):
// Request.Code with each provider declared in its scope, tool calls served
// by Request.Dispatch. It never panics and returns no Go error: a refused
// request, a throw, a syntax error, a timeout or a memory kill is
// ExecuteResult.Error, a readable text (Err holds the typed error when the
// program ran), and the logs come back in every case.
//
// Provider names are checked before anything runs; a refused request has
// no result and calls nothing. A tool call whose provider name, tool name
// and arguments exceed Limits.Payload rejects at its call site and is not
// delivered; a result over it fails the run. A call the program did not
// await has entered the dispatch by the time Execute returns (a [Latch]
// closed after Execute returned still admits it); its answer,
// and any call made after the program settled, is dropped (the latter
// meets [MsgExecutionCompleted] inside the sandbox). Without
// RetainHandles the sandbox is gone when Execute returns, so timers set
// for later never fire.
func (e *Executor) Execute(ctx context.Context, req Request) ExecuteResult {
	if ctx == nil {
		return refusedResult(nilContext(ExecuteName))
	}
	return e.executeObserved(ctx, req, nil, nil)
}

// executeObserved is Execute, Resume's run of an Execute program
// (resumed set), or a session's Execute (sess set), told to the Observer.
func (e *Executor) executeObserved(ctx context.Context, req Request, resumed *govRun, sess *Session) ExecuteResult {
	if e.observer == nil {
		res, _ := e.execute(ctx, req, resumed, sess)
		return res
	}
	ctx, t := e.runStart(ctx, RunKindExecute, resumed, sess)
	res, cached := e.execute(ctx, req, resumed, sess)
	var err error
	switch {
	case res.Err != nil:
		err = res.Err
	case res.Error != "": // refused before it ran
		err = &ExecError{Kind: KindInvalidArgs, Name: ExecuteName, Reason: res.Error}
	}
	e.runEnd(t, res.Stats, res.Paused != nil, cached, err, res.Effects)
	return res
}

// execute is Execute's input to the run's path (run.go) and its outcome
// as an ExecuteResult; cached says the program's bytecode came from the
// cache.
func (e *Executor) execute(ctx context.Context, req Request, resumed *govRun, sess *Session) (res ExecuteResult, cached bool) {
	start := time.Now()
	res.Logs = []string{}
	defer func() { res.Stats.Elapsed = time.Since(start) }()
	defer func() {
		if r := recover(); r != nil {
			res.Err = &ExecError{Kind: KindInternal, Message: fmt.Sprintf("codemode: execute: panic: %v", r)}
			res.Error = res.Err.Message
			res.Result = nil
		}
	}()
	if msg := providerProblem(req.Providers); msg != "" {
		res.Error = msg
		return res, false
	}
	fail := func(err *ExecError) (ExecuteResult, bool) {
		res.Err, res.Error = err, err.describe()
		if res.Effects != nil {
			res.Effects.End = err.Kind
		}
		return res, cached
	}
	runtime, err := runtimeBytecode()
	if err != nil {
		return fail(internalError(ExecuteName, err))
	}
	entry := e.entries.get(req.Providers)
	p := &program{
		name:      ExecuteName,
		mode:      C.BRIDGE_MODE_EXECUTE,
		file:      programFile,
		smap:      sourceMap{file: programFileName, shape: jspos.StrictExpression, src: req.Code, ts: e.ts, mods: e.modules},
		entry:     entry.src,
		runtime:   runtime,
		dispatch:  req.Dispatch,
		providers: req.Providers,
		toolNames: &entry.names,
		retain:    req.RetainHandles,
		outbound:  e.outbound,
		unit:      true,
		unitKey:   entry.key,
	}
	if req.Outbound != nil {
		p.outbound = req.Outbound
	}
	in := runInput{start: start, unit: unitProgram, mode: modeExecute, ownNetwork: req.Outbound != nil,
		resumed: resumed, cacheBC: true}
	if resumed == nil { // a resumed or replayed program was checked as it first ran
		in.typeCheck = e.typeCheckMode(ctx, req.TypeCheck)
	}
	var o outcome
	if sess != nil {
		if req.RetainHandles {
			return fail(&ExecError{Kind: KindInvalidArgs, Name: ExecuteName,
				Reason: "a session's run cannot retain its sandbox (RetainHandles): the session keeps it"})
		}
		p.session, p.unit, p.smap.shape = true, false, jspos.SessionStrictExpression
		in.unit, in.session = unitSessionProgram, sess
		o = sess.do(ctx, p, in)
	} else {
		o = e.do(ctx, p, in)
	}
	cached = o.cached
	res.Effects = o.effects
	if o.refused {
		return fail(o.err)
	}
	if o.logs != nil {
		res.Logs = o.logs
	}
	res.Stats = o.stats
	res.Retained = o.retained
	res.Paused = o.paused
	res.Diagnostics = o.diagnostics
	if o.err != nil {
		return fail(o.err)
	}
	res.Result = o.value
	return res, cached
}

// undeclarable is why a request's declarations cannot go into a
// continuation (a Params or Returns that is not JSON), or "".
func undeclarable(providers []Provider) string {
	for _, p := range providers {
		for _, t := range p.APIs {
			for _, raw := range []json.RawMessage{t.Params, t.Returns} {
				if len(raw) > 0 && !json.Valid(raw) {
					return fmt.Sprintf("provider %q, tool %q: a schema that is not JSON cannot go into a continuation", p.Name, t.Name)
				}
			}
		}
	}
	return ""
}

// programFileName is the name a request's code carries in stack traces.
const programFileName = "program.js"

var programFile = C.CString(programFileName)

// describe is the readable text of an error for ExecuteResult.Error.
func (e *ExecError) describe() string {
	switch e.Kind {
	case KindJS, KindInternal:
		return e.Message
	case KindTimeout:
		return fmt.Sprintf("The program timed out after %dms.", e.DeadlineMS)
	case KindMemoryExceeded:
		return fmt.Sprintf("The program exceeded the memory limit of %d bytes.", e.LimitBytes)
	case KindMemoryBudget:
		return "The host was short of memory (its budget for every program at once, not this program's limit): " + e.Message + "."
	case KindPendingPromise:
		return "The program's promise can never settle: nothing it waits on is outstanding."
	case KindCapability:
		// What the program saw: the host call's failure, an Error with
		// its message (Capability says which call it was).
		return "Error: " + e.Message
	default:
		return strings.TrimPrefix(e.Error(), "codemode: ")
	}
}
