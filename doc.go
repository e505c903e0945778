// Package codemode runs LLM-written JavaScript ("Code Mode") in a fresh,
// fenced QuickJS-ng sandbox per call and hands back one JSON value.
//
// Instead of paying one model round trip per tool call, a model writes one
// program that calls host tools as functions; the host serves those calls in
// Go, under memory, stack and wall-clock limits. The engine is QuickJS-ng
// (see package [github.com/codemode-go/codemode/quickjs]), driven through a
// thin cgo shim: Go never holds an engine value, and every limit is decided
// in C from facts C has.
//
// # Which API do I use?
//
//   - A Go service whose tools are Go functions: [Executor.Run] with
//     capabilities ([WithCapability], [Func] for typed ones). The script
//     calls them as globals; one JSON value comes back.
//   - A host that routes tool calls by name (MCP servers, remote APIs):
//     [Executor.Execute] with providers and a [DispatchFunc]; each provider
//     is a namespace in the program's scope ([ProviderDeclarations] tells
//     the model about it).
//   - An agent loop that hands a model one tool: [NewCodeModeTool] (run_js),
//     its description the tools' TypeScript declarations ([Declarations]),
//     [CodeModeTool.Invoke] saying whether a result is an error.
//   - Tools written in JavaScript, run in the sandbox: [Executor.Register]
//     once (compiled, self-tested), then [Executor.Call].
//   - Thousands of scripts to evaluate: package
//     [github.com/codemode-go/codemode/batch] (concurrency, per-job limits,
//     outcomes in input order), or the codemode command line
//     (cmd/codemode: run, batch, describe).
//   - A run to repeat exactly: [WithDeterminism] fixes Math.random, crypto
//     and the clock; every result carries [RunStats] (elapsed time, host
//     calls, peak memory).
//
// Each has a runnable example in example_test.go: pkg.go.dev shows them
// beside the names (`go doc` does not print examples), and
// `go test -run Example -v` runs them.
//
// # Sandbox
//
// [Executor.Run] executes a script as the body of an async function (or
// any other shape models write: see What models write):
//
//	res, err := exec.Run(ctx, `
//		const rows = [3, 1, 2].sort()
//		return { first: rows[0], n: rows.length }`)
//	// res.Value = {"first":1,"n":3}
//
// A top-level return gives the result, serialized with JSON.stringify;
// undefined (or no return at all) gives null. await works; promises settle
// through the microtask queue. The script is an async function's body as it
// is (its directives and function declarations are the function's own),
// and it cannot escape that function: a script that closes it early
// (`}); (async () => {`) is a syntax error (the parser reads one that does
// as no body, and such a script, or one too large to read, goes into a
// labelled block the engine itself cannot let it leave).
// codemode needs cgo and a C toolchain: without cgo the package does not
// build, with one error that says so.
//
// Every position in an error is a line and column (in characters) of the
// source the model wrote: never inside codemode's wrapper, never past the
// source's last line. The engine records a position only at calls, `new`,
// operators, expression statements and throws, so before compiling a new
// source codemode parses it (github.com/dop251/goja/parser, which reads
// nothing but the source) and puts a marker `0;` before every statement
// that records none (a return, a declaration, an if, a loop...) and `;0;`
// before a loop body's closing brace; the engine drops the markers' code
// and keeps their positions, which stand for their statements. An error
// in `return u.address.city` is reported on that line, not on an earlier
// statement's. Function.prototype.toString gives a function's text as the model
// wrote it, the markers taken out again.
//
// Where a failure happened: the frame that threw is then placed at the
// expression its message names, when exactly one such expression lies
// between the statement's (or operator's, or call's) position and the next
// the engine records (in an arrow whose body is an expression, where it
// records none, the one such expression in the arrows that begin on the
// line it reports): `return a.nope.deeper` at `deeper` ("cannot read
// property 'deeper' of undefined"), `foo()` at `foo` ("foo is not
// defined"), `for (const x of o.list)` at `o.list`; a frame below it at the
// name of the function it called, as V8 places a call. A call of a global
// function or of a global's method (`get_user(...)`, `store.get(...)`, a
// capability's or a provider tool's call, unless the source declares that
// name or it is a built-in) is marked: its last argument passes through
// __codemode_at(arg, K), a native function that records the call's site for
// the host call it makes (one native call; BenchmarkHostCall shows no
// difference above its noise). A failure of that call that
// escapes carries the site: [ExecError] Line and Column, in its JSON too,
// name the call that failed, at the tool's name, wherever the failure was
// caught and rethrown. A tool called through an alias (const g = store.get;
// g()), or a value thrown that is no Error, has no place. A syntax
// error is placed on the engine's line at the parser's column; a source
// that ends too early (an open brace, string, template or comment) is
// placed just after its last character, and a brace the source never
// opened at that brace. Stacks a script prints with console.log are
// rewritten the same way. A source the parser does not accept runs as it
// is, with the engine's positions.
//
// No parser in Go reads a source before its bounds are checked (a Go stack
// overflow ends the process; see package internal/jspos): a source of at
// most 1,024 tokens that could nest is read at once; a larger one only when
// a linear lexer finds it nested at most 1,024 levels deep, with no
// expression of more than 10,000 operators, and the engine's own parser (in
// a runtime of its own, with a stack limit) has accepted it, so the parser
// that places positions never meets an error it would recover from. A
// source past the bounds is compiled as it is, a body with no shape (the
// engine's parser decides), and its compile error says which bound it
// passed; TypeScript is stripped only within bounds of its own (256 levels,
// and at most 8 parenthesized expressions followed by a colon in nested
// conditionals, where esbuild's backtracking doubles its time). The
// preparation is part of the run: it counts against the deadline and the
// context, and a large source is prepared on a goroutine the run abandons
// when either ends.
//
// Every run gets a fresh sandbox: nothing one run writes (globals,
// prototypes, the Symbol registry, timers, pending jobs, anything) is
// visible to the next. Fresh is cheap: a sandbox (see Concurrency) is
// built once, in an arena of its own, with the intrinsics, the console,
// the timers and the capabilities (and, in a second image for Execute,
// codemode's runtime); the used part of the arena is kept as an image and
// copied back before every run, over the same addresses, zeroing whatever
// lies past it. The first two sandboxes of an executor build their images;
// every later one clones the first: it copies the image to its own
// addresses and moves the pointers in it, which the executor learnt by
// comparing the two (a burst of a thousand new sandboxes costs a copy
// each, not a build). A trivial run costs a few
// microseconds. Math.random is reseeded for
// every run from a CSPRNG, so no two runs share a sequence. Built with
// -tags codemode_checked, every run instead builds a runtime on libc and
// frees it afterwards, so the engine's own assertions catch a leaked
// reference; the test suite runs in both modes. The sandbox has the
// standard library of the language: Object, Function, Error, Array, String,
// Number, Boolean, Symbol, BigInt, Math, Reflect, JSON, Date, RegExp, Map,
// Set, WeakMap, WeakSet, Promise, Proxy, ArrayBuffer, the typed arrays and
// DataView, eval and Function (scripts compile inside the sandbox, under
// its limits), setTimeout, setInterval and their clear functions, and the
// web globals models reach for: TextEncoder and TextDecoder (UTF-8; to
// decode, every encoding of the Encoding Standard: UTF-16 and the legacy
// ones, windows-1252, Shift_JIS, GBK and the rest; fatal and stream as in
// browsers), atob, btoa, structuredClone, queueMicrotask,
// performance.now (milliseconds since the run began), crypto.getRandomValues
// and crypto.randomUUID (from the run's generator, seeded from a CSPRNG as
// Math.random is), URL and URLSearchParams (the WHATWG URL Standard, IDNA
// included; the web-platform-tests' URL cases pass), AbortController, AbortSignal, Event, EventTarget and
// DOMException. They cost a run nothing until it reads one (each is an
// accessor until then, and what could tell, Object.getOwnPropertyDescriptor,
// defineProperty, freeze and the like on the global object, sees its value
// first). The typed arrays are made the same way, on first use. There is no
// Intl; toLocaleString is the engine's.
// It has no ambient authority: no require, process, network, filesystem,
// environment or module loader (import() rejects), and no fetch unless the
// host grants the network ([WithOutbound], [Request].Outbound: every
// request goes through the host's [http.RoundTripper]). Host access is
// only through capabilities, providers and that handler.
//
// console.log, info, warn, error and debug append one line each to
// [Result].Logs: strings as they are, other values as compact JSON (String(v)
// when JSON has no text for them), separated by spaces; the levels other than
// log are prefixed "[info] ", "[warn] ", "[error] ", "[debug] ". Past
// [Limits].Logs further lines are dropped and one final line says how many.
//
// # What models write
//
// Every entry point ([Executor.Run], [Executor.Execute], [CodeModeTool],
// a registered tool's self-test) takes the shapes models write, each with the value a reader expects:
//
//   - a function body, with top-level return and await (Run's own shape);
//   - an arrow or function expression, sync or async, with or without a
//     trailing semicolon (Execute's own shape): it is called;
//   - a lone named function declaration (`async function main() {...}`):
//     it is called;
//   - `export default` followed by any of these, an expression or a class;
//   - statements with no return statement whose last statement is an
//     expression: its value is the result (`const x = 10; x * 2` is 20;
//     a body ending in a declaration or a loop gives null);
//   - an expression that is no statement (an object literal);
//   - any of these inside markdown fences (```, ```js, ```javascript,
//     ```ts, ```typescript, ```jsx, ```tsx), prose around them dropped:
//     the code of every such fence, in order, is one program (a helper in
//     one fence and its call in the next run together), and fences of
//     another language (```json, ```bash) are prose.
//
// A "use strict" directive that begins the source makes it strict code. An
// import declaration is refused with what is true: a program runs as a
// script; the sandbox's only modules are the host's ([WithModules]),
// loaded with `await import(name)`.
//
// The parser decides (github.com/dop251/goja/parser, the one that places
// positions): the source is tried as a body first, so a body stays a body
// (one starting with a parenthesis too), and only a source that parses in
// no other way is read as an expression. A fence is read when the source
// holds one, unless its backticks are the source's own code (a comment, or
// a string). What a shape needs (a call, a return) is inserted and mapped
// back, and what a fence or `export default` takes is blanked, not cut, so
// every position stays the model's own line and column.
//
// A source that is JavaScript in no shape is TypeScript when the executor
// has a stripper: import github.com/codemode-go/codemode/typescript (its
// own module, esbuild; see [TypeScript]) and every executor strips type
// annotations, interfaces, generics, as, satisfies, declare and access
// modifiers, compiles enum and namespace, and places every error at the
// TypeScript source's line and column. Type-only imports and exports
// (import type, import { type A }, export type, export interface) are
// erased, as any compiler erases them, and the program runs as the script
// it is (top-level return and await included); so is, as in TypeScript,
// an import none of whose names the program uses as a value. An import
// whose value it uses is refused as above. JavaScript that parses never
// reaches the stripper.
//
// Binary data crosses as the envelope of Execute's codec: a typed array,
// DataView or ArrayBuffer in a result or in a capability's arguments, at
// any depth, is {"__executor_binary_v1__": "Uint8Array", "data":
// "<base64>"}, and such an envelope in a capability's result (a []byte
// anywhere in the value a handler returns) reaches the script as the
// typed array it names.
//
// # Limits
//
// [Limits] bound every run: heap bytes, native stack bytes, result bytes,
// log bytes and wall-clock time. The zero value of a field means its
// default, never "unlimited" (see [DefaultLimits]). The deadline counts
// from the moment Run is entered, or is the caller's context deadline when
// that comes first (a timeout either way, whose deadline_ms is the budget
// the run had), and is checked in C, on the engine's own
// interrupt polls, against CLOCK_MONOTONIC: a busy loop stops within tens
// of microseconds of it, as do regular-expression backtracking and floods
// of microtasks. The memory limit is enforced by the sandbox's allocator.
// Both are sticky: once either has fired the run's outcome is that error,
// whatever the script does afterwards; catching the interrupt or the
// out-of-memory error changes nothing, while a script's own
// `throw new Error('out of memory')` stays an ordinary js error. Deep
// recursion past [Limits].Stack throws a catchable RangeError.
//
// The engine polls in its bytecode loop and on every call; a few built-ins
// loop in C without either (on an array whose length is 2^32 - 1 and that
// holds nothing, a.indexOf(1) would run four billion iterations). Those
// methods of Array.prototype and String.prototype are guarded in every
// sandbox: an ordinary receiver goes to the engine's own method, one that
// could make it loop long (a length no dense array could have, a length
// that cannot be read without running code, a string search whose naive
// cost is large) to the same algorithm in JavaScript, which polls. They
// keep their names, lengths and semantics; stacks show one frame for
// them. The deadline, a cancellation and Close stop them as they stop a
// loop. (Converting one of the largest BigInts the engine allows to a
// string still runs in C for over a second, and compiling a very large
// source for a large fraction of one: see RATIONALE.md.)
//
// # Capabilities
//
// A [Capability] is a Go function injected into every sandbox as a global
// JS function ([WithCapability], [Executor.AddCapability]). The script
// calls it with one argument object, which crosses as JSON; the handler's
// return value crosses back as JSON (a json.RawMessage passes untouched).
// Names are checked, never spliced into source: a capability must be a
// JavaScript identifier, not a reserved word, not a built-in global, not in
// the __codemode namespace; [JSIdentifier] mangles any tool name into one.
//
// A synchronous capability looks synchronous to the script and is served
// inline, on the goroutine running the script (a hand-off to another
// goroutine inside a cgo callback costs tens of µs). An async capability
// returns a Promise at once and runs its handler on a goroutine of its own,
// started before the call returns to the script, so a call the script does
// not await has still begun by the time the run returns. At most 32
// handlers of a run are in flight; further calls wait their turn, in call
// order. A handler's error rejects (or throws) a plain Error with exactly
// the handler's message, which the script may catch; escaping the script
// it ends the run as kind capability, attributed from host-side state (a
// caught and rethrown failure stays a capability error, a look-alike Error
// the script made itself stays js). A panicking handler is recovered and
// reported the same way.
//
// Every handler's context carries the run's deadline and ends when the run
// ends, its caller's context ends, or the executor closes. A synchronous
// handler that returns after the deadline makes the run a timeout; an async
// one that ignores its context is abandoned at the deadline.
//
// An async handler the host declares non-blocking ([Capability].NonBlocking,
// [Provider].NonBlocking: it honours its context and returns quickly) runs
// on the program's own goroutine as its call starts, and its promise is
// settled there: the call costs what a synchronous one does, with no
// hand-off to another core, and such a handler that blocks anyway holds the
// run as a synchronous one does. A worker that served a run's calls awaited
// one after another waits briefly for the next, so even undeclared handlers
// rarely wait for a parked goroutine to wake.
//
// Between runs a sandbox is its snapshot image copied back; on Linux 6.7 or
// later only the pages the last run wrote are ([SandboxRestores]).
//
// A capability's Params is checked before its handler runs: an argument
// that fails it throws a catchable TypeError naming the capability and the
// path ("search: `query` is required"), and the handler never runs
// ([Capability].Unchecked turns it off). [Func] makes a capability of a
// typed Go function, its schemas inferred from the Go types and its
// argument decoded for it; Returns tells the model what comes back. A
// []byte anywhere in a handler's result reaches the script as a
// Uint8Array. [Grant] narrows a run to some capabilities: the others are
// absent from its sandbox.
//
// # Providers
//
// [Executor.Execute] runs a provider program ([Request]): Code is an async
// arrow function run in strict mode, and each declared [Provider] is a
// const in its scope, a Proxy whose every property is an async tool
// function. Calling store.findUser('ada') sends three strings to the
// request's [DispatchFunc]: the provider, the tool, and the arguments as
// one JSON string (a JSON array by default, the one options object with
// ObjectArgs). The dispatch answers with the result envelope, a JSON
// string: an object with a truthy "error" throws an Error carrying that
// text; any other object gives its "result" at the call site (undefined
// when it has none, so {} and {"value":1} give undefined); a text that is
// not a JSON object at all (a string, a number, an array, null, or not
// JSON) throws [MsgOutsideEnvelope]. A tool failure the program lets
// escape ends the run as kind capability, attributed to
// "provider.tool". [EnvelopeDispatch] builds the envelope from plain Go
// values and checks a [Latch]; [ParseDispatchArguments] turns the arguments
// into a slice; [ToolNotFoundError] composes the pinned refusal.
//
// Values cross through a codec: an ArrayBuffer, a DataView or any typed
// array becomes {"__executor_binary_v1__":"<Type>","data":"<base64>"} (a
// view sends only its visible bytes) and revives as the same type in the
// sandbox; in Go it is []byte, at any depth of a value
// ([StringifyForDispatch], [ParseForDispatch]). A function passed to a tool
// becomes a [Handle]; with RetainHandles the sandbox outlives Execute as a
// [Retained] and the host can call the function back. Each
// [Retained.Call] has a fresh deadline: a promise that can never settle
// (no timer left) ends it at once as pending_promise, one still pending at
// the deadline as timeout, and the sandbox lives on; code that runs past
// the deadline or the memory limit is killed with its kind, and the
// sandbox with it (the error also matches [ErrRetainedClosed]).
//
// The program's names are checked before anything runs: a provider name
// must be an ASCII identifier, not one the entry scope binds
// ([ReservedProviderNames]), not a reserved word (nor async), and unique;
// each rule refuses with its own pinned text and nothing is called. Each
// call's provider name, tool name and arguments are measured against
// [Limits].Payload before they leave the sandbox; a call past it rejects at
// its call site. A call the program does not await has entered the
// dispatch before Execute returns and keeps running (its context carries
// the deadline but does not end with the run); its answer is dropped, and
// a call made after the program settled meets [MsgExecutionCompleted]
// without reaching the dispatch.
//
// # Governed tool calls
//
// [WithGovernance] sets the host's policy over the tool calls of every run
// ([Governance]): per tool (a capability by its name, a provider tool as
// "provider.tool", a [CodeModeTool]'s by its JavaScript name, an MCP
// upstream's as "server.tool"; "*" for the rest) a timeout per call, a cap
// on calls in flight, a budget of calls per run, and whether a call
// requires approval ([ToolPolicy]). A call past its timeout or budget
// fails inside the program with a catchable Error saying which tool and
// which limit; the run goes on.
//
// A call that requires approval waits for a [Decision]: approve, reject
// with a reason (the program catches `tool "<tool>" was rejected:
// <reason>`), or approve with edited arguments. An [Approver] decides
// while the run waits (within its deadline). Without one the run pauses
// at the call: Run's [Result] and Execute's [ExecuteResult] carry a
// [Paused] — the call, and a continuation: self-contained bytes,
// authenticated with the Governance Key (optionally sealed: Encrypt), that
// expire (TTL), holding the program, its providers, limits, seed and clock,
// and every call it made with its answer. A run that may pause is
// deterministic (a fresh seed and a virtual clock unless ctx fixes them:
// [WithDeterminism]). [Executor.Resume], in any process whose executor
// has the key and the same limits, runs the program again from its start:
// every recorded call is answered from the continuation (no tool runs
// twice), the paused call gets the decision, and the run goes on live, to
// its end or its next pause. A program that does not repeat its record
// ends with kind [KindDiverged]. Calls in flight beside the paused one (a
// Promise.all of a read and a gated write) finish first, within the
// deadline, and their answers go into the continuation; calls the program
// would make after the gated one are not made until it resumes. Resuming
// the same continuation twice runs it twice, from the same record, unless
// Governance.Redeem refuses ([SingleUse] for one process). SECURITY.md
// says what a continuation reveals.
//
// # Observing runs
//
// [WithObserver] tells an [Observer] of every run (its kind, outcome,
// elapsed time, host calls, peak memory, whether its bytecode was cached)
// and of each tool call (its tool, outcome and, when governed, what the
// policy decided). The context the Observer returns for a run becomes the
// run's, and the one it returns for a call is the handler's: a span the
// first carries is the parent of the calls', and a handler's own spans
// nest under its call. The module github.com/codemode-go/codemode/otel
// makes OpenTelemetry spans and metrics of it; the root module depends on
// no telemetry library, and without an Observer nothing is measured.
//
// # What a run did to the world
//
// Every run records its host calls in its [Effects] ledger: each call's
// seq, tool, declared [Effect], outcome and elapsed time, in order (the
// first [LedgerHead] and the last [LedgerTail] kept, the rest counted),
// with exact counts of what started, completed, failed or did not return.
// [Result].Effects and [ExecuteResult].Effects carry it, also beside a
// failed run's error, and [Effects.Summary] says whether a retry can
// repeat a write: "no tool ran", "only reads ran", or "store.put
// completed before the timeout". A tool is a write unless its
// [ToolPolicy] marks it [EffectRead]. CodeModeTool's failures show the
// ledger to the model as "effects".
//
// # Outputs shaped to a budget
//
// [ShapeJSON] cuts a JSON value structurally to a byte budget (arrays keep
// their first items, strings their start, objects name what they left
// out; valid JSON, deterministic), [ShapeLogs] keeps logs' first and last
// lines. CodeModeTool shapes its output to [WithOutputBudget] (default
// [DefaultOutputBudget]) and tells the model what was cut under "shaped";
// Run and Execute give exact values.
//
// # Event loop
//
// The event loop lives in Go, between cgo calls: C runs the program and its
// jobs until nothing is runnable and reports whether the program's promise
// settled; if it has not, Go waits for the next async completion or timer,
// under the deadline, the caller's context and the executor's life, and C
// settles it and runs jobs again. A promise that is pending with nothing
// outstanding (no host call in flight, no timer) can never settle and ends
// the run as pending_promise. When the program settles the run is over:
// completions arriving later are dropped, timers set for later never fire,
// and the handlers' contexts end.
//
// # Registered tools
//
// [Executor.Register] turns a [ToolSource] (a name, a description, a JSON
// Schema of its arguments, and JavaScript evaluating to a function) into a
// tool in four stages: shape (the name, the schema, no duplicate; also
// [Executor.Validate]), compile, instantiate (the source must evaluate to a
// function) and the optional self-test, the last three in one fresh sandbox
// with the executor's limits and capabilities. A failure is a
// [*RegisterError] tagged with its stage; a failed registration stores
// nothing. [Executor.Call] checks the arguments before any sandbox exists
// (a JSON object, the required keys, then the whole schema, compiled once
// with github.com/santhosh-tekuri/jsonschema, so the reason names the
// argument and what is wrong with it) and runs the tool from cached
// bytecode in a fresh sandbox. Arguments that are not valid UTF-8 (which
// the engine's JSON parser refuses and Go's decoders accept) are
// invalid_args too, as is JSON nested deeper than the sandbox's stack can
// parse. Call never writes into the caller's buffer.
//
// A schema is compiled by a compiler that loads nothing: no file, no
// network, no loader at all. Only the schema's own parts resolve ("$ref":
// "#/$defs/..."); a reference that leaves the document, and a "$schema"
// that is not a built-in draft, are invalid_schema with a reason that names
// it. Before compiling, a schema must be at most [MaxSchemaBytes] (256 KiB)
// and nest objects and arrays at most [MaxSchemaDepth] (128) levels deep.
//
// # Bytecode cache
//
// Sources compile once: run_js scripts, Execute programs and tool sources
// are compiled inside their first sandbox, under its limits, and their
// bytecode is kept, keyed by an HMAC-SHA256 (keyed with a per-process secret)
// of the engine version, the shim version, the kind of source and the
// source. Later runs read the bytecode (several times cheaper than
// compiling; a 2,000-line tool runs over 5× faster). Only bytecode this
// process wrote is ever read. The cache is shared across tool names, bounded
// in bytes ([WithCacheSize]) with least-recently-used eviction of scripts,
// and never evicts a registered tool's bytecode; [Executor.Deregister]
// frees what no other tool shares. [Executor.CacheStats] reports it.
//
// # Code Mode
//
// [NewCodeModeTool] packages the whole surface as one [Tool] named run_js:
// host tools become async capabilities under [JSIdentifier] names (their
// arguments checked against their schemas; [WithSyncTools] for the
// reference's sync-looking calls), the description declares them to the
// model in TypeScript ([Declarations]; [DescribeListing] is the reference's
// one-line form), and a call runs the model's script. Model-repairable
// failures come back as results (the [ExecError] JSON, plus the logs) with
// a nil Go error, so a tool loop feeds them back to the model, and
// [CodeModeTool.Invoke] says which results are errors; only internal
// failures are Go errors. [CodeModeTool.Granted] narrows a tool to some of
// its tools. [Executor.SandboxTool] exposes one registered tool as a [Tool].
// Capabilities and tools can be typed Go functions ([Func], [FuncTool]);
// [WithModules] gives scripts host ES modules to import.
//
// # Errors
//
// Every failure of a run is an [*ExecError]. Its Kind is the reference
// executor's tag (js, timeout, memory_exceeded, pending_promise, internal,
// and for tools not_found, invalid_args, capability), and
// [ExecError.LLMJSON] is the kind-tagged JSON a generating model reads to
// repair its script, e.g. {"kind":"timeout","name":"run_js","deadline_ms":500}.
// Run errors are attributed to [RunJSToolName]. A js message carries the
// error's class, its message and the stack ("TypeError: x is not a
// function\n    at f (script.js:3:5)"); a thrown value that is not an Error
// reads "Uncaught " and the value. A BigInt or a cyclic result is a js
// error, never garbage.
//
// Callers switch on Kind, never on message text. errors.Is matches a
// timeout against [ErrTimeout] and context.DeadlineExceeded (a caller's
// context deadline is a timeout too), a run stopped because its caller
// cancelled against context.Canceled, and any use of a closed executor
// against [ErrClosed]; those two are kind internal, the only kind a model
// cannot repair. Like the deadline and the memory limit, a cancellation is
// sticky: once the caller cancelled, the outcome is the cancellation,
// even if a host call then fails because of it and the script catches
// that.
//
// A host call's failure that escapes is kind capability however it
// escaped (thrown where the call was made, caught and rethrown, or a
// rejection), in Run, Call, Execute and retained calls: Capability names
// the capability, or "provider.tool" for a provider tool, and Message is
// the handler's or the dispatch's own message. Execute's errors are
// attributed to [ExecuteName].
//
// # Concurrency
//
// An [Executor] is safe for concurrent use; each run has its own sandbox
// and no two goroutines ever touch one sandbox. A run holds two resources
// for different spans:
//
//   - A sandbox, from its start to its end, waits on host calls and timers
//     included: at most [WithSlots] runs are alive at once (default
//     [DefaultSlots], 1,024). Sandboxes are made on demand and reused, the
//     most recently used first. One costs its resident pages, about 130
//     KiB for a trivial run (its arena is reserved for twice the memory
//     limit and committed only as used). Once idle for a second, the most
//     recently used keep their pages while their sum stays within
//     [WithIdleMemory] (default [DefaultIdleMemory], 32 MiB), so the next
//     burst reuses them without the kernel making a page again; beyond
//     that, a few warm ones (twice the concurrency, at least 4) give the
//     pages above their images back (keeping those while they fit) and
//     the rest are freed. After a burst of a thousand runs that each
//     touched 4 MiB, an idle executor holds the budget and a few MiB.
//   - The right to execute JavaScript, only while the engine runs
//     (evaluating, running jobs, settling a host call's result, firing a
//     timer): at most [WithConcurrency] runs at once (default GOMAXPROCS).
//     A run awaiting an async capability holds none, and neither does a
//     synchronous capability's handler while it runs (it blocks its own
//     goroutine). So a thousand runs awaiting a 100 ms host call all finish
//     in about 100 ms on two cores. Runs that have started get a free right
//     before runs that have not, each group first come first served: a
//     run under way is not crowded out of its deadline by a burst of new
//     ones.
//
// A run that finds every sandbox in use queues, first come first served.
// The wait counts against its deadline (the caller's latency bound holds),
// and a run that never got a sandbox, or an execution right, before its
// deadline or its context ended fails with an error matching [ErrBusy]
// (kind internal: the host's overload, not the script's fault; matching
// context.Canceled too when its context was cancelled) and never with a
// timeout. A run that started and ran out of time is a timeout as before.
// With [WithQueueTimeout] the deadline counts the run's own time instead:
// its waits for a sandbox or a right are not charged to it (they are
// bounded apart), so a run's outcome does not depend on what runs beside
// it — what package batch and the command line use.
// [WithSlots](1) makes consecutive runs share one sandbox.
//
// # Memory
//
// Each run's heap is bounded by Limits.Memory; a [MemoryBudget] bounds
// their sum. Every executor shares [DefaultMemoryBudget] — three quarters
// of what the process may use: its cgroup's memory limit, or GOMEMLIMIT,
// or else the machine's memory — unless [WithMemoryBudget] gives it
// another (one budget may serve several executors; nil bounds nothing).
// A budget is charged for what sandboxes hold resident, as they grow, not
// for the sum of their limits: their pages and images, in 256 KiB chunks
// as they grow and to the page once a run ends, given back as runs end
// and as idle sandboxes return their pages (idle pages count until then;
// a run waiting for room to start, or whose sandbox cannot grow, has idle
// sandboxes give theirs back first). A run that finds no room to open its
// sandbox waits for some within its deadline ([WithMemoryWait] bounds the
// wait; zero refuses at once) and otherwise fails with kind [KindMemoryBudget],
// matching [ErrMemoryBudget] and [ErrBusy]: no code of it ran. A run
// whose sandbox cannot grow is stopped with the same kind (matching
// ErrMemoryBudget only): not memory_exceeded, which is its own limit.
// Runs that stay small are not starved by ones that grow: a sandbox past
// [MemoryStats].Small (Budget/64, 2 to 32 MiB) grows only while the sum
// stays below Budget − Reserve (an eighth), a new run starts only below
// Budget − Reserve/2, a small sandbox grows up to Budget − Reserve/4, and
// a tiny one (what a new sandbox holds once open, and 512 KiB) may take
// the rest: a run just admitted finishes its small work. 200
// runs each growing toward a 64 MiB limit under a 512 MiB budget peak at
// 448 MiB charged and about 450 MiB of RSS, while small runs beside them
// all succeed (TestMemoryBudgetBurst). New refuses a budget below
// [MinMemoryBudget] of the executor's memory limit: one run at its limit
// must fit.
//
// A retained sandbox ([Request].RetainHandles) holds its slot until it
// closes. A run executes on the calling goroutine, in cgo calls, without
// runtime.LockOSThread: the engine re-reads its stack top at every entry.
// Cancelling the run's context stops it at the engine's next poll.
// [Executor.Close] stops the runs in progress, waits for them and frees
// the executor.
package codemode
