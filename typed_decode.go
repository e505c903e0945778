//go:build cgo

package codemode

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// typed_decode.go: the argument objects a sandbox sends a [Func] are
// mostly flat (a few strings, numbers and booleans), and decoding them
// with the general decoder was a quarter of a typed host call. flatPlan
// decodes those into In directly, in one pass over the JSON the engine
// wrote, and hands anything it is not sure of (an escape, a nested value,
// null, an unknown or repeated key, a number the field cannot hold as
// written) to the general decoder, so every In decodes to what
// github.com/go-json-experiment/json makes of it: FuzzFlatDecode holds
// the two to the same answer.

// flatPlan is how to decode a JSON object into a struct of scalar fields.
type flatPlan struct {
	fields []flatField // at most 64: a bit each for repeats
}

type flatField struct {
	name string
	off  uintptr
	kind reflect.Kind
}

// flatPlanFor returns the plan of t, or nil when t is not a struct of
// named scalar fields: every exported field a bool, string, integer or
// float (not a named type with methods of its own: a type may unmarshal
// itself), tagged with a JSON name and no option beyond omitempty and
// omitzero.
func flatPlanFor(t reflect.Type) *flatPlan {
	// A type with methods may decode itself (UnmarshalJSON, ...).
	if t.Kind() != reflect.Struct || t.NumField() > 64 || reflect.PointerTo(t).NumMethod() > 0 {
		return nil
	}
	p := &flatPlan{}
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			if _, tagged := f.Tag.Lookup("json"); tagged || f.Anonymous {
				return nil
			}
			continue
		}
		if f.Anonymous || f.Type.NumMethod() > 0 || f.Type.PkgPath() != "" {
			return nil
		}
		tag, ok := f.Tag.Lookup("json")
		if !ok {
			return nil
		}
		name, opts, hasOpts := strings.Cut(tag, ",")
		if hasOpts {
			// Each known option once, nothing else (the decoder refuses
			// the type over an empty or a repeated one).
			got := map[string]bool{}
			for _, o := range strings.Split(opts, ",") {
				if (o != "omitempty" && o != "omitzero") || got[o] {
					return nil
				}
				got[o] = true
			}
		}
		if !plainName(name) || seen[name] {
			return nil
		}
		switch f.Type.Kind() {
		case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		default:
			return nil
		}
		seen[name] = true
		p.fields = append(p.fields, flatField{name: name, off: f.Offset, kind: f.Type.Kind()})
	}
	if len(p.fields) == 0 { // the decoder refuses a struct with no exported field
		return nil
	}
	return p
}

// plainName reports whether a tag's name is letters, digits, '_' and '-'
// only: any other is left to the general decoder, which reads quoted
// names and refuses some.
func plainName(name string) bool {
	if name == "" || name == "-" {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// decode fills the zeroed struct at dst from args and reports whether it
// could; when it could not, dst may be partly filled and the caller
// zeroes it and decodes it the general way.
func (p *flatPlan) decode(args []byte, dst unsafe.Pointer) bool {
	n := len(args)
	if n < 2 || args[0] != '{' || args[n-1] != '}' {
		return false
	}
	i := 1
	if args[i] == '}' {
		return i == n-1
	}
	var seen uint64
	for {
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
		if end < 0 || kind == kNull {
			return false
		}
		k := p.field(key)
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		if !p.fields[k].set(args[i:end], kind, dst) {
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

func (p *flatPlan) field(key []byte) int {
	for k := range p.fields {
		if p.fields[k].name == string(key) {
			return k
		}
	}
	return -1
}

// set stores the JSON scalar v (of kind k) in the field, if it holds it
// exactly as written.
func (f *flatField) set(v []byte, k kinds, base unsafe.Pointer) bool {
	at := unsafe.Add(base, f.off)
	switch f.kind {
	case reflect.Bool:
		if k != kBool {
			return false
		}
		*(*bool)(at) = v[0] == 't'
	case reflect.String:
		if k != kString || !utf8.Valid(v[1:len(v)-1]) {
			return false
		}
		*(*string)(at) = string(v[1 : len(v)-1])
	case reflect.Float64, reflect.Float32:
		if k != kNumber {
			return false
		}
		bits := 64
		if f.kind == reflect.Float32 {
			bits = 32
		}
		x, err := strconv.ParseFloat(unsafe.String(&v[0], len(v)), bits)
		if err != nil {
			return false
		}
		if bits == 32 {
			*(*float32)(at) = float32(x)
		} else {
			*(*float64)(at) = x
		}
	default:
		if k != kNumber {
			return false
		}
		return setInteger(f.kind, v, at)
	}
	return true
}

// setInteger stores a JSON integer written as digits (an optional minus,
// no fraction or exponent) in an integer field it fits.
func setInteger(kind reflect.Kind, v []byte, at unsafe.Pointer) bool {
	neg := v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 || len(digits) > 19 {
		return false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		u = u*10 + uint64(c-'0')
	}
	switch kind {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if neg {
			return false
		}
		switch kind {
		case reflect.Uint8:
			if u > math.MaxUint8 {
				return false
			}
			*(*uint8)(at) = uint8(u)
		case reflect.Uint16:
			if u > math.MaxUint16 {
				return false
			}
			*(*uint16)(at) = uint16(u)
		case reflect.Uint32:
			if u > math.MaxUint32 {
				return false
			}
			*(*uint32)(at) = uint32(u)
		case reflect.Uint64:
			*(*uint64)(at) = u
		default:
			if u != uint64(uint(u)) {
				return false
			}
			*(*uint)(at) = uint(u)
		}
		return true
	}
	if u > math.MaxInt64 {
		return false
	}
	x := int64(u)
	if neg {
		x = -x
	}
	switch kind {
	case reflect.Int8:
		if x != int64(int8(x)) {
			return false
		}
		*(*int8)(at) = int8(x)
	case reflect.Int16:
		if x != int64(int16(x)) {
			return false
		}
		*(*int16)(at) = int16(x)
	case reflect.Int32:
		if x != int64(int32(x)) {
			return false
		}
		*(*int32)(at) = int32(x)
	case reflect.Int64:
		*(*int64)(at) = x
	default:
		if x != int64(int(x)) {
			return false
		}
		*(*int)(at) = int(x)
	}
	return true
}
