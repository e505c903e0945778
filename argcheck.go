//go:build cgo

package codemode

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// argCheck checks a capability's arguments against its Params before its
// handler runs. The schema is compiled once (the loader-less compiler of
// schema.go). Most tool schemas are an object of typed properties and a
// required list; for those a plan checks the arguments in one pass over
// their JSON tokens, and the library runs only to word a failure. Any
// other keyword (enum, pattern, minimum, oneOf...) sends every call to
// the library.
type argCheck struct {
	p    *params
	plan *argPlan // nil: the library checks every call
}

// argPlan is what the fast path checks.
type argPlan struct {
	props    map[string]*propPlan
	required map[string]int // index into a bit set
	closed   bool           // additionalProperties false: no other keys
}

// propPlan is what the fast path checks of one property: its kinds (0:
// any), and the scalar constraints tool schemas commonly carry.
type propPlan struct {
	kinds          kinds
	enum           []any // strings, float64s, bools and nils; nil: none
	min, max       *float64
	exMin, exMax   *float64
	minLen, maxLen int // in characters; -1: none
}

// kinds is a set of JSON kinds, by jsontext.Kind's first byte.
type kinds uint8

const (
	kString kinds = 1 << iota
	kNumber
	kInteger
	kBool
	kNull
	kObject
	kArray
)

var kindNames = map[string]kinds{"string": kString, "number": kNumber | kInteger, "integer": kInteger,
	"boolean": kBool, "null": kNull, "object": kObject, "array": kArray}

// annotations are the keywords that never fail a value.
var annotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true,
	"$comment": true, "$schema": true, "$id": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"format": true} // format is an annotation in the drafts the compiler defaults to

// compileCheck compiles a capability's Params for checking; nil when it
// has none (the sandbox already insists on one argument object).
func (s *schemaCache) compileCheck(raw json.RawMessage) (*argCheck, *RegisterError) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	p, err := s.compile(raw)
	if err != nil {
		return nil, err
	}
	return &argCheck{p: p, plan: planFor(raw)}, nil
}

// planFor makes the fast path's plan of a schema, or nil when it has a
// keyword the plan does not check.
func planFor(raw json.RawMessage) *argPlan {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	plan := &argPlan{props: map[string]*propPlan{}, required: map[string]int{}}
	for k, v := range top {
		switch {
		case annotations[k]:
		case k == "type": // "object", checked by compileParams
		case k == "properties":
			var props map[string]map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			for name, ps := range props {
				pp, ok := propertyPlan(ps)
				if !ok {
					return nil
				}
				plan.props[name] = pp
			}
		case k == "required":
			var req []string
			if json.Unmarshal(v, &req) != nil || len(req) > 64 {
				return nil
			}
			for i, name := range req {
				plan.required[name] = i
			}
		case k == "additionalProperties":
			switch string(bytes.TrimSpace(v)) {
			case "true":
			case "false":
				plan.closed = true
			default:
				return nil
			}
		default:
			return nil
		}
	}
	return plan
}

// propertyPlan reads a property schema of a type, scalar constraints and
// annotations; false when it has anything else.
func propertyPlan(ps map[string]json.RawMessage) (*propPlan, bool) {
	pp := &propPlan{minLen: -1, maxLen: -1}
	num := func(v json.RawMessage) (*float64, bool) {
		var f float64
		if json.Unmarshal(v, &f) != nil {
			return nil, false
		}
		return &f, true
	}
	count := func(v json.RawMessage) (int, bool) {
		var n int
		return n, json.Unmarshal(v, &n) == nil && n >= 0
	}
	var ok bool
	for k, v := range ps {
		switch {
		case annotations[k]:
		case k == "type":
			var one string
			var many []string
			if json.Unmarshal(v, &one) == nil {
				many = []string{one}
			} else if json.Unmarshal(v, &many) != nil {
				return nil, false
			}
			for _, t := range many {
				kk, known := kindNames[t]
				if !known {
					return nil, false
				}
				pp.kinds |= kk
			}
		case k == "enum":
			if json.Unmarshal(v, &pp.enum) != nil || pp.enum == nil {
				return nil, false
			}
			for _, e := range pp.enum {
				switch e.(type) {
				case string, float64, bool, nil:
				default:
					return nil, false // an object or an array: the library compares
				}
			}
		case k == "minimum":
			if pp.min, ok = num(v); !ok {
				return nil, false
			}
		case k == "maximum":
			if pp.max, ok = num(v); !ok {
				return nil, false
			}
		case k == "exclusiveMinimum":
			if pp.exMin, ok = num(v); !ok {
				return nil, false
			}
		case k == "exclusiveMaximum":
			if pp.exMax, ok = num(v); !ok {
				return nil, false
			}
		case k == "minLength":
			if pp.minLen, ok = count(v); !ok {
				return nil, false
			}
		case k == "maxLength":
			if pp.maxLen, ok = count(v); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return pp, true
}

// check says whether a property's value (its JSON text, of kind got)
// passes the plan's scalar constraints.
func (pp *propPlan) check(v []byte, got kinds) bool {
	if pp.enum == nil && pp.min == nil && pp.max == nil && pp.exMin == nil && pp.exMax == nil &&
		pp.minLen < 0 && pp.maxLen < 0 {
		return true
	}
	var val any
	switch {
	case got&kNumber != 0:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return false
		}
		if (pp.min != nil && f < *pp.min) || (pp.max != nil && f > *pp.max) ||
			(pp.exMin != nil && f <= *pp.exMin) || (pp.exMax != nil && f >= *pp.exMax) {
			return false
		}
		val = f
	case got == kString:
		if bytes.IndexByte(v, '\\') >= 0 {
			return false // escapes: the library counts and compares
		}
		str := string(v[1 : len(v)-1])
		n := utf8.RuneCountInString(str)
		if (pp.minLen >= 0 && n < pp.minLen) || (pp.maxLen >= 0 && n > pp.maxLen) {
			return false
		}
		val = str
	case got == kBool:
		val = v[0] == 't'
	case got == kNull:
		val = nil
	default:
		return pp.enum == nil
	}
	if pp.enum == nil {
		return true
	}
	for _, e := range pp.enum {
		if e == val {
			return true
		}
	}
	return false
}

// decoders are reused across calls: a decoder is a large allocation.
var decoders = sync.Pool{New: func() any { return new(planDecoder) }}

type planDecoder struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

// valid says whether args pass the plan. The sandbox writes arguments as
// compact JSON; a quick scan of that form (flat keys without escapes)
// decides most calls, and anything it does not expect goes through
// jsontext's decoder, whose verdict stands. A name with an escape sends the
// call to the library.
func (p *argPlan) valid(args []byte) bool {
	if ok, sure := p.quick(args); sure {
		return ok
	}
	d := decoders.Get().(*planDecoder)
	d.r.Reset(args)
	d.dec.Reset(&d.r)
	ok := p.scan(&d.dec)
	d.r.Reset(nil)
	d.dec.Reset(&d.r)
	decoders.Put(d)
	return ok
}

// quick checks compact JSON (no white space) of an object whose values
// are scalars (see members); sure is false when args are in any other
// form, or a value needs more than a glance (a string with an escape where
// the plan constrains it, a number it must parse).
func (p *argPlan) quick(args []byte) (ok, sure bool) {
	var seen uint64
	refused := false
	read := members(args, func(key, v []byte, kind kinds) bool {
		pp, known := p.props[string(key)]
		if !known && p.closed {
			refused = true
			return false
		}
		if k, ok := p.required[string(key)]; ok {
			seen |= 1 << k
		}
		if known && (pp.kinds != 0 || pp.enum != nil) {
			got := kind
			if got == kNumber && !bytes.ContainsAny(v, ".eE") {
				got |= kInteger
			}
			want := pp.kinds
			if want == 0 {
				want = kString | kNumber | kInteger | kBool | kNull | kObject | kArray
			}
			if want&got == 0 {
				refused = true
				return false
			}
			return pp.check(v, got) // if not, the decoder path decides (an escape, a bound)
		}
		return true
	})
	switch {
	case refused:
		return false, true
	case !read:
		return false, false
	}
	return seen == 1<<len(p.required)-1, true
}

// members calls visit with each member of the compact JSON object args,
// in order: its key (one without an escape), its value and the value's
// kind (a scalar: see valueEnd), until visit returns false. It reports
// whether it read args whole as such an object with every visit returning
// true: false for an object in any other form (white space, an escape in
// a key, a nested value, trailing bytes), or no object.
func members(args []byte, visit func(key, value []byte, kind kinds) bool) bool {
	n := len(args)
	if n < 2 || args[0] != '{' || args[n-1] != '}' {
		return false
	}
	if args[1] == '}' {
		return n == 2
	}
	for i := 1; ; {
		if args[i] != '"' {
			return false
		}
		j := i + 1
		for j < n && args[j] != '"' {
			if args[j] == '\\' || args[j] < 0x20 {
				return false
			}
			j++
		}
		if j+1 >= n || args[j+1] != ':' {
			return false
		}
		key := args[i+1 : j]
		i = j + 2
		end, kind := valueEnd(args, i)
		if end < 0 || !visit(key, args[i:end], kind) {
			return false
		}
		i = end
		switch {
		case i < n-1 && args[i] == ',':
			i++
		case i == n-1:
			return true
		default:
			return false
		}
	}
}

// numberEnd is the end of the JSON number at b[i] (its grammar exactly),
// or i when there is none.
func numberEnd(b []byte, i int) int {
	n, j := len(b), i
	digits := func() int {
		k := j
		for j < n && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < n && b[j] == '-' {
		j++
	}
	switch {
	case j < n && b[j] == '0':
		j++
	case digits() == 0:
		return i
	}
	if j < n && b[j] == '.' {
		j++
		if digits() == 0 {
			return i
		}
	}
	if j < n && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < n && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return i
		}
	}
	return j
}

// valueEnd is the end of the compact JSON value at args[i], and its kind;
// -1 when it is not one this scan reads.
func valueEnd(args []byte, i int) (int, kinds) {
	n := len(args)
	if i >= n {
		return -1, 0
	}
	switch c := args[i]; {
	case c == '"':
		for j := i + 1; j < n; j++ {
			switch b := args[j]; {
			case b == '\\' || b < 0x20:
				return -1, 0 // an escape: the decoder reads it
			case b == '"':
				return j + 1, kString
			}
		}
		return -1, 0
	case c == '-' || (c >= '0' && c <= '9'):
		if j := numberEnd(args, i); j > i {
			return j, kNumber
		}
		return -1, 0
	case c == 't' && bytes.HasPrefix(args[i:], []byte("true")):
		return i + 4, kBool
	case c == 'f' && bytes.HasPrefix(args[i:], []byte("false")):
		return i + 5, kBool
	case c == 'n' && bytes.HasPrefix(args[i:], []byte("null")):
		return i + 4, kNull
	case c == '{' || c == '[':
		return -1, 0 // nested values: the decoder reads them
	}
	return -1, 0
}

func (p *argPlan) scan(dec *jsontext.Decoder) bool {
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	var seen uint64
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil || len(name) < 2 || name[0] != '"' || bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		key := name[1 : len(name)-1]
		pp, known := p.props[string(key)]
		if !known && p.closed {
			return false
		}
		if i, ok := p.required[string(key)]; ok {
			seen |= 1 << i
		}
		if !known || (pp.kinds == 0 && pp.enum == nil) {
			if dec.SkipValue() != nil {
				return false
			}
			continue
		}
		want := pp.kinds
		if want == 0 {
			want = kString | kNumber | kInteger | kBool | kNull | kObject | kArray
		}
		var got kinds
		switch dec.PeekKind() {
		case '"':
			got = kString
		case '0':
			got = kNumber
		case 't', 'f':
			got = kBool
		case 'n':
			got = kNull
		case '{':
			got = kObject
		case '[':
			got = kArray
		default:
			return false
		}
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		if got == kNumber && !bytes.ContainsAny(v, ".eE") {
			got |= kInteger
		}
		if want&got == 0 || !pp.check(v, got) {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	if _, err := dec.ReadToken(); err != io.EOF { // nothing after the object
		return false
	}
	return seen == 1<<len(p.required)-1
}

// problem says why args fail the check, in the words a model reads:
// "`query` is required", "`id`: got string, want integer"; "" if they pass.
func (c *argCheck) problem(args json.RawMessage) string {
	if c.plan != nil && c.plan.valid(args) {
		return ""
	}
	if reason := utf8Problem(args); reason != "" {
		return reason
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "the argument must be an object"
	}
	var missing []string
	for _, name := range c.p.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, "`"+name+"`")
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		return missing[0] + " is required"
	default:
		return strings.Join(missing, ", ") + " are required"
	}
	return c.p.violations(args)
}
