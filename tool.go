package codemode

/*
#include "bridge.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"lukechampine.com/blake3"
)

// ToolSource is the raw material of a registered tool, before validation.
//
// Source must be a single JavaScript expression evaluating to a function
// that takes one argument (the parsed JSON arguments object) and returns a
// JSON-serialisable value or a promise of one. A named function
// declaration is accepted (it is parenthesised into an expression), helpers
// go inside an immediately invoked function that returns the tool, and one
// trailing `;` is tolerated.
//
// SelfTest, if set, is a script run after the source evaluated, with the
// global `tool` bound to the function; it may use top-level await. It fails
// if it throws or if its completion value (awaited when a promise) is
// exactly false: `tool({a: 1, b: 2}) === 3` is a self-test.
type ToolSource struct {
	Name        string          // 1–64 characters of [A-Za-z0-9_-]
	Description string          // shown to the model
	Params      json.RawMessage // JSON Schema of the arguments object; nil means {"type":"object"}
	Source      string
	SelfTest    string
}

// RegisteredTool is the metadata of a tool that passed every stage.
type RegisteredTool struct {
	Name        string
	Description string
	Params      json.RawMessage
	// SourceHash is the hex BLAKE3 hash of Source.
	SourceHash string
	// SelfTested is true if a self-test was given and passed.
	SelfTested bool
}

// tool is a registered tool with what calls need.
type tool struct {
	meta   RegisteredTool
	key    [32]byte // its bytecode's cache key (pinned)
	bc     []byte
	params *params
}

// toolSet is the executor's registry.
type toolSet struct {
	mu    sync.RWMutex
	byKey map[string]*tool
	order []string
}

// maxToolName bounds a tool name's length.
const maxToolName = 64

// Validate runs the cheap, synchronous checks of registration, without a
// sandbox: the name (1–64 of [A-Za-z0-9_-]), that no tool has it yet, and
// the parameters schema (a JSON object; "type", if present, is "object";
// every "properties" value is an object; "required" is an array of strings
// naming existing properties; the whole compiles as JSON Schema). Its error
// is a [*RegisterError] of stage invalid_name, duplicate or
// invalid_schema. Safe for concurrent use.
func (e *Executor) Validate(src ToolSource) error {
	if _, err := e.validate(src); err != nil {
		return err
	}
	return nil
}

// validate is Validate returning the compiled parameters.
func (e *Executor) validate(src ToolSource) (*params, *RegisterError) {
	if reason := toolNameProblem(src.Name); reason != "" {
		return nil, &RegisterError{Stage: StageInvalidName, Name: src.Name, Reason: reason}
	}
	p, err := e.schemas.compile(src.Params)
	if err != nil {
		return nil, err
	}
	if _, ok := e.Tool(src.Name); ok {
		return nil, &RegisterError{Stage: StageDuplicate, Name: src.Name}
	}
	return p, nil
}

// params is a compiled parameters schema.
type params struct {
	schema   *jsonschema.Schema
	required []string // in schema order
}

// schemaCache shares compiled parameter schemas between tools with the same
// schema: compiling one checks it against the JSON Schema meta-schema,
// which costs far more than the sandbox work of a registration.
type schemaCache struct {
	mu sync.Mutex
	m  map[[32]byte]*params
}

// maxSchemas bounds schemaCache; past it an arbitrary entry goes.
const maxSchemas = 256

func (c *schemaCache) compile(raw json.RawMessage) (*params, *RegisterError) {
	key := blake3.Sum256(raw)
	c.mu.Lock()
	p, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	sch, required, err := compileParams(raw)
	if err != nil {
		return nil, err
	}
	p = &params{schema: sch, required: required}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[[32]byte]*params)
	}
	if len(c.m) >= maxSchemas {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = p
	return p, nil
}

func toolNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case len(name) > maxToolName:
		return fmt.Sprintf("the name is %d characters long; at most %d are allowed", len(name), maxToolName)
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return fmt.Sprintf("the name contains %q: only [A-Za-z0-9_-] are allowed", r)
		}
	}
	return ""
}

// compileParams checks a parameters schema and compiles it once for
// validating arguments; it returns the required names in schema order.
func compileParams(params json.RawMessage) (*jsonschema.Schema, []string, *RegisterError) {
	bad := func(format string, args ...any) *RegisterError {
		return &RegisterError{Stage: StageInvalidSchema, Reason: fmt.Sprintf(format, args...)}
	}
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	var shape struct {
		Type       json.RawMessage            `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   json.RawMessage            `json:"required"`
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(params, &top); err != nil || top == nil {
		return nil, nil, bad("the schema must be a JSON object")
	}
	if t, ok := top["type"]; ok {
		var s string
		if json.Unmarshal(t, &s) != nil || s != "object" {
			return nil, nil, bad("the schema's \"type\" must be \"object\", not %s", t)
		}
	}
	if p, ok := top["properties"]; ok {
		var props map[string]json.RawMessage
		if json.Unmarshal(p, &props) != nil || props == nil {
			return nil, nil, bad("\"properties\" must be an object")
		}
		for _, name := range objectKeys(p) {
			var v map[string]json.RawMessage
			if json.Unmarshal(props[name], &v) != nil || v == nil {
				return nil, nil, bad("property `%s` must be a schema object", name)
			}
		}
		shape.Properties = props
	}
	var required []string
	if r, ok := top["required"]; ok {
		if json.Unmarshal(r, &required) != nil || required == nil {
			return nil, nil, bad("\"required\" must be an array of strings")
		}
		for _, name := range required {
			if _, ok := shape.Properties[name]; !ok {
				return nil, nil, bad("\"required\" names `%s`, which is not in \"properties\"", name)
			}
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, nil, bad("the schema is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("params.json", doc); err != nil {
		return nil, nil, bad("%v", err)
	}
	sch, err := c.Compile("params.json")
	if err != nil {
		return nil, nil, bad("%v", err)
	}
	return sch, required, nil
}

// Register runs the whole lifecycle of a tool: shape (Validate), compile,
// instantiate and self-test, the last three in one fresh sandbox under the
// executor's limits and capabilities. It returns the tool's metadata, or a
// [*RegisterError] of the stage that failed: compile{message} when the
// source does not parse or throws while evaluating, not_a_function with the
// value's typeof, self_test{message}, or execution carrying the inner
// timeout or memory error. A failed registration stores nothing, not even
// bytecode. Registered bytecode is shared by every tool with the same
// source and kept until the last of them is deregistered. Safe for
// concurrent use.
func (e *Executor) Register(ctx context.Context, src ToolSource) (RegisteredTool, error) {
	start := time.Now()
	params, verr := e.validate(src)
	if verr != nil {
		return RegisteredTool{}, verr
	}
	if !e.enter() {
		return RegisteredTool{}, &RegisterError{Stage: StageExecution, Exec: internalError("register", ErrClosed)}
	}
	defer e.life.RUnlock()
	if err := ctx.Err(); err != nil {
		return RegisteredTool{}, &RegisterError{Stage: StageExecution, Exec: internalError("register", err)}
	}

	key := scriptKey("tool", trimStatementEnd(src.Source))
	p := &program{name: src.Name, mode: C.BRIDGE_MODE_REGISTER, file: toolFile, fileName: toolFileName, headCols: toolHeadCols}
	if bc, ok := e.cache.get(key); ok {
		p.bc, p.src = bc, noSource
	} else {
		p.src, p.wantBC = wrapTool(src.Source, key), true
	}
	if src.SelfTest != "" {
		p.selftest = append([]byte(src.SelfTest), 0)
	}
	o := e.run(ctx, p, start)
	if err := registerError(o); err != nil {
		return RegisteredTool{}, err
	}
	bc := p.bc
	if bc == nil {
		bc = o.bytecode
	}
	if bc == nil {
		return RegisteredTool{}, &RegisterError{Stage: StageExecution, Exec: &ExecError{Kind: KindInternal,
			Message: "codemode: register: no bytecode was produced"}}
	}

	sum := blake3.Sum256([]byte(src.Source))
	t := &tool{
		meta: RegisteredTool{Name: src.Name, Description: src.Description, Params: src.Params,
			SourceHash: hex.EncodeToString(sum[:]), SelfTested: src.SelfTest != ""},
		key:    key,
		params: params,
	}
	e.tools.mu.Lock()
	defer e.tools.mu.Unlock()
	if _, ok := e.tools.byKey[src.Name]; ok {
		return RegisteredTool{}, &RegisterError{Stage: StageDuplicate, Name: src.Name}
	}
	t.bc = e.cache.pin(key, bc)
	if e.tools.byKey == nil {
		e.tools.byKey = make(map[string]*tool)
	}
	e.tools.byKey[src.Name] = t
	e.tools.order = append(e.tools.order, src.Name)
	return t.meta, nil
}

// registerError maps a registration run's outcome to its stage.
func registerError(o outcome) *RegisterError {
	switch o.status {
	case C.BRIDGE_DONE:
		if string(o.value) == "false" {
			return &RegisterError{Stage: StageSelfTest, Message: "the self-test completed with false"}
		}
		return nil
	case C.BRIDGE_COMPILE:
		return &RegisterError{Stage: StageCompile, Message: o.detail}
	case C.BRIDGE_NOT_FUNCTION:
		return &RegisterError{Stage: StageNotAFunction, EvaluatedType: o.detail}
	case C.BRIDGE_THROWN, C.BRIDGE_CAPABILITY, C.BRIDGE_STALLED, C.BRIDGE_TOO_LARGE:
		msg := o.err.Message
		if o.err.Kind == KindPendingPromise {
			msg = "the self-test's promise can never settle"
		}
		return &RegisterError{Stage: StageSelfTest, Message: msg}
	default:
		return &RegisterError{Stage: StageExecution, Exec: o.err}
	}
}

// toolFileName is the name tool sources carry in stack traces.
const toolFileName = "tool.js"

var toolFile = C.CString(toolFileName)

// toolHead is the wrapper before a tool's source, on its first line.
const toolHead = "(function () {__codemode_0123456789abcdef01234567: {return ("

const toolHeadCols = len(toolHead) - 1

// wrapTool turns a tool source into a script whose completion value is the
// source's value, with the labelled wrapper of wrapScript:
//
//	(function () {L: {return (<source>
//	);break L}})()
func wrapTool(source string, key [32]byte) []byte {
	var label [24]byte
	hex.Encode(label[:], key[:12])
	source = trimStatementEnd(source)
	var b strings.Builder
	b.Grow(len(source) + 2*len(label) + 64)
	b.WriteString("(function () {__codemode_")
	b.Write(label[:])
	b.WriteString(": {return (")
	b.WriteString(source)
	b.WriteString("\n);break __codemode_")
	b.Write(label[:])
	b.WriteString("}})()")
	b.WriteByte(0)
	return []byte(b.String())
}

// Tool returns the metadata of a registered tool. Safe for concurrent use.
func (e *Executor) Tool(name string) (RegisteredTool, bool) {
	e.tools.mu.RLock()
	defer e.tools.mu.RUnlock()
	t, ok := e.tools.byKey[name]
	if !ok {
		return RegisteredTool{}, false
	}
	return t.meta, true
}

// Tools returns every registered tool's metadata in registration order.
func (e *Executor) Tools() []RegisteredTool {
	e.tools.mu.RLock()
	defer e.tools.mu.RUnlock()
	out := make([]RegisteredTool, len(e.tools.order))
	for i, name := range e.tools.order {
		out[i] = e.tools.byKey[name].meta
	}
	return out
}

// Deregister removes a tool and reports whether it was registered. Its
// bytecode is freed unless another tool shares the same source; calls in
// progress finish.
func (e *Executor) Deregister(name string) bool {
	e.tools.mu.Lock()
	defer e.tools.mu.Unlock()
	t, ok := e.tools.byKey[name]
	if !ok {
		return false
	}
	delete(e.tools.byKey, name)
	for i, n := range e.tools.order {
		if n == name {
			e.tools.order = append(e.tools.order[:i], e.tools.order[i+1:]...)
			break
		}
	}
	e.cache.unpin(t.key)
	return true
}

// Call runs a registered tool with a JSON arguments object, in a fresh
// sandbox from its cached bytecode (never recompiled), with the executor's
// capabilities, and returns its result as JSON. Before any sandbox exists
// it fails with an [*ExecError] of kind not_found for an unknown name and
// invalid_args when args is not a JSON object, lacks required keys (listed
// in schema order) or does not match the parameters schema (the reason
// names the offending argument). Other failures are those of [Executor.Run],
// attributed to the tool.
func (e *Executor) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	start := time.Now()
	e.tools.mu.RLock()
	t, ok := e.tools.byKey[name]
	e.tools.mu.RUnlock()
	if !ok {
		return nil, &ExecError{Kind: KindNotFound, Name: name}
	}
	if reason := t.argsProblem(args); reason != "" {
		return nil, &ExecError{Kind: KindInvalidArgs, Name: name, Reason: reason}
	}
	if !e.enter() {
		return nil, internalError(name, ErrClosed)
	}
	defer e.life.RUnlock()
	if err := ctx.Err(); err != nil {
		return nil, internalError(name, err)
	}
	e.cache.hits.Add(1) // a call reads the tool's pinned bytecode
	o := e.run(ctx, &program{name: name, mode: C.BRIDGE_MODE_TOOL, file: toolFile, fileName: toolFileName,
		headCols: toolHeadCols, src: noSource, bc: t.bc, args: append(bytes.TrimSpace(args), 0)}, start)
	if o.err != nil {
		return nil, o.err
	}
	return o.value, nil
}

// englishPrinter renders schema violations.
var englishPrinter = message.NewPrinter(language.English)

// argsProblem says why args cannot be the tool's arguments, or "".
func (t *tool) argsProblem(args json.RawMessage) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "the arguments must be a JSON object"
	}
	var missing []string
	for _, name := range t.params.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, "`"+name+"`")
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		return "missing required argument " + missing[0]
	default:
		return "missing required arguments " + strings.Join(missing, ", ")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return "the arguments must be a JSON object"
	}
	verr, ok := t.params.schema.Validate(inst).(*jsonschema.ValidationError)
	if !ok {
		return ""
	}
	var problems []string
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			where := "the arguments"
			if len(v.InstanceLocation) > 0 {
				where = "`" + strings.Join(v.InstanceLocation, ".") + "`"
			}
			problems = append(problems, where+": "+v.ErrorKind.LocalizedString(englishPrinter))
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(verr)
	sort.Strings(problems) // the library reports in map order
	return strings.Join(problems, "; ")
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		key, _ := tok.(string)
		keys = append(keys, key)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}
