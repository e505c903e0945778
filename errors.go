package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

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

// Errors that [ExecError] values match with errors.Is.
var (
	// ErrClosed is matched by every error of an executor used after Close.
	ErrClosed = errors.New("codemode: executor closed")
	// ErrTimeout is matched by an ExecError of kind timeout, which also
	// matches context.DeadlineExceeded.
	ErrTimeout = errors.New("codemode: deadline exceeded")
)

// ExecError is how a run or a tool call fails. Kind says what failed; the
// other fields are set per kind, exactly as the reference executor's JSON
// carries them:
//
//	not_found        Name
//	timeout          Name, DeadlineMS
//	memory_exceeded  Name, LimitBytes
//	js               Name, Message
//	invalid_args     Name, Reason
//	capability       Name, Capability, Message
//	pending_promise  Name
//	internal         Message
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
	case KindJS:
		return fmt.Sprintf("codemode: %s: %s", e.Name, e.Message)
	case KindInvalidArgs:
		return fmt.Sprintf("codemode: %s: invalid arguments: %s", e.Name, e.Reason)
	case KindCapability:
		return fmt.Sprintf("codemode: %s: capability %s failed: %s", e.Name, e.Capability, e.Message)
	case KindPendingPromise:
		return fmt.Sprintf("codemode: %s: the returned promise never settles", e.Name)
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
	}
	internalJSON struct {
		Kind    ErrorKind `json:"kind"`
		Message string    `json:"message"`
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
	}
)

// MarshalJSON writes the reference's kind-tagged shape, e.g.
// {"kind":"timeout","name":"add","deadline_ms":500}.
func (e *ExecError) MarshalJSON() ([]byte, error) {
	switch e.Kind {
	case KindNotFound, KindPendingPromise:
		return json.Marshal(nameJSON{e.Kind, e.Name})
	case KindTimeout:
		return json.Marshal(timeoutJSON{e.Kind, e.Name, e.DeadlineMS})
	case KindMemoryExceeded:
		return json.Marshal(memoryJSON{e.Kind, e.Name, e.LimitBytes})
	case KindJS:
		return json.Marshal(messageJSON{e.Kind, e.Name, e.Message})
	case KindInvalidArgs:
		return json.Marshal(reasonJSON{e.Kind, e.Name, e.Reason})
	case KindCapability:
		return json.Marshal(capabilityJSON{e.Kind, e.Name, e.Capability, e.Message})
	case KindInternal:
		return json.Marshal(internalJSON{e.Kind, e.Message})
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
		Capability: w.Capability, DeadlineMS: w.DeadlineMS, LimitBytes: w.LimitBytes}
	return nil
}

// LLMJSON returns the error as the JSON text fed back to a generating
// model: the kind tag tells it which artifact to regenerate.
func (e *ExecError) LLMJSON() string {
	b, err := e.MarshalJSON()
	if err != nil {
		b, _ = json.Marshal(internalJSON{KindInternal, e.Error()})
	}
	return string(b)
}

// internalError builds an internal ExecError wrapping cause.
func internalError(op string, cause error) *ExecError {
	return &ExecError{Kind: KindInternal, Message: "codemode: " + op + ": " + cause.Error(), cause: cause}
}
