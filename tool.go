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
	"sync"
	"time"

	"lukechampine.com/blake3"

	"github.com/codemode-go/codemode/internal/jspos"
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
	source string   // as the wrapper takes it: for the positions in its errors
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
	if ctx == nil {
		return RegisteredTool{}, &RegisterError{Stage: StageExecution, Exec: nilContext(src.Name)}
	}
	start := time.Now()
	params, verr := e.validate(src)
	if verr != nil {
		return RegisteredTool{}, verr
	}
	source := trimStatementEnd(src.Source)
	p := &program{name: src.Name, mode: C.BRIDGE_MODE_REGISTER, file: toolFile, smap: toolMap(source, e.ts)}
	if src.SelfTest != "" {
		p.selftestMap, p.selftest = e.selftestSource(src.SelfTest)
	}
	o := e.do(ctx, p, runInput{start: start, unit: unitTool, closedName: "register"})
	if o.refused {
		return RegisteredTool{}, &RegisterError{Stage: StageExecution, Exec: o.err}
	}
	key := scriptKey("tool", p.smap.src)
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
		source: source,
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

// tool is the registered tool a call of name with args calls: kind
// not_found for an unknown name, invalid_args for arguments it refuses.
func (e *Executor) tool(name string, args json.RawMessage) (*tool, *ExecError) {
	e.tools.mu.RLock()
	t, ok := e.tools.byKey[name]
	e.tools.mu.RUnlock()
	if !ok {
		return nil, &ExecError{Kind: KindNotFound, Name: name}
	}
	if reason := t.argsProblem(args); reason != "" {
		return nil, &ExecError{Kind: KindInvalidArgs, Name: name, Reason: reason}
	}
	return t, nil
}

// trimArgs is a tool call's argument JSON as the engine reads it.
func trimArgs(args json.RawMessage) []byte { return bytes.TrimSpace(args) }

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

// selftestFileName is the name self-tests carry in stack traces (the
// engine's, in bridge.c); selftestHead and selftestTail make one an async
// function's body, called.
const (
	selftestFileName = "selftest.js"
	selftestHead     = "(async () => {"
	selftestTail     = "\n})()"
)

// toolFileName is the name tool sources carry in stack traces.
const toolFileName = "tool.js"

var toolFile = C.CString(toolFileName)

// toolHead is the wrapper before a tool's source, on its first line.
const toolHead = "(function () {__codemode_0123456789abcdef01234567: {return ("

// toolMap is the source map of a tool source (trimmed of its statement end).
func toolMap(source string, ts TypeScript) sourceMap {
	return sourceMap{file: toolFileName, head: len(toolHead), shape: jspos.Expression, src: source, ts: ts}
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
	if ctx == nil {
		return nil, nilContext(name)
	}
	start := time.Now()
	t, err := e.tool(name, args)
	if err != nil {
		return nil, err
	}
	p := &program{name: name, mode: C.BRIDGE_MODE_TOOL, file: toolFile, smap: toolMap(t.source, e.ts),
		src: noSource, bc: t.bc, args: cString(trimArgs(args)), unit: true, unitKey: t.key}
	o := e.do(ctx, p, runInput{start: start})
	if o.err != nil {
		return nil, o.err
	}
	return o.value, nil
}
