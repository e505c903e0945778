//go:build cgo

package codemode

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

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
	props    map[string]kinds // the kinds a property may have; 0: any
	required map[string]int   // index into a bit set
	closed   bool             // additionalProperties false: no other keys
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
	plan := &argPlan{props: map[string]kinds{}, required: map[string]int{}}
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
				ks, ok := propertyKinds(ps)
				if !ok {
					return nil
				}
				plan.props[name] = ks
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

// propertyKinds reads a property schema of only a type and annotations.
func propertyKinds(ps map[string]json.RawMessage) (kinds, bool) {
	var ks kinds
	for k, v := range ps {
		switch {
		case annotations[k]:
		case k == "type":
			var one string
			var many []string
			if json.Unmarshal(v, &one) == nil {
				many = []string{one}
			} else if json.Unmarshal(v, &many) != nil {
				return 0, false
			}
			for _, t := range many {
				kk, ok := kindNames[t]
				if !ok {
					return 0, false
				}
				ks |= kk
			}
		default:
			return 0, false
		}
	}
	return ks, true
}

// decoders are reused across calls: a decoder is a large allocation.
var decoders = sync.Pool{New: func() any { return new(planDecoder) }}

type planDecoder struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

// valid says whether args pass the plan: one pass over its tokens. A name
// with an escape sends the call to the library.
func (p *argPlan) valid(args []byte) bool {
	d := decoders.Get().(*planDecoder)
	d.r.Reset(args)
	d.dec.Reset(&d.r)
	ok := p.scan(&d.dec)
	d.r.Reset(nil)
	d.dec.Reset(&d.r)
	decoders.Put(d)
	return ok
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
		want, known := p.props[string(key)]
		if !known && p.closed {
			return false
		}
		if i, ok := p.required[string(key)]; ok {
			seen |= 1 << i
		}
		if !known || want == 0 {
			if dec.SkipValue() != nil {
				return false
			}
			continue
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
		if want&got == 0 {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
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
