//go:build cgo

package codemode

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The pinned texts of the dispatch protocol. A program can recognise them,
// so a host should not reword them.
const (
	// MsgExecutionCompleted is what a tool call meets once the run has
	// settled: composed by the sandbox without entering the dispatch, and
	// by a closed [Latch].
	MsgExecutionCompleted = "Execution has already completed."
	// MsgOutsideEnvelope is what a program catches when the dispatch
	// answered with a text that is not a JSON object (a string, a number,
	// an array, null, or not JSON at all): a defect of the dispatch, not of
	// the program. An object without "result" or "error" is inside the
	// envelope and gives undefined.
	MsgOutsideEnvelope = "The dispatch answered outside the result envelope."
)

// The tags of the codec's envelopes.
const (
	// BinaryTag tags ArrayBuffer, DataView and typed-array values:
	// {"__executor_binary_v1__":"Uint8Array","data":"<base64>"}.
	BinaryTag = "__executor_binary_v1__"
	// HandleTag tags a function of the program passed to a tool:
	// {"__executor_handle_v1__":1}. See [Handle].
	HandleTag = "__executor_handle_v1__"
)

// ToolNotFoundError is how a dispatch turns a tool down, and what the
// program catches when a request has no dispatch at all. Its text is
// pinned: Tool "<tool>" not found.
type ToolNotFoundError struct{ Tool string }

// Error returns the pinned text.
func (e ToolNotFoundError) Error() string { return `Tool "` + e.Tool + `" not found` }

// Latch tells an [EnvelopeDispatch] whether the execution it serves is
// still active. Close it (in a defer, after Execute returns) and no code of
// yours runs on behalf of that execution again. The zero value is active.
// Safe for concurrent use.
type Latch struct{ closed atomic.Bool }

// NewLatch returns an active latch.
func NewLatch() *Latch { return new(Latch) }

// Active reports whether the latch is still open.
func (l *Latch) Active() bool { return !l.closed.Load() }

// Close closes the latch; it stays closed.
func (l *Latch) Close() { l.closed.Store(true) }

// EnvelopeDispatch builds a [DispatchFunc] from a responder that returns
// plain Go values. It checks the latch first: a call arriving with the
// latch closed is answered with [MsgExecutionCompleted] and never reaches
// respond. A value respond returns is sent as {"result": value} through
// the codec ([]byte becomes a tagged Uint8Array anywhere in the value; a
// json.RawMessage result is passed through untouched); an error becomes
// {"error": message}, which the program catches as an Error carrying
// exactly that message ("the tool failed" for an error whose message is
// empty: an empty "error" is falsy and would read as a success).
func EnvelopeDispatch(l *Latch, respond func(ctx context.Context, provider, tool, argsJSON string) (any, error)) DispatchFunc {
	return func(ctx context.Context, provider, tool, argsJSON string) (string, error) {
		if l != nil && !l.Active() {
			return errorEnvelope(MsgExecutionCompleted), nil
		}
		v, err := respond(ctx, provider, tool, argsJSON)
		if err != nil {
			return errorEnvelope(err.Error()), nil
		}
		if raw, ok := v.(json.RawMessage); ok {
			if len(raw) == 0 {
				raw = json.RawMessage("null")
			}
			return `{"result":` + string(raw) + `}`, nil
		}
		result, err := StringifyForDispatch(v)
		if err != nil {
			return errorEnvelope("the tool's result cannot be encoded: " + err.Error()), nil
		}
		return `{"result":` + result + `}`, nil
	}
}

// errorEnvelope is {"error": msg}; an empty msg is "the tool failed", since
// {"error":""} is falsy and the program would read it as a success.
func errorEnvelope(msg string) string {
	if msg == "" {
		msg = "the tool failed"
	}
	b, err := marshal(struct {
		Error string `json:"error"`
	}{msg})
	if err != nil {
		return `{"error":"` + MsgOutsideEnvelope + `"}`
	}
	return string(b)
}

// codecOptions encode like encoding/json (without HTML escaping) and tag
// every []byte as a binary envelope, wherever it sits in the value.
var codecOptions = jsonv2.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsontext.EscapeForHTML(false),
	jsonv2.WithMarshalers(jsonv2.MarshalToFunc(func(enc *jsontext.Encoder, b []byte) error {
		if b == nil {
			return enc.WriteToken(jsontext.Null)
		}
		return enc.WriteValue(binaryEnvelope(b))
	})),
)

func binaryEnvelope(b []byte) jsontext.Value {
	out := make([]byte, 0, len(BinaryTag)+base64.StdEncoding.EncodedLen(len(b))+32)
	out = append(out, `{"`+BinaryTag+`":"Uint8Array","data":"`...)
	out = base64.StdEncoding.AppendEncode(out, b)
	return append(out, `"}`...)
}

// StringifyForDispatch encodes v as the protocol's JSON: encoding/json's
// rules, with every []byte (at any depth) as a tagged Uint8Array and every
// [Handle] as a handle envelope. A json.RawMessage v is returned as it is.
func StringifyForDispatch(v any) (string, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return string(raw), nil
	}
	b, err := jsonv2.Marshal(v, codecOptions)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ParseForDispatch decodes the protocol's JSON as encoding/json decodes
// into an any (objects map[string]any, arrays []any, numbers float64),
// reviving every binary envelope, of whatever type, as its bytes ([]byte)
// and every handle envelope as a [Handle].
func ParseForDispatch(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	if !strings.Contains(s, BinaryTag) && !strings.Contains(s, HandleTag) {
		return v, nil
	}
	return revive(v), nil
}

// ParseDispatchArguments decodes a call's argsJSON ([ParseForDispatch]) and
// always returns the arguments as a slice: a positional call's array as
// it is, anything else (the object of an ObjectArgs provider) as its only
// element. So {"id":7} parses to [map[id:7]].
func ParseDispatchArguments(argsJSON string) ([]any, error) {
	v, err := ParseForDispatch(argsJSON)
	if err != nil {
		return nil, err
	}
	if args, ok := v.([]any); ok {
		return args, nil
	}
	return []any{v}, nil
}

// revive replaces tagged envelopes in a decoded tree.
func revive(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if typ, ok := t[BinaryTag].(string); ok && typ != "" {
			if data, ok := t["data"].(string); ok {
				if b, err := base64.StdEncoding.DecodeString(data); err == nil {
					return b
				}
			}
		}
		if id, ok := t[HandleTag].(float64); ok && len(t) == 1 {
			return Handle{id: id}
		}
		for k, e := range t {
			t[k] = revive(e)
		}
	case []any:
		for i, e := range t {
			t[i] = revive(e)
		}
	}
	return v
}

// Handle names a function the program passed to a tool (or returned from
// a handle call). It is only meaningful for the execution that produced
// it: with Request.RetainHandles, [Retained.Call] invokes it after Execute
// has returned. A Handle sent back to the program (in a tool's result or a
// handle call's arguments) arrives as the original function.
type Handle struct{ id float64 }

// MarshalJSON writes the handle envelope.
func (h Handle) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"%s":%v}`, HandleTag, h.id), nil
}

// UnmarshalJSON reads the handle envelope.
func (h *Handle) UnmarshalJSON(b []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	id, ok := m[HandleTag]
	if !ok || len(m) != 1 {
		return errors.New("codemode: not a handle envelope: " + string(bytes.TrimSpace(b)))
	}
	h.id = id
	return nil
}

// String returns "handle <n>".
func (h Handle) String() string { return fmt.Sprintf("handle %v", h.id) }
