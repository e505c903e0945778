//go:build cgo

package codemode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"lukechampine.com/blake3"
)

// Bounds on a JSON Schema codemode compiles, checked before any compiling
// starts: a schema is a model's or a tool author's input, and compiling is
// the only work done on it outside a sandbox.
const (
	// MaxSchemaBytes is the largest schema document accepted, in bytes.
	MaxSchemaBytes = 256 << 10
	// MaxSchemaDepth is the deepest nesting of JSON objects and arrays a
	// schema may have: 128 levels, room for 64 levels of nested
	// "properties".
	MaxSchemaDepth = 128
)

// schemaBase is the URL a schema document is compiled under. No loader
// stands behind it: a reference that leaves the document resolves to a
// URL under it (or to wherever it is absolute) and is refused.
const schemaBase = "https://codemode.invalid/schema.json"

// errNoLoad is what the compiler's loader answers for every URL.
var errNoLoad = errors.New("codemode loads nothing")

// refusingLoader is the only loader a schema compiler gets: it loads
// nothing from anywhere, so a schema can refer only to itself. (The JSON
// Schema meta-schemas are built into the compiler and need no loader.)
type refusingLoader struct{}

func (refusingLoader) Load(string) (any, error) { return nil, errNoLoad }

// schemaProblem says why a schema document cannot be compiled before
// anything parses it: its size, its nesting or its encoding.
func schemaProblem(raw []byte) string {
	if len(raw) > MaxSchemaBytes {
		return fmt.Sprintf("the schema is %d bytes; at most %d are allowed", len(raw), MaxSchemaBytes)
	}
	if !utf8.Valid(raw) {
		return "the schema is not valid UTF-8"
	}
	if d := jsonDepth(raw); d > MaxSchemaDepth {
		return fmt.Sprintf("the schema nests deeper than %d levels of objects and arrays", MaxSchemaDepth)
	}
	return ""
}

// jsonDepth returns the deepest nesting of objects and arrays in a JSON
// text, in one pass; it stops counting at MaxSchemaDepth+1. Brackets in
// strings do not count. The text need not be valid JSON.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > MaxSchemaDepth {
					return deepest
				}
			}
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// compileSchema compiles a JSON Schema document, the one way codemode
// compiles any schema. It loads nothing: no file, no network; only the
// document's own "#..." references resolve. The reason of a refusal names
// the reference that left the document.
func compileSchema(raw []byte) (*jsonschema.Schema, string) {
	if reason := schemaProblem(raw); reason != "" {
		return nil, reason
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Sprintf("the schema is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(schemaBase, doc); err != nil {
		return nil, err.Error()
	}
	sch, err := c.Compile(schemaBase)
	if err != nil {
		return nil, compileProblem(err)
	}
	return sch, ""
}

// compileProblem words a compiler error for the model; an external
// reference is named as the schema wrote it where it was relative.
func compileProblem(err error) string {
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		ref := load.URL
		if rel, ok := strings.CutPrefix(ref, "https://codemode.invalid/"); ok {
			ref = rel
		}
		return fmt.Sprintf("the schema refers to %q, outside itself: codemode loads no file or URL, so a schema "+
			"may refer only to its own parts (\"#/$defs/...\", \"#/properties/...\")", ref)
	}
	msg := err.Error()
	return strings.ReplaceAll(msg, schemaBase, "")
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

// compileParams checks a parameters schema and compiles it once for
// validating arguments; it returns the required names in schema order.
func compileParams(params json.RawMessage) (*jsonschema.Schema, []string, *RegisterError) {
	bad := func(format string, args ...any) *RegisterError {
		return &RegisterError{Stage: StageInvalidSchema, Reason: fmt.Sprintf(format, args...)}
	}
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	if reason := schemaProblem(params); reason != "" {
		return nil, nil, bad("%s", reason)
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
	var props map[string]json.RawMessage
	if p, ok := top["properties"]; ok {
		if json.Unmarshal(p, &props) != nil || props == nil {
			return nil, nil, bad("\"properties\" must be an object")
		}
		for _, name := range objectKeys(p) {
			if v := bytes.TrimSpace(props[name]); len(v) == 0 || v[0] != '{' {
				return nil, nil, bad("property `%s` must be a schema object", name)
			}
		}
	}
	var required []string
	if r, ok := top["required"]; ok {
		if json.Unmarshal(r, &required) != nil || required == nil {
			return nil, nil, bad("\"required\" must be an array of strings")
		}
		for _, name := range required {
			if _, ok := props[name]; !ok {
				return nil, nil, bad("\"required\" names `%s`, which is not in \"properties\"", name)
			}
		}
	}
	sch, reason := compileSchema(params)
	if reason != "" {
		return nil, nil, bad("%s", reason)
	}
	return sch, required, nil
}

// englishPrinter renders schema violations.
var englishPrinter = message.NewPrinter(language.English)

// argsProblem says why args cannot be the tool's arguments, or "".
func (t *tool) argsProblem(args json.RawMessage) string {
	if reason := utf8Problem(args); reason != "" {
		return reason
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "the arguments must be a JSON object"
	}
	if n := outOfRange(args); n != "" {
		return "the number " + n + " is out of range: JavaScript cannot represent it"
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
	return t.params.violations(args)
}

// violations words why args (a JSON object) fail the schema: each failing
// location and why, sorted; "" if they pass.
func (p *params) violations(args json.RawMessage) string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return "the arguments must be a JSON object"
	}
	verr, ok := p.schema.Validate(inst).(*jsonschema.ValidationError)
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

// outOfRange returns the first number of a valid JSON text that a
// float64 (JavaScript's number) cannot hold, or "": the engine would read
// 1e400 as Infinity, which is not what the caller sent. Only numbers with
// an exponent or of 300 digits and more can overflow.
func outOfRange(text []byte) string {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"':
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			j := i
			exp := false
			for j < len(text) && strings.IndexByte("+-0123456789.eE", text[j]) >= 0 {
				exp = exp || text[j] == 'e' || text[j] == 'E'
				j++
			}
			if exp || j-i >= 300 {
				if _, err := strconv.ParseFloat(string(text[i:j]), 64); err != nil {
					return string(text[i:j])
				}
			}
			i = j - 1
		}
	}
	return ""
}

// utf8Problem says where text is not valid UTF-8, or "". The engine's
// JSON parser refuses invalid UTF-8 and the Go decoders do not (they
// substitute U+FFFD), so argument text is checked here first: one rule for
// both sides.
func utf8Problem(text []byte) string {
	if utf8.Valid(text) {
		return ""
	}
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	return fmt.Sprintf("the arguments are not valid UTF-8 (byte %d is 0x%02x)", i, text[i])
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
