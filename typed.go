//go:build cgo

package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"
)

// Func makes a capability of a typed Go function: Params and Returns are
// inferred from In and Out (github.com/google/jsonschema-go; a field's
// `jsonschema:"..."` tag is its description, `json` tags name and omit
// fields as encoding/json's do, and a field without omitempty is
// required), the argument object is checked against Params and decoded
// into In (github.com/go-json-experiment/json, about twice as fast as
// encoding/json into structs), and fn's result is the call's. A decode
// failure is the script's TypeError, worded as the check's
// ("get_user: `id`: ..."), and fn never runs. Func panics if In or Out has
// no JSON Schema (a channel, a func); set Async on the result to make the
// calls promises.
func Func[In, Out any](name, description string, fn func(context.Context, In) (Out, error)) Capability {
	// A call's In and Out live in pooled scratch, so a call allocates
	// only what decoding In needs (its strings, say).
	pool := sync.Pool{New: func() any { return new(funcScratch[In, Out]) }}
	// An Out that can hold an interface or itself is checked for cycles
	// before it is encoded (see checkNesting); a plain struct is not.
	outNests := typeMayNest(reflect.TypeFor[Out]())
	flat := flatPlanFor(reflect.TypeFor[In]())
	return Capability{
		flat:        flat,
		Name:        name,
		Description: description,
		Params:      schemaFor[In](),
		Returns:     schemaFor[Out](),
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var in In
			if err := jsonv2.Unmarshal(args, &in); err != nil {
				return nil, &argsError{msg: decodeProblem(err)}
			}
			return fn(ctx, in)
		},
		encode: func(ctx context.Context, c *Capability, args, dst []byte) ([]byte, error) {
			sc := pool.Get().(*funcScratch[In, Out])
			defer pool.Put(sc)
			var zeroIn In
			var zeroOut Out
			sc.in = zeroIn
			var seen uint64
			decoded := false
			if flat != nil {
				seen, decoded = flat.decode(args, unsafe.Pointer(&sc.in))
			}
			// One pass over args where the decode vouches for the check.
			if !decoded || !c.flatVouches || seen&c.flatNeed != c.flatNeed {
				if err := c.refusal(args); err != nil {
					sc.in = zeroIn
					return dst, err
				}
			}
			var err error
			if !decoded {
				sc.in = zeroIn
				err = jsonv2.Unmarshal(args, &sc.in)
			}
			in := sc.in
			sc.in = zeroIn
			if err != nil {
				return dst, &argsError{msg: decodeProblem(err)}
			}
			if sc.out, err = fn(ctx, in); err != nil {
				sc.out = zeroOut
				return dst, err
			}
			if b, ok := appendScalar(dst, &sc.out); ok {
				sc.out = zeroOut
				return b, nil
			}
			if outNests {
				if err := checkNesting(sc.out); err != nil {
					sc.out = zeroOut
					return dst, &encodeError{err}
				}
			}
			sc.w.b = dst
			err = jsonv2.MarshalWrite(&sc.w, &sc.out, codecOptions)
			dst, sc.w.b, sc.out = sc.w.b, nil, zeroOut
			if err != nil {
				return dst, &encodeError{err}
			}
			return dst, nil
		},
	}
}

// appendScalar appends the JSON of the common scalar results directly,
// as appendJSON does for a boxed one (p points to the result; no boxing).
func appendScalar(dst []byte, p any) ([]byte, bool) {
	switch v := p.(type) {
	case *int:
		return strconv.AppendInt(dst, int64(*v), 10), true
	case *int64:
		return strconv.AppendInt(dst, *v, 10), true
	case *bool:
		return strconv.AppendBool(dst, *v), true
	case *float64:
		if !math.IsInf(*v, 0) && !math.IsNaN(*v) {
			return strconv.AppendFloat(dst, *v, 'g', -1, 64), true
		}
	case *string:
		if plainASCII(*v) {
			dst = append(dst, '"')
			dst = append(dst, *v...)
			return append(dst, '"'), true
		}
	}
	return dst, false
}

// funcScratch is one call's In and Out, and the writer that appends Out's
// JSON to the glue's buffer.
type funcScratch[In, Out any] struct {
	in  In
	out Out
	w   appendWriter
}

// appendWriter appends what is written to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// encodeError is a result that did not encode (a Func's Out).
type encodeError struct{ err error }

func (e *encodeError) Error() string { return "cannot encode the result as JSON: " + e.err.Error() }

// FuncTool is [Func] as a [Tool] (for [NewCodeModeTool] and the SDK
// adapters): its definition carries the inferred schemas, and a call
// decodes its arguments into In and encodes fn's Out as its JSON result.
// Arguments that do not decode are an error naming the path.
func FuncTool[In, Out any](name, description string, fn func(context.Context, In) (Out, error)) Tool {
	return &funcTool[In, Out]{def: ToolDefinition{Name: name, Description: description,
		Parameters: schemaFor[In](), Returns: schemaFor[Out]()}, fn: fn}
}

type funcTool[In, Out any] struct {
	def ToolDefinition
	fn  func(context.Context, In) (Out, error)
}

// Definition returns the tool's name, description and inferred schemas.
func (t *funcTool[In, Out]) Definition() ToolDefinition { return t.def }

// Call decodes args into In, calls the function and encodes its result.
func (t *funcTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	var in In
	if err := jsonv2.Unmarshal(args, &in); err != nil {
		return nil, &argsError{msg: decodeProblem(err)}
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := checkNesting(out); err != nil {
		return nil, err
	}
	return jsonv2.Marshal(out, codecOptions)
}

// schemaFor is T's JSON Schema, as JSON.
func schemaFor[T any]() json.RawMessage {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("codemode: Func: %v", err))
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("codemode: Func: %v", err))
	}
	return b
}

// argsError is a handler's refusal of its arguments: the script's
// TypeError, not the capability's failure.
type argsError struct{ msg string }

func (e *argsError) Error() string { return e.msg }

// decodeProblem words a decode error as the argument check does: the path
// in backquotes, then what is wrong, without Go's type names.
func decodeProblem(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		where := "the argument"
		if p := strings.TrimPrefix(string(se.JSONPointer), "/"); p != "" {
			where = "`" + strings.ReplaceAll(p, "/", ".") + "`"
		}
		want := "a value of another type"
		if se.GoType != nil {
			want = jsonKind(se.GoType.Kind().String())
		}
		got := "a value"
		if se.JSONKind != 0 {
			got = map[byte]string{'"': "string", '0': "number", 't': "boolean", 'f': "boolean", 'n': "null",
				'{': "object", '[': "array"}[byte(se.JSONKind)]
		}
		if se.Err != nil && se.JSONKind != 0 && got != "" {
			return fmt.Sprintf("%s: got %s, want %s (%v)", where, got, want, se.Err)
		}
		return fmt.Sprintf("%s: got %s, want %s", where, got, want)
	}
	return "the argument is not valid JSON"
}

// jsonKind names a Go kind as JSON Schema names its type.
func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "integer"
	case strings.HasPrefix(k, "float"):
		return "number"
	case k == "bool":
		return "boolean"
	case k == "string":
		return "string"
	case k == "slice", k == "array":
		return "array"
	case k == "struct", k == "map":
		return "object"
	}
	return k
}
