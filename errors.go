//go:build cgo

package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// marshal encodes v as compact JSON without escaping <, > and &: the texts
// are for models and logs, not HTML, and the reference writes them plainly.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ErrorKind tells which artifact a failed run or call needs repaired. Its
// values are the reference executor's snake_case tags.
type ErrorKind string

// The kinds of [ExecError].
const (
	// KindNotFound: no tool with this name is registered.
	KindNotFound ErrorKind = "not_found"
	// KindTimeout: the run passed its deadline and was stopped.
	KindTimeout ErrorKind = "timeout"
	// KindMemoryExceeded: the run passed its memory limit and was stopped.
	KindMemoryExceeded ErrorKind = "memory_exceeded"
	// KindJS: the script threw and nothing caught it (syntax errors too).
	KindJS ErrorKind = "js"
	// KindInvalidArgs: the arguments were refused before any sandbox existed.
	KindInvalidArgs ErrorKind = "invalid_args"
	// KindCapability: a host capability failed and the script let it escape.
	KindCapability ErrorKind = "capability"
	// KindPendingPromise: the script's promise can never settle.
	KindPendingPromise ErrorKind = "pending_promise"
	// KindInternal: the executor itself failed, or the caller cancelled the
	// run. Not model-repairable.
	KindInternal ErrorKind = "internal"
)

// RunJSToolName is the name run errors are attributed to, and the name of
// the Code Mode meta-tool.
const RunJSToolName = "run_js"

// ExecuteName is the name [Executor.Execute] errors are attributed to
// ([ExecError].Name of ExecuteResult.Err).
const ExecuteName = "execute"

// Errors that [ExecError] values match with errors.Is.
var (
	// ErrClosed is matched by every error of an executor used after Close.
	ErrClosed = errors.New("codemode: executor closed")
	// ErrTimeout is matched by an ExecError of kind timeout, which also
	// matches context.DeadlineExceeded.
	ErrTimeout = errors.New("codemode: deadline exceeded")
	// ErrBusy is matched by the error of a run that never started: no
	// sandbox (or no execution right) was free before its deadline or its
	// context ended. It is the host's overload, not the script's fault:
	// kind internal, and context.Canceled as well when the caller
	// cancelled while it waited.
	ErrBusy = errors.New("codemode: busy: no sandbox was free in time")
	// ErrNilContext is matched by the error of a call given a nil
	// context.Context, before anything runs: kind invalid_args from the
	// Executor's methods and Retained.Call, kind internal where only host
	// failures are Go errors (CodeModeTool, the daemon's client). Pass
	// context.Background() instead.
	ErrNilContext = errors.New("codemode: nil Context")
)

// errNilOption is New's and NewCodeModeTool's error for a nil Option.
var errNilOption = errors.New("codemode: a nil Option")

// refusedResult is the ExecuteResult of a request refused before it ran.
func refusedResult(err *ExecError) ExecuteResult {
	return ExecuteResult{Logs: []string{}, Error: err.describe(), Err: err}
}

// nilContext is the error of an entry point named name given a nil
// context.
func nilContext(name string) *ExecError {
	return &ExecError{Kind: KindInvalidArgs, Name: name, Reason: "a nil Context (pass context.Background())", cause: ErrNilContext}
}

// ExecError is how a run or a tool call fails. Kind says what failed; the
// other fields are set per kind, exactly as the reference executor's JSON
// carries them:
//
//	not_found        Name
//	timeout          Name, DeadlineMS
//	memory_exceeded  Name, LimitBytes
//	js               Name, Message (Line, Column)
//	invalid_args     Name, Reason
//	capability       Name, Capability, Message (Line, Column)
//	pending_promise  Name
//	internal         Message
//
// A js or capability error also says where it happened, in the text the
// model wrote: Line and Column (1-based; column in characters) of the
// expression that threw, or of the call whose failure escaped. They are
// zero, and absent from the JSON, when no place is known (a value thrown
// that is no Error, a tool called through an alias: see the package
// documentation, Where a failure happened). They follow the reference's
// fields in the JSON: {"kind":"capability","name":"execute",
// "capability":"store.get","message":"no such user","line":3,"column":23}.
//
// MarshalJSON produces that kind-tagged shape; [ExecError.LLMJSON] is the
// same text, meant to be fed back to the model. Callers switch on Kind,
// never on message text. errors.Is matches [ErrTimeout] and
// context.DeadlineExceeded for a timeout, and the cause of an internal
// error: context.Canceled (or DeadlineExceeded) for a run whose context
// ended, [ErrClosed] for a closed executor.
type ExecError struct {
	Kind       ErrorKind
	Name       string // the tool, or RunJSToolName for scripts
	Message    string // js, capability, internal
	Reason     string // invalid_args
	Capability string // capability: the capability that failed
	DeadlineMS int64  // timeout
	LimitBytes int64  // memory_exceeded
	// Line and Column place a js or capability error in the model's
	// source (see above); zero when unknown.
	Line, Column int
	// Diagnostics are a type_error's problems (KindTypeError).
	Diagnostics []TypeDiagnostic

	cause error // what errors.Is/As see through Unwrap
}

// Error implements error: "codemode: <name>: <what happened>".
func (e *ExecError) Error() string {
	switch e.Kind {
	case KindNotFound:
		return fmt.Sprintf("codemode: %s: no such tool", e.Name)
	case KindTimeout:
		return fmt.Sprintf("codemode: %s: timed out after %dms", e.Name, e.DeadlineMS)
	case KindMemoryExceeded:
		return fmt.Sprintf("codemode: %s: memory limit of %d bytes exceeded", e.Name, e.LimitBytes)
	case KindMemoryBudget:
		return fmt.Sprintf("codemode: %s: %s (%d bytes)", e.Name, e.Message, e.LimitBytes)
	case KindJS:
		return fmt.Sprintf("codemode: %s: %s", e.Name, e.Message)
	case KindInvalidArgs:
		return fmt.Sprintf("codemode: %s: invalid arguments: %s", e.Name, e.Reason)
	case KindCapability:
		if e.Line > 0 {
			return fmt.Sprintf("codemode: %s: capability %s failed at %d:%d: %s", e.Name, e.Capability, e.Line, e.Column, e.Message)
		}
		return fmt.Sprintf("codemode: %s: capability %s failed: %s", e.Name, e.Capability, e.Message)
	case KindPendingPromise:
		return fmt.Sprintf("codemode: %s: the returned promise never settles", e.Name)
	case KindTypeError:
		parts := make([]string, len(e.Diagnostics))
		for i, d := range e.Diagnostics {
			parts[i] = d.String()
		}
		return fmt.Sprintf("codemode: %s: refused before it ran, by a type check: %s", e.Name, strings.Join(parts, "; "))
	default:
		return e.Message
	}
}

// Unwrap returns the cause of an internal error (a context error,
// ErrClosed), or nil.
func (e *ExecError) Unwrap() error { return e.cause }

// Is reports whether a timeout is being matched against ErrTimeout or
// context.DeadlineExceeded.
func (e *ExecError) Is(target error) bool {
	return e.Kind == KindTimeout && (target == ErrTimeout || target == context.DeadlineExceeded)
}

// The wire shapes, one per kind, fields in the reference's order.
type (
	nameJSON struct {
		Kind ErrorKind `json:"kind"`
		Name string    `json:"name"`
	}
	timeoutJSON struct {
		Kind       ErrorKind `json:"kind"`
		Name       string    `json:"name"`
		DeadlineMS int64     `json:"deadline_ms"`
	}
	memoryJSON struct {
		Kind       ErrorKind `json:"kind"`
		Name       string    `json:"name"`
		LimitBytes int64     `json:"limit_bytes"`
	}
	messageJSON struct {
		Kind    ErrorKind `json:"kind"`
		Name    string    `json:"name"`
		Message string    `json:"message"`
		Line    int       `json:"line,omitempty"`
		Column  int       `json:"column,omitempty"`
	}
	reasonJSON struct {
		Kind   ErrorKind `json:"kind"`
		Name   string    `json:"name"`
		Reason string    `json:"reason"`
	}
	capabilityJSON struct {
		Kind       ErrorKind `json:"kind"`
		Name       string    `json:"name"`
		Capability string    `json:"capability"`
		Message    string    `json:"message"`
		Line       int       `json:"line,omitempty"`
		Column     int       `json:"column,omitempty"`
	}
	internalJSON struct {
		Kind    ErrorKind `json:"kind"`
		Message string    `json:"message"`
	}
	typeErrorJSON struct {
		Kind        ErrorKind        `json:"kind"`
		Name        string           `json:"name"`
		Diagnostics []TypeDiagnostic `json:"diagnostics"`
	}
	// anyExecJSON reads every shape.
	anyExecJSON struct {
		Kind       ErrorKind `json:"kind"`
		Name       string    `json:"name"`
		Message    string    `json:"message"`
		Reason     string    `json:"reason"`
		Capability string    `json:"capability"`
		DeadlineMS int64     `json:"deadline_ms"`
		LimitBytes int64     `json:"limit_bytes"`
		Line       int       `json:"line"`
		Column     int       `json:"column"`
		// Diagnostics are a type_error's.
		Diagnostics []TypeDiagnostic `json:"diagnostics"`
	}
)

// MarshalJSON writes the reference's kind-tagged shape, e.g.
// {"kind":"timeout","name":"add","deadline_ms":500}.
func (e *ExecError) MarshalJSON() ([]byte, error) {
	switch e.Kind {
	case KindNotFound, KindPendingPromise:
		return marshal(nameJSON{e.Kind, e.Name})
	case KindTimeout:
		return marshal(timeoutJSON{e.Kind, e.Name, e.DeadlineMS})
	case KindMemoryExceeded, KindMemoryBudget:
		return marshal(memoryJSON{e.Kind, e.Name, e.LimitBytes})
	case KindJS:
		return marshal(messageJSON{e.Kind, e.Name, e.Message, e.Line, e.Column})
	case KindInvalidArgs:
		return marshal(reasonJSON{e.Kind, e.Name, e.Reason})
	case KindCapability:
		return marshal(capabilityJSON{e.Kind, e.Name, e.Capability, e.Message, e.Line, e.Column})
	case KindInternal:
		return marshal(internalJSON{e.Kind, e.Message})
	case KindTypeError:
		return marshal(typeErrorJSON{e.Kind, e.Name, e.Diagnostics})
	default:
		return nil, fmt.Errorf("codemode: marshal ExecError: unknown kind %q", e.Kind)
	}
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *ExecError) UnmarshalJSON(data []byte) error {
	var w anyExecJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = ExecError{Kind: w.Kind, Name: w.Name, Message: w.Message, Reason: w.Reason,
		Capability: w.Capability, DeadlineMS: w.DeadlineMS, LimitBytes: w.LimitBytes, Line: w.Line, Column: w.Column,
		Diagnostics: w.Diagnostics}
	return nil
}

// LLMJSON returns the error as the JSON text fed back to a generating
// model: the kind tag tells it which artifact to regenerate.
func (e *ExecError) LLMJSON() string {
	b, err := e.MarshalJSON()
	if err != nil {
		b, _ = marshal(internalJSON{KindInternal, e.Error()})
	}
	return string(b)
}

// contextError is the error of a call whose context had already ended
// when it began: a timeout with no budget left for a passed deadline (the
// caller's deadline is the run's), else internal, wrapping the cause.
func contextError(name string, cause error) *ExecError {
	if errors.Is(cause, context.DeadlineExceeded) {
		return &ExecError{Kind: KindTimeout, Name: name}
	}
	return internalError(name, cause)
}

// internalError builds an internal ExecError wrapping cause.
// InternalError is the [ExecError] of kind internal a surface reports for
// a failure of its own in op (the daemon's client refusing a continuation,
// say): its message names op and cause, and errors.Is and errors.As see
// cause through it.
func InternalError(op string, cause error) *ExecError { return internalError(op, cause) }

func internalError(op string, cause error) *ExecError {
	return &ExecError{Kind: KindInternal, Message: "codemode: " + op + ": " + cause.Error(), cause: cause}
}

// RegisterStage tells which step of registering a tool or capability
// failed. Its values are the reference executor's snake_case tags.
type RegisterStage string

// The stages of [RegisterError].
const (
	// StageInvalidName: the tool name is empty, too long, or has characters
	// outside [A-Za-z0-9_-].
	StageInvalidName RegisterStage = "invalid_name"
	// StageDuplicate: a tool with this name is already registered.
	StageDuplicate RegisterStage = "duplicate"
	// StageInvalidSchema: the parameters schema is not a usable object schema.
	StageInvalidSchema RegisterStage = "invalid_schema"
	// StageInvalidCapability: a capability name is not a usable identifier,
	// is reserved, or is taken.
	StageInvalidCapability RegisterStage = "invalid_capability"
	// StageCompile: the tool source does not parse.
	StageCompile RegisterStage = "compile"
	// StageNotAFunction: the source did not evaluate to a function.
	StageNotAFunction RegisterStage = "not_a_function"
	// StageSelfTest: the self-test threw or completed with false.
	StageSelfTest RegisterStage = "self_test"
	// StageExecution: the sandbox was killed (timeout, memory) while
	// instantiating or self-testing; Exec holds the inner error.
	StageExecution RegisterStage = "execution"
)

// RegisterError is how validating or registering a tool or capability
// fails. Stage says which step; the other fields are set per stage, exactly
// as the reference executor's JSON carries them:
//
//	invalid_name        Name, Reason
//	duplicate           Name
//	invalid_schema      Reason
//	invalid_capability  Name, Reason
//	compile             Message
//	not_a_function      EvaluatedType (typeof vocabulary)
//	self_test           Message
//	execution           Exec (its JSON is flattened next to the stage tag)
type RegisterError struct {
	Stage         RegisterStage
	Name          string
	Reason        string
	Message       string
	EvaluatedType string
	Exec          *ExecError
}

// Error implements error: "codemode: register: <what happened>".
func (e *RegisterError) Error() string {
	switch e.Stage {
	case StageInvalidName, StageInvalidCapability:
		return fmt.Sprintf("codemode: register: %s %q: %s", e.Stage, e.Name, e.Reason)
	case StageDuplicate:
		return fmt.Sprintf("codemode: register: %q is already registered", e.Name)
	case StageInvalidSchema:
		return "codemode: register: invalid schema: " + e.Reason
	case StageNotAFunction:
		return "codemode: register: the source evaluated to " + e.EvaluatedType + ", not a function"
	case StageExecution:
		if e.Exec != nil {
			return "codemode: register: " + e.Exec.Error()
		}
		return "codemode: register: execution failed"
	default:
		return fmt.Sprintf("codemode: register: %s: %s", e.Stage, e.Message)
	}
}

// Unwrap returns the inner ExecError of an execution failure, so errors.Is
// sees a timeout through it.
func (e *RegisterError) Unwrap() error {
	if e.Exec == nil {
		return nil
	}
	return e.Exec
}

type (
	stageNameReasonJSON struct {
		Stage  RegisterStage `json:"stage"`
		Name   string        `json:"name"`
		Reason string        `json:"reason"`
	}
	stageNameJSON struct {
		Stage RegisterStage `json:"stage"`
		Name  string        `json:"name"`
	}
	stageReasonJSON struct {
		Stage  RegisterStage `json:"stage"`
		Reason string        `json:"reason"`
	}
	stageMessageJSON struct {
		Stage   RegisterStage `json:"stage"`
		Message string        `json:"message"`
	}
	stageTypeJSON struct {
		Stage         RegisterStage `json:"stage"`
		EvaluatedType string        `json:"evaluated_type"`
	}
	anyRegisterJSON struct {
		Stage         RegisterStage `json:"stage"`
		Name          string        `json:"name"`
		Reason        string        `json:"reason"`
		Message       string        `json:"message"`
		EvaluatedType string        `json:"evaluated_type"`
		Kind          ErrorKind     `json:"kind"`
	}
)

// MarshalJSON writes the reference's stage-tagged shape, e.g.
// {"stage":"invalid_name","name":"a b","reason":"..."}. An execution
// failure carries the stage tag and then the inner error's fields:
// {"stage":"execution","kind":"timeout","name":"add","deadline_ms":500}.
func (e *RegisterError) MarshalJSON() ([]byte, error) {
	switch e.Stage {
	case StageInvalidName, StageInvalidCapability:
		return marshal(stageNameReasonJSON{e.Stage, e.Name, e.Reason})
	case StageDuplicate:
		return marshal(stageNameJSON{e.Stage, e.Name})
	case StageInvalidSchema:
		return marshal(stageReasonJSON{e.Stage, e.Reason})
	case StageCompile, StageSelfTest:
		return marshal(stageMessageJSON{e.Stage, e.Message})
	case StageNotAFunction:
		return marshal(stageTypeJSON{e.Stage, e.EvaluatedType})
	case StageExecution:
		if e.Exec == nil {
			return nil, errors.New("codemode: marshal RegisterError: execution without its ExecError")
		}
		inner, err := e.Exec.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out := append([]byte(`{"stage":"execution",`), inner[1:]...)
		return out, nil
	default:
		return nil, fmt.Errorf("codemode: marshal RegisterError: unknown stage %q", e.Stage)
	}
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *RegisterError) UnmarshalJSON(data []byte) error {
	var w anyRegisterJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = RegisterError{Stage: w.Stage, Name: w.Name, Reason: w.Reason, Message: w.Message, EvaluatedType: w.EvaluatedType}
	if w.Stage == StageExecution {
		e.Name = ""
		e.Exec = new(ExecError)
		return e.Exec.UnmarshalJSON(data)
	}
	return nil
}

// LLMJSON returns the error as the JSON text fed back to a generating
// model: the stage tag tells it which artifact to regenerate.
func (e *RegisterError) LLMJSON() string {
	b, err := e.MarshalJSON()
	if err != nil {
		b, _ = marshal(stageMessageJSON{e.Stage, e.Error()})
	}
	return string(b)
}
