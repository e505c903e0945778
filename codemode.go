//go:build cgo

package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// RunJSParameters returns the JSON Schema of run_js's arguments: one
// required string, code, the body of an async function that returns a
// JSON-serialisable value (or any other shape Run accepts).
func RunJSParameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":` +
		`"The body of an async JavaScript function (or an arrow function, which is called). Call the APIs as global functions, use await freely, and return one JSON-serializable value."}},` +
		`"required":["code"]}`)
}

// ToolAPI is one entry of the JavaScript API listed to the model.
type ToolAPI struct {
	JSName      string          // the global the tool is callable under (see JSIdentifier)
	Description string          // what it does
	Parameters  json.RawMessage // the JSON Schema of its arguments object
	Returns     json.RawMessage // the JSON Schema of its result; empty: unknown
	Async       bool            // the call returns a Promise (Declarations)
}

// The execution contract at the head of Describe, in parts: what code
// is (JavaScript, or with a stripper TypeScript too), how it runs, which
// globals it has, and what it has not (the network, unless granted).
const (
	contractJS  = "Run JavaScript to do the task in one step. `code` is the body of an async function "
	contractTS  = "Run JavaScript or TypeScript to do the task in one step. `code` is the body of an async function "
	contractRun = "(an arrow or a named function is called; without a return, the last expression is the result): " +
		"call the APIs below as global functions, use await freely, and return one JSON-serializable value, which is " +
		"the result. "
	contractSync  = "Each API takes one arguments object and returns its result; a failed call throws an Error you can catch. "
	contractAsync = "Each API takes one arguments object and returns a Promise of its result (await it; Promise.all runs " +
		"calls at once); a failed call rejects with an Error you can catch. "
	// contractProviders is contractRun and contractAsync for providers'
	// tools, which are methods of their namespaces.
	contractProviders = "(an arrow or a named function is called; without a return, the last expression is the result): " +
		"the APIs below are methods of their provider's namespace, called as their declarations say, each returning a " +
		"Promise of its result (use await freely; Promise.all runs calls at once); a failed call rejects with an Error " +
		"you can catch. Return one JSON-serializable value, which is the result. "
	contractGlobals = "Web globals: TextEncoder, TextDecoder, atob, btoa, structuredClone, URL, URLSearchParams, " +
		"crypto.randomUUID, performance.now, setTimeout, AbortController. "
	contractOffline = "There is no filesystem, no network, no import and no Intl; console.log output comes back with the result."
	contractOnline  = "fetch reaches the network the host allows; there is no filesystem, no import and no Intl; " +
		"console.log output comes back with the result."
	// contractSession ends the contract of a tool that keeps a session
	// per conversation (WithSessions).
	contractSession = " State persists between calls in this conversation: what a call declares at its top level " +
		"(const, let, function, class) and puts on globalThis is there in the next call (declaring the same const or " +
		"let again is an error: assign it instead); a call that fails changes nothing."
)

// describeContract is the contract of an executor without TypeScript or
// the network.
const describeContract = contractJS + contractRun + contractSync + contractGlobals + contractOffline

// contract is the contract for an executor that strips TypeScript (ts),
// grants the network (net), or whose APIs return promises (async).
func contract(ts, net, async bool) string {
	head, calls, tail := contractJS, contractSync, contractOffline
	if ts {
		head = contractTS
	}
	if async {
		calls = contractAsync
	}
	if net {
		tail = contractOnline
	}
	return head + contractRun + calls + contractGlobals + tail
}

// Describe generates the default run_js description: the execution
// contract, then the APIs as TypeScript declarations ([Declarations]:
// typed inputs and outputs, JSDoc from the descriptions), then a short
// example. The contract says calls return promises when every API is
// Async, and that TypeScript is fine when a stripper is registered
// ([RegisterTypeScript]). With no APIs it is the contract alone.
// [DescribeListing] is the reference's one-line-per-API form.
func Describe(apis []ToolAPI) string {
	async := len(apis) > 0
	for _, a := range apis {
		async = async && a.Async
	}
	return describeDeclared(apis, contract(registeredTypeScript() != nil, false, async))
}

// DescribeProviders is Describe for an Execute program's providers: the
// execution contract (calls return promises), the providers' declarations
// ([ProviderDeclarations]) and an example call ([ProviderExample]), which
// runs as written.
func DescribeProviders(providers []Provider) string {
	head := contractJS
	if registeredTypeScript() != nil {
		head = contractTS
	}
	c := head + contractProviders + contractGlobals + contractOffline
	if len(providers) == 0 {
		return c
	}
	d := c + "\n\nAPIs (TypeScript):\n" + ProviderDeclarations(providers)
	if ex := ProviderExample(providers); ex != "" {
		d += "\n" + ex
	}
	return d
}

// describeDeclared is the contract, the declarations and an example.
func describeDeclared(apis []ToolAPI, contract string) string {
	return description(contract, "APIs (TypeScript):\n"+Declarations(apis), apis)
}

// description is the contract, then the APIs as body renders them and an
// example call of the first; the contract alone when there are none.
func description(contract, body string, apis []ToolAPI) string {
	if len(apis) == 0 {
		return contract
	}
	first := apis[0]
	await := ""
	if first.Async { // the example calls the first API: as it runs, whatever the others do
		await = "await "
	}
	return fmt.Sprintf("%s\n\n%s\nExample:\nconst r = %s%s(%s)\nreturn { r }", contract, body, await, first.JSName,
		exampleArgs(parseOrdered(first.Parameters)))
}

// DescribeListing is the reference executor's run_js description: the
// execution contract, then one token-compact line per API,
//
//   - search(args): Search the web. args: {query: string, limit?: integer, tags?: string[]}
//
// (optional properties end in ?, enums read a|b, arrays T[], nested objects
// {…}, a missing description "(no description)."), then a short example.
// With no APIs it is the contract alone. The contract says TypeScript is
// fine when a stripper is registered ([RegisterTypeScript]). (A
// CodeModeTool's own description says so when its executor strips
// TypeScript, and that fetch works when it grants the network.)
func DescribeListing(apis []ToolAPI) string {
	var b strings.Builder
	b.WriteString("APIs:\n")
	for _, api := range apis {
		desc := strings.TrimSpace(api.Description)
		switch {
		case desc == "":
			desc = "(no description)."
		case !strings.HasSuffix(desc, ".") && !strings.HasSuffix(desc, "!") && !strings.HasSuffix(desc, "?"):
			desc += "."
		}
		fmt.Fprintf(&b, "- %s(args): %s args: %s", api.JSName, desc, schemaType(parseOrdered(api.Parameters)))
		if len(bytes.TrimSpace(api.Returns)) > 0 {
			fmt.Fprintf(&b, " returns: %s", schemaType(parseOrdered(api.Returns)))
		}
		b.WriteByte('\n')
	}
	return description(contract(registeredTypeScript() != nil, false, false), b.String(), apis)
}

// ordered is a decoded JSON value whose objects keep their key order.
type ordered struct {
	keys   []string
	fields map[string]*ordered
	items  []*ordered
	scalar any  // string, bool or nil; a number's text
	num    bool // scalar is a number's text
	object bool
	array  bool
}

func (o *ordered) get(key string) *ordered {
	if o == nil || !o.object {
		return nil
	}
	return o.fields[key]
}

func (o *ordered) str() string {
	if o == nil {
		return ""
	}
	s, _ := o.scalar.(string)
	return s
}

// parseOrdered decodes a schema keeping key order; nil for one that is not
// JSON, or nests deeper than MaxSchemaDepth (what a schema may be: a
// hostile one must not exhaust the stack of the renderers).
func parseOrdered(raw json.RawMessage) *ordered {
	if len(raw) > MaxSchemaBytes || jsonDepth(raw) > MaxSchemaDepth {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return nil
	}
	return v
}

func decodeOrdered(dec *json.Decoder) (*ordered, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &ordered{object: true, fields: map[string]*ordered{}}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.fields[key]; !dup {
					o.keys = append(o.keys, key)
				}
				o.fields[key] = v
			}
			_, err = dec.Token()
			return o, err
		case '[':
			o := &ordered{array: true}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				o.items = append(o.items, v)
			}
			_, err = dec.Token()
			return o, err
		}
	case json.Number:
		return &ordered{scalar: t.String(), num: true}, nil
	}
	return &ordered{scalar: tok}, nil
}

// schemaType renders a schema as a compact type: {a: string, b?: T[]},
// a|b for enums, object, any.
func schemaType(s *ordered) string {
	if s == nil || !s.object {
		return "any"
	}
	if enum := s.get("enum"); enum != nil && enum.array {
		parts := make([]string, len(enum.items))
		for i, v := range enum.items {
			parts[i] = scalarText(v)
		}
		return strings.Join(parts, "|")
	}
	if c := s.get("const"); c != nil {
		return scalarText(c)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts := s.get(key); alts != nil && alts.array && len(alts.items) > 0 {
			parts := make([]string, len(alts.items))
			for i, alt := range alts.items {
				parts[i] = schemaType(alt)
			}
			return strings.Join(parts, "|")
		}
	}
	typ := s.get("type")
	if typ != nil && typ.array {
		parts := make([]string, len(typ.items))
		for i, t := range typ.items {
			parts[i] = typeName(t.str(), s)
		}
		return strings.Join(parts, "|")
	}
	name := typ.str()
	if name == "" {
		if s.get("properties") != nil {
			name = "object"
		} else if s.get("items") != nil {
			name = "array"
		}
	}
	if name == "" {
		return "any"
	}
	return typeName(name, s)
}

// typeName renders one JSON Schema type of schema s.
func typeName(name string, s *ordered) string {
	switch name {
	case "object":
		props := s.get("properties")
		if props == nil || !props.object || len(props.keys) == 0 {
			return "object"
		}
		required := map[string]bool{}
		if r := s.get("required"); r != nil && r.array {
			for _, v := range r.items {
				required[v.str()] = true
			}
		}
		parts := make([]string, len(props.keys))
		for i, key := range props.keys {
			opt := "?"
			if required[key] {
				opt = ""
			}
			parts[i] = key + opt + ": " + schemaType(props.fields[key])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case "array":
		item := schemaType(s.get("items"))
		if strings.Contains(item, "|") {
			item = "(" + item + ")"
		}
		return item + "[]"
	default:
		return name
	}
}

func scalarText(v *ordered) string {
	if v == nil {
		return "null"
	}
	switch t := v.scalar.(type) {
	case string:
		return t
	case nil:
		if v.object || v.array {
			return "object"
		}
		return "null"
	default:
		return fmt.Sprint(t)
	}
}

// exampleArgs renders placeholder arguments for a schema's required keys:
// none for a tool that takes no input, which Declarations declares with
// no parameter (its handler gets {} all the same).
func exampleArgs(s *ordered) string {
	if noInput(s) {
		return ""
	}
	props := s.get("properties")
	r := s.get("required")
	if r == nil || !r.array || props == nil {
		return "{}"
	}
	parts := make([]string, 0, len(r.items))
	for _, v := range r.items {
		key := v.str()
		parts = append(parts, propName(key)+": "+placeholder(props.get(key)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func placeholder(s *ordered) string {
	if enum := s.get("enum"); enum != nil && enum.array && len(enum.items) > 0 {
		b, _ := json.Marshal(enum.items[0].scalar)
		return string(b)
	}
	switch s.get("type").str() {
	case "string":
		return `"…"`
	case "integer", "number":
		return "1"
	case "boolean":
		return "true"
	case "array":
		return "[]"
	case "object":
		return "{}"
	}
	return "null"
}

// ToolDefinition is what a tool advertises to a model.
type ToolDefinition struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	// Returns is the JSON Schema of the tool's result, for the model;
	// empty: unknown.
	Returns json.RawMessage
}

// Tool is a tool a model can call with JSON arguments: a host tool, a
// registered sandbox tool ([Executor.SandboxTool]) or the run_js surface
// itself ([CodeModeTool]). Implementations must be safe for concurrent use.
type Tool interface {
	Definition() ToolDefinition
	Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
}

// NewTool is a [Tool] with the given definition whose calls are served by
// call: the seam the SDK adapters wrap a vendor's tool types through (a
// definition the SDK holds, an execution the agent loop already has).
func NewTool(def ToolDefinition, call func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)) Tool {
	return definedTool{def, call}
}

type definedTool struct {
	def  ToolDefinition
	call func(context.Context, json.RawMessage) (json.RawMessage, error)
}

func (t definedTool) Definition() ToolDefinition { return t.def }

func (t definedTool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	return t.call(ctx, args)
}

// CodeModeTool packages Code Mode as one tool named run_js: the host tools
// become async capabilities of its executor (a Promise.all over them runs
// them at once; a tool that ignores its context is abandoned at the
// deadline; [WithSyncTools] makes them the reference's sync-looking calls),
// its description lists them as a JavaScript API ([Describe]), and a call
// runs the model's script. Safe for concurrent use; Close it when done.
type CodeModeTool struct {
	exec        *Executor
	description string
	apis        []ToolAPI // the tools, for Granted
	contract    string
	async       bool
	grant       []string       // Granted's names; nil: every tool
	convs       *conversations // WithSessions: each conversation's session; nil: none
	budget      int            // the output's budget in bytes (WithOutputBudget); 0: none
}

// NewCodeModeTool wraps tools as capabilities of a new executor with the
// given limits. Each tool's definition is read once; its name is mangled
// with [JSIdentifier]. Two tools whose names mangle to the same identifier
// are refused with a [*RegisterError] of stage invalid_capability naming
// both. A wrapped tool's result is parsed as JSON (a result that is not
// JSON reaches the script as a string); its error reaches the script as
// an Error reading "tool `<name>` failed: <error>". The tool takes
// TypeScript, and its description says so, when the executor has a
// stripper: import github.com/codemode-go/codemode/typescript to register
// one (or pass [WithTypeScript]).
func NewCodeModeTool(tools []Tool, limits Limits, opts ...Option) (*CodeModeTool, error) {
	var probe config // what the options say about the tools themselves
	for _, o := range opts {
		if o == nil {
			return nil, errNilOption
		}
		if err := o(&probe); err != nil {
			return nil, err
		}
	}
	async := !probe.syncTools
	sessions := probe.sessions
	budget := DefaultOutputBudget
	if probe.budgetSet {
		budget = probe.budget
	}
	opts = append([]Option{WithLimits(limits)}, opts...)
	apis := make([]ToolAPI, 0, len(tools))
	owner := map[string]string{}
	for i, t := range tools {
		if t == nil {
			return nil, &RegisterError{Stage: StageInvalidCapability, Reason: fmt.Sprintf("tools[%d] is nil", i)}
		}
		def := t.Definition()
		id := JSIdentifier(def.Name)
		if prev, ok := owner[id]; ok {
			return nil, &RegisterError{Stage: StageInvalidCapability, Name: id,
				Reason: fmt.Sprintf("tools %q and %q both map to the identifier %q", prev, def.Name, id)}
		}
		owner[id] = def.Name
		opts = append(opts, WithCapability(Capability{Name: id, Description: def.Description, Params: def.Parameters,
			Returns: def.Returns, Async: async, Func: toolHandler(t, def.Name)}))
		apis = append(apis, ToolAPI{JSName: id, Description: def.Description, Parameters: def.Parameters, Returns: def.Returns,
			Async: async})
	}
	exec, err := New(opts...)
	if err != nil {
		return nil, err
	}
	c := contract(exec.ts != nil, exec.outbound != nil, async)
	t := &CodeModeTool{exec: exec, apis: apis, async: async, budget: budget}
	if sessions {
		c += contractSession
		t.convs = &conversations{m: map[string]*Session{}}
	}
	t.contract, t.description = c, describeDeclared(apis, c)
	return t, nil
}

// WithOutputBudget sets the budget, in bytes, of what [NewCodeModeTool]'s
// calls give the model back: a result and logs past it are shaped to fit
// (see [ShapeJSON] and [ShapeLogs]: an array keeps its first items, a
// string its start, logs their first and last lines, each saying what was
// left out), and the output says so under "shaped", with how to ask for
// less. The logs take what the result leaves, and at least a quarter when
// both are over; the effects ledger and the note are not counted.
// [TokenBudget] converts a budget in tokens. The default is
// [DefaultOutputBudget]; 0 turns shaping off (the payload limit of
// [Limits] stays the hard bound behind it); New refuses a negative
// budget. Executors ignore it: Run and Execute give callers exact values.
func WithOutputBudget(bytes int) Option {
	return func(c *config) error {
		if bytes < 0 {
			return fmt.Errorf("%w: negative output budget %d", ErrInvalidLimits, bytes)
		}
		c.budget, c.budgetSet = bytes, true
		return nil
	}
}

// WithSyncTools makes [NewCodeModeTool] wrap its tools as synchronous
// capabilities, the reference's sync-looking calls (`const r = search({...})`;
// a call blocks the script until its tool returns, and one that ignores
// its context holds the run past its deadline), and its description says
// so. Other executors ignore it.
func WithSyncTools() Option {
	return func(c *config) error {
		c.syncTools = true
		return nil
	}
}

// toolHandler adapts a Tool to a capability handler.
func toolHandler(t Tool, name string) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		out, err := t.Call(ctx, bytes.Clone(args)) // a sync call's args are borrowed; a Tool may keep its own
		if err != nil {
			var ae *argsError
			if errors.As(err, &ae) { // a FuncTool's arguments: the script's TypeError
				return nil, err
			}
			return nil, fmt.Errorf("tool `%s` failed: %v", name, err)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			return nil, nil
		}
		if json.Valid(out) {
			return json.RawMessage(out), nil
		}
		return string(out), nil
	}
}

// WithDescription replaces the generated description (the seam for an
// optimised description) and returns t.
func (t *CodeModeTool) WithDescription(description string) *CodeModeTool {
	t.description = description
	return t
}

// Description returns the current description.
func (t *CodeModeTool) Description() string { return t.description }

// Limits returns the limits scripts run under.
func (t *CodeModeTool) Limits() Limits { return t.exec.Limits() }

// Executor returns the executor scripts run in.
func (t *CodeModeTool) Executor() *Executor { return t.exec }

// Close closes the tool's executor.
func (t *CodeModeTool) Close() error { return t.exec.Close() }

// Definition advertises run_js with [RunJSParameters].
func (t *CodeModeTool) Definition() ToolDefinition {
	return ToolDefinition{Name: RunJSToolName, Description: t.description, Parameters: RunJSParameters()}
}

// Granted is a view of the tool whose runs reach only the named tools
// (their JavaScript names, as JSIdentifier mangles them; see [Grant]):
// the others are absent from its sandboxes and from its description. It
// shares t's executor (closing either closes both).
func (t *CodeModeTool) Granted(names ...string) *CodeModeTool {
	g := *t
	g.grant = slices.Clone(names)
	var apis []ToolAPI
	for _, a := range t.apis {
		if slices.Contains(names, a.JSName) {
			apis = append(apis, a)
		}
	}
	g.apis = apis
	g.description = describeDeclared(apis, t.contract)
	return &g
}

// CallResult is the outcome of a run_js call: the JSON the model reads,
// and whether it reports a failure (MCP's isError, Anthropic's is_error),
// told without parsing it.
type CallResult struct {
	Output  json.RawMessage
	IsError bool
	// Paused, when set, is a run that stopped at a tool call needing a
	// person's decision (the executor's [Governance]): show Paused.Tool
	// and Paused.Args to them and go on with [CodeModeTool.Resume]. Output
	// is then {"paused": {"tool": ..., "args": ...}}, for a loop that
	// shows it as it is; it is not the model's to read.
	Paused *Paused
	// Effects is the run's ledger (see [Effects]). Output carries it as
	// "effects" on every failure, where the model decides whether a retry
	// can repeat a write; a value's output does not (the model acts on
	// the value, and the ledger's times would make it differ from run to
	// run).
	Effects *Effects
	// Shaped says what was cut from the value (or error) and the logs to
	// fit the tool's output budget ([WithOutputBudget]), as Output's
	// "shaped" tells the model; "": nothing.
	Shaped string
}

// Invoke runs {"code": "<script>"}: Output is {"result": value} plus
// "logs" when the script logged; a model-repairable failure (a script
// error, a tool failure, a deadline or memory kill, bad arguments) is the
// [ExecError] JSON plus "effects" (the run's ledger: which tools ran, see
// [Effects]) and "logs", with IsError set. Past the tool's output budget
// ([WithOutputBudget]) the value (or error) and logs are shaped to fit,
// and "shaped" says what was cut. Only an internal failure
// (including a cancelled ctx or a closed tool) is a Go error, an
// [*ExecError] of kind internal.
func (t *CodeModeTool) Invoke(ctx context.Context, args json.RawMessage) (CallResult, error) {
	if ctx == nil { // the host's bug, not the model's to repair
		return CallResult{}, internalError(RunJSToolName, ErrNilContext)
	}
	code, reason := scriptArg(args)
	if reason != "" {
		return t.callResult(nil, &ExecError{Kind: KindInvalidArgs, Name: RunJSToolName, Reason: reason})
	}
	if t.grant != nil {
		ctx = Grant(ctx, t.grant...)
	}
	if s, err := t.session(ctx); err != nil {
		return CallResult{}, err
	} else if s != nil {
		res, err := s.Run(ctx, code)
		if errors.Is(err, ErrSessionClosed) && !errors.Is(err, ErrClosed) {
			// Ended (its TTL) between the lookup and the run: a new one.
			if s, err = t.session(ctx); err != nil {
				return CallResult{}, err
			}
			res, err = s.Run(ctx, code)
		}
		return t.callResult(res, err)
	}
	return t.callResult(t.exec.Run(ctx, code))
}

// Resume continues a run_js call that paused ([CallResult].Paused) with
// the decision for its call (see [Executor.Resume]), and reports like
// Invoke.
func (t *CodeModeTool) Resume(ctx context.Context, continuation []byte, d Decision) (CallResult, error) {
	if ctx == nil {
		return CallResult{}, internalError(RunJSToolName, ErrNilContext)
	}
	if t.grant != nil {
		ctx = Grant(ctx, t.grant...)
	}
	var r ExecuteResult
	if s, err := t.session(ctx); err != nil {
		return CallResult{}, err
	} else if s != nil {
		r = s.Resume(ctx, continuation, d, nil)
	} else {
		r = t.exec.Resume(ctx, continuation, d, nil)
	}
	res := &Result{Value: r.Result, Logs: r.Logs, Stats: r.Stats, Paused: r.Paused, Effects: r.Effects}
	if r.Err != nil {
		return t.callResult(res, r.Err)
	}
	return t.callResult(res, nil)
}

// callResult is Invoke's report of a run's outcome.
func (t *CodeModeTool) callResult(res *Result, err error) (CallResult, error) {
	var logs []string
	var eff *Effects
	if res != nil {
		logs, eff = res.Logs, res.Effects
	}
	if err == nil && res.Paused != nil {
		p, merr := marshal(struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		}{res.Paused.Tool, res.Paused.Args})
		if merr != nil {
			return CallResult{}, merr
		}
		out, err := withLogs(`{"paused":`+string(p)+`}`, logs)
		return CallResult{Output: out, Paused: res.Paused, Effects: eff}, err
	}
	var extra []byte // what follows the value or the error: diagnostics, effects
	if res != nil && len(res.Diagnostics) > 0 {
		d, merr := marshal(res.Diagnostics)
		if merr != nil {
			return CallResult{}, merr
		}
		extra = append(append(extra, `,"diagnostics":`...), d...)
	}
	if err != nil {
		var ee *ExecError
		if !errors.As(err, &ee) || ee.Kind == KindInternal {
			return CallResult{}, err
		}
		if eff != nil {
			eff.End = ee.Kind
		}
		j, logs, shaped := t.shape(json.RawMessage(ee.LLMJSON()), logs, "error")
		extra = appendEffects(extra, eff)
		extra = appendShaped(extra, shaped)
		out, err := withLogs(string(j[:len(j)-1])+string(extra)+"}", logs)
		return CallResult{Output: out, IsError: true, Effects: eff, Shaped: shaped}, err
	}
	v, logs, shaped := t.shape(res.Value, logs, "result")
	extra = appendShaped(extra, shaped)
	out, err := withLogs(`{"result":`+string(v)+string(extra)+`}`, logs)
	return CallResult{Output: out, Effects: eff, Shaped: shaped}, err
}

// shape cuts a value (what) and logs to the tool's budget.
func (t *CodeModeTool) shape(v json.RawMessage, logs []string, what string) (json.RawMessage, []string, string) {
	return ShapeOutput(v, logs, t.budget, what)
}

// appendShaped appends `,"shaped":` and the note, when there is one.
func appendShaped(b []byte, note string) []byte {
	if note == "" {
		return b
	}
	q, _ := marshal(note)
	return append(append(b, `,"shaped":`...), q...)
}

// appendEffects appends `,"effects":` and the ledger's JSON to b.
func appendEffects(b []byte, eff *Effects) []byte {
	j, _ := eff.MarshalJSON() // its fields are strings and numbers: it cannot fail
	return append(append(b, `,"effects":`...), j...)
}

// Call is [CodeModeTool.Invoke] for the [Tool] interface (the reference's
// contract): a model-repairable failure is output with a nil error. A run
// that paused is its [*Paused] as the error (errors.As finds it), so that
// an agent loop does not hand it to the model as a result.
func (t *CodeModeTool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	r, err := t.Invoke(ctx, args)
	if err != nil {
		return nil, err
	}
	if r.Paused != nil {
		return nil, r.Paused
	}
	return r.Output, nil
}

// scriptArg extracts run_js's code argument, or says why it cannot.
func scriptArg(args json.RawMessage) (string, string) {
	if reason := utf8Problem(args); reason != "" {
		return "", reason
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "", "the arguments must be a JSON object with a string `code`"
	}
	raw, ok := obj["code"]
	if !ok {
		return "", "missing required argument `code`: the body of an async function, as a string"
	}
	var code string
	if err := json.Unmarshal(raw, &code); err != nil {
		return "", "`code` must be a string"
	}
	return code, ""
}

// withLogs appends "logs" to a JSON object when there are any.
func withLogs(obj string, logs []string) (json.RawMessage, error) {
	if len(logs) == 0 {
		return json.RawMessage(obj), nil
	}
	l, err := marshal(logs)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(obj[:len(obj)-1] + `,"logs":` + string(l) + `}`), nil
}

// SandboxTool exposes one registered tool as a [Tool] under its registered
// name: every call round-trips through the executor (limits, capabilities,
// bytecode cache apply). Empty arguments are treated as {}. Unlike
// CodeModeTool it returns every failure as an error, an [*ExecError] whose
// LLMJSON is the structured error. ok is false if no such tool is
// registered.
func (e *Executor) SandboxTool(name string) (Tool, bool) {
	meta, ok := e.Tool(name)
	if !ok {
		return nil, false
	}
	return &sandboxTool{exec: e, meta: meta}, true
}

type sandboxTool struct {
	exec *Executor
	meta RegisteredTool
}

func (t *sandboxTool) Definition() ToolDefinition {
	return ToolDefinition{Name: t.meta.Name, Description: t.meta.Description, Parameters: t.meta.Params}
}

func (t *sandboxTool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return t.exec.Call(ctx, t.meta.Name, args)
}

// WithSessions makes [NewCodeModeTool] keep one [Session] per
// conversation: a call whose context carries a conversation's id
// ([WithConversation]; an agent loop sets it once per conversation, and
// the adapters pass the context through) runs in that conversation's
// session, so what one call declares the next sees, and the description
// tells the model so. A call without an id runs in a fresh sandbox, as
// without this option. Sessions end with [CodeModeTool.EndConversation],
// the tool's Close, or an idle TTL ([WithSessionTTL]); a conversation
// whose session ended gets a new one on its next call. Idle sessions are
// evicted under a [MemoryBudget] and made again when next used.
func WithSessions() Option {
	return func(c *config) error {
		c.sessions = true
		return nil
	}
}

// conversationKey carries a conversation's id in a context.
type conversationKey struct{}

// WithConversation returns ctx carrying the id of the conversation the
// calls made with it belong to (see [WithSessions]).
func WithConversation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, conversationKey{}, id)
}

// ConversationOf returns the conversation id ctx carries, if any.
func ConversationOf(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(conversationKey{}).(string)
	return id, ok
}

// conversations are a CodeModeTool's sessions, by conversation id.
type conversations struct {
	mu sync.Mutex
	m  map[string]*Session
}

// session is the session of ctx's conversation (made on its first call,
// or again once it ended), or nil: no sessions, or no conversation.
func (t *CodeModeTool) session(ctx context.Context) (*Session, error) {
	if t.convs == nil {
		return nil, nil
	}
	id, ok := ConversationOf(ctx)
	if !ok {
		return nil, nil
	}
	c := t.convs
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.m[id]; s != nil && !s.ended() {
		return s, nil
	}
	if len(c.m) >= 64 && len(c.m)%64 == 0 {
		for k, s := range c.m { // forget the ended ones now and then
			if s.ended() {
				delete(c.m, k)
			}
		}
	}
	s, err := t.exec.NewSession()
	if err != nil {
		return nil, err
	}
	c.m[id] = s
	return s, nil
}

// EndConversation closes the session of conversation id (WithSessions),
// if it has one: its state is gone, and its next call starts afresh.
func (t *CodeModeTool) EndConversation(id string) {
	if t.convs == nil {
		return
	}
	t.convs.mu.Lock()
	s := t.convs.m[id]
	delete(t.convs.m, id)
	t.convs.mu.Unlock()
	if s != nil {
		s.Close()
	}
}
