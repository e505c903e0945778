//go:build cgo

package codemode

import (
	"bytes"
	"context"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
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
//
// The latch is read as of the moment a call leaves the sandbox, as the
// protocol's synchronous dispatch reads it: a call the program made before
// Close is admitted even when its goroutine reaches the check after Close
// (a fire-and-forget call's responder runs although the latch was closed
// the moment Execute returned), and a call made after Close is refused.
type Latch struct {
	closedAt atomic.Uint64 // latchClock's tick of Close; 0 while open
}

// latchClock orders a call's departure from the sandbox against a Latch's
// Close: a call records the clock as it leaves, Close takes a later tick.
var latchClock atomic.Uint64

// NewLatch returns an active latch.
func NewLatch() *Latch { return new(Latch) }

// Active reports whether the latch is still open.
func (l *Latch) Active() bool { return l.closedAt.Load() == 0 }

// Close closes the latch; it stays closed.
func (l *Latch) Close() { l.closedAt.CompareAndSwap(0, latchClock.Add(1)) }

// admits reports whether a call served with ctx passes the latch: it is
// open, or the call left the sandbox before it closed.
func (l *Latch) admits(ctx context.Context) bool {
	closed := l.closedAt.Load()
	if closed == 0 {
		return true
	}
	c, ok := ctx.Value(departureKey{}).(*departureContext)
	return ok && c.departed < closed
}

// CallContext returns ctx marked as the context of a dispatch call that
// is leaving the sandbox now: a [Latch] closed after this admits the call
// whenever its goroutine reaches the check. Execute marks its own calls; a
// surface that carries calls to a DispatchFunc in another process (the
// daemon's client) marks each as it arrives, before the program's result.
func CallContext(ctx context.Context) context.Context {
	return &departureContext{ctx, latchClock.Load()}
}

// departureKey finds the departureContext of a dispatch call.
type departureKey struct{}

// departureContext is the context a dispatch call is served with: the
// run's, and the latchClock reading taken as the call left the sandbox.
type departureContext struct {
	context.Context
	departed uint64
}

// Value answers departureKey with the call's record, the rest from the run's context.
func (c *departureContext) Value(key any) any {
	if key == (departureKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// EnvelopeDispatch builds a [DispatchFunc] from a responder that returns
// plain Go values. It checks the latch first: a call that left the sandbox
// after the latch closed is answered with [MsgExecutionCompleted] and never reaches
// respond. A value respond returns is sent as {"result": value} through
// the codec ([]byte becomes a tagged Uint8Array anywhere in the value; a
// json.RawMessage result is passed through untouched); an error becomes
// {"error": message}, which the program catches as an Error carrying
// exactly that message ("the tool failed" for an error whose message is
// empty: an empty "error" is falsy and would read as a success).
func EnvelopeDispatch(l *Latch, respond func(ctx context.Context, provider, tool, argsJSON string) (any, error)) DispatchFunc {
	return func(ctx context.Context, provider, tool, argsJSON string) (string, error) {
		if l != nil && !l.admits(ctx) {
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
	if err := checkNesting(v); err != nil {
		return "", err
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

// maxValueDepth bounds the nesting of a Go value the codec encodes: a
// host's value (a handler's result, a dispatch's answer) may refer to
// itself, and the encoder follows a pointer to an interface that holds it
// without end (a Go stack overflow, which no recover stops). encoding/json
// gives up on a cycle after 1,000 levels too.
const maxValueDepth = 1000

// errNesting is the encoding error of a value past maxValueDepth.
type errNesting struct{ cycle string }

func (e *errNesting) Error() string {
	if e.cycle != "" {
		return "json: unsupported value: it refers to itself (a cycle through " + e.cycle + ")"
	}
	return "json: unsupported value: it nests deeper than " + strconv.Itoa(maxValueDepth) + " levels"
}

// checkNesting returns an *errNesting when v refers to itself or nests
// deeper than maxValueDepth, before the codec's encoder follows it. Values
// of a type that can hold neither an interface nor itself need no walk.
func checkNesting(v any) error {
	if v == nil || !typeMayNest(reflect.TypeOf(v)) {
		return nil
	}
	w := nestWalk{path: map[uintptr]bool{}, height: map[uintptr]int{}}
	_, err := w.walk(reflect.ValueOf(v), 0)
	return err
}

var nestTypes sync.Map // reflect.Type -> bool

// typeMayNest says whether a value of t can nest without a bound its type
// sets: t holds an interface, or refers to itself (and does not encode
// itself: its own method's output is the encoder's to bound).
func typeMayNest(t reflect.Type) bool {
	if v, ok := nestTypes.Load(t); ok {
		return v.(bool)
	}
	r := walkNest(t, map[reflect.Type]bool{})
	nestTypes.Store(t, r)
	return r
}

func walkNest(t reflect.Type, path map[reflect.Type]bool) bool {
	if path[t] {
		return true // the type refers to itself
	}
	if t.Kind() != reflect.Interface && (encodesItself(t) || encodesItself(reflect.PointerTo(t))) {
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
	default:
		return false
	}
	path[t] = true
	defer delete(path, t)
	switch t.Kind() {
	case reflect.Map:
		return walkNest(t.Elem(), path)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && walkNest(f.Type, path) {
				return true
			}
		}
		return false
	}
	return walkNest(t.Elem(), path)
}

// nestWalk walks a value depth first, at most maxValueDepth deep: path
// holds the pointers, maps and slices on the way down (one met again is a
// cycle), height what a shared one, already walked, adds below it.
type nestWalk struct {
	path   map[uintptr]bool
	height map[uintptr]int
}

var marshalerTypes = []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[jsonv2.MarshalerTo](),
	reflect.TypeFor[jsonv2.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()}

// encodesItself says whether a value of t is encoded by its own method,
// which the walk cannot see into (the encoder's own depth limit holds it).
func encodesItself(t reflect.Type) bool {
	for _, m := range marshalerTypes {
		if t.Implements(m) {
			return true
		}
	}
	return false
}

func (w *nestWalk) walk(v reflect.Value, depth int) (int, error) {
	if depth > maxValueDepth {
		return 0, &errNesting{}
	}
	if !v.IsValid() || (v.Kind() != reflect.Interface && !typeMayNest(v.Type())) {
		return 0, nil
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return 0, nil
		}
		h, err := w.walk(v.Elem(), depth+1)
		return h + 1, err
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if v.IsNil() || (v.Kind() != reflect.Pointer && v.Len() == 0) || (v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8) {
			return 0, nil
		}
		p := v.Pointer()
		if w.path[p] {
			return 0, &errNesting{cycle: v.Type().String()}
		}
		if h, ok := w.height[p]; ok && depth+h <= maxValueDepth {
			return h, nil
		}
		w.path[p] = true
		h, err := w.children(v, depth)
		delete(w.path, p)
		w.height[p] = h
		return h, err
	case reflect.Array, reflect.Struct:
		return w.children(v, depth)
	}
	return 0, nil
}

// children walks what v holds: the height of the highest, plus one.
func (w *nestWalk) children(v reflect.Value, depth int) (int, error) {
	h := 0
	visit := func(c reflect.Value) error {
		ch, err := w.walk(c, depth+1)
		h = max(h, ch+1)
		return err
	}
	switch v.Kind() {
	case reflect.Pointer:
		return h, visit(v.Elem())
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if err := visit(it.Value()); err != nil {
				return h, err
			}
		}
	case reflect.Slice, reflect.Array:
		if !typeMayNest(v.Type().Elem()) {
			return 1, nil
		}
		for i := range v.Len() {
			if err := visit(v.Index(i)); err != nil {
				return h, err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && typeMayNest(f.Type) {
				if err := visit(v.Field(i)); err != nil {
					return h, err
				}
			}
		}
	}
	return h, nil
}
