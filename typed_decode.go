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
	bits int // a number's size
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
		if f.Anonymous || f.Type.PkgPath() != "" { // a named type may decode itself
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
		ff := flatField{name: name, off: f.Offset, kind: f.Type.Kind()}
		switch ff.kind {
		case reflect.Bool, reflect.String:
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			ff.bits = f.Type.Bits()
		default:
			return nil
		}
		seen[name] = true
		p.fields = append(p.fields, ff)
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

// decode fills the zeroed struct at dst from args (see members) and
// reports whether it could, and which fields it set (a bit each); when it
// could not, dst may be partly filled and the caller zeroes it and
// decodes it the general way.
func (p *flatPlan) decode(args []byte, dst unsafe.Pointer) (seen uint64, ok bool) {
	ok = members(args, func(key, v []byte, kind kinds) bool {
		k := p.field(key)
		if k < 0 || seen&(1<<k) != 0 || kind == kNull {
			return false
		}
		seen |= 1 << k
		return p.fields[k].set(v, kind, dst)
	})
	return seen, ok
}

// vouches says when a decode's success also means check (a capability's
// compiled Params) passes the same arguments, so a [Func] call pays for
// one pass over them, not two: when the decode set every field in need.
// ok is false when no decode can vouch: a schema the check's plan does
// not read, a required name that is no field, a field the check could
// refuse a value of that the decode takes (an enum, a length, a bound
// narrower than the field's type, a type the field's values are not).
// A nil check (Unchecked, no Params) needs nothing.
func (p *flatPlan) vouches(check *argCheck) (need uint64, ok bool) {
	if check == nil {
		return 0, true
	}
	plan := check.plan
	if plan == nil {
		return 0, false
	}
	for name := range plan.required {
		k := p.field([]byte(name))
		if k < 0 {
			return 0, false
		}
		need |= 1 << k
	}
	for i := range p.fields {
		f := &p.fields[i]
		if pp, known := plan.props[f.name]; known && !pp.admits(f) {
			return 0, false
		} else if !known && plan.closed {
			return 0, false
		}
	}
	return need, true
}

// admits says whether the property's plan passes every value the flat
// decode stores in f: f's JSON kind is among its types, and any bound it
// sets is no narrower than f's type (a sized integer's schema carries its
// range: the decode refuses what is outside it).
func (pp *propPlan) admits(f *flatField) bool {
	if pp.enum != nil || pp.exMin != nil || pp.exMax != nil || pp.minLen >= 0 || pp.maxLen >= 0 {
		return false
	}
	var lo, hi float64 // the field's range; bounds on anything else are refused
	var want kinds
	switch f.kind {
	case reflect.Bool:
		want = kBool
	case reflect.String:
		want = kString
	case reflect.Float32, reflect.Float64:
		want = kNumber // the decode takes fractions and exponents
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want, hi = kInteger, math.Ldexp(1, f.bits)-1
	default:
		want, lo, hi = kInteger, -math.Ldexp(1, f.bits-1), math.Ldexp(1, f.bits-1)-1
	}
	if pp.kinds != 0 && pp.kinds&want == 0 {
		return false
	}
	if pp.min == nil && pp.max == nil {
		return true
	}
	return want == kInteger && (pp.min == nil || *pp.min <= lo) && (pp.max == nil || *pp.max >= hi)
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
// exactly as written: a number its type's size holds (an integer written
// without fraction or exponent), a string of valid UTF-8.
func (f *flatField) set(v []byte, k kinds, base unsafe.Pointer) bool {
	at := unsafe.Add(base, f.off)
	switch f.kind {
	case reflect.Bool:
		if k != kBool {
			return false
		}
		*(*bool)(at) = v[0] == 't'
		return true
	case reflect.String:
		if k != kString || !utf8.Valid(v[1:len(v)-1]) {
			return false
		}
		*(*string)(at) = string(v[1 : len(v)-1])
		return true
	}
	if k != kNumber {
		return false
	}
	s := unsafe.String(&v[0], len(v))
	var x uint64
	switch f.kind {
	case reflect.Float32, reflect.Float64:
		fl, err := strconv.ParseFloat(s, f.bits)
		if err != nil {
			return false
		}
		if f.bits == 32 {
			*(*float32)(at) = float32(fl)
		} else {
			*(*float64)(at) = fl
		}
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n, ok := shortInt(v); ok { // most arguments: no strconv
			// strconv.ParseUint refuses "-0" too.
			if v[0] == '-' || f.bits < 64 && uint64(n)>>f.bits != 0 {
				return false
			}
			x = uint64(n)
			break
		}
		u, err := strconv.ParseUint(s, 10, f.bits)
		if err != nil {
			return false
		}
		x = u
	default:
		if n, ok := shortInt(v); ok {
			if sh := 64 - f.bits; n<<sh>>sh != n { // not held in f.bits
				return false
			}
			x = uint64(n)
			break
		}
		i, err := strconv.ParseInt(s, 10, f.bits)
		if err != nil {
			return false
		}
		x = uint64(i)
	}
	storeBits(at, f.bits, x)
	return true
}

// shortInt reads a JSON number of at most 18 digits with no fraction or
// exponent (its grammar checked already: no leading zero), which an int64
// holds whatever the digits.
func shortInt(v []byte) (int64, bool) {
	d := v
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if v[0] == '-' {
		n = -n
	}
	return n, true
}

// storeBits writes the low bits of x to an integer field of that size
// (two's complement: a signed field's value is its bits).
func storeBits(at unsafe.Pointer, bits int, x uint64) {
	switch bits {
	case 8:
		*(*uint8)(at) = uint8(x)
	case 16:
		*(*uint16)(at) = uint16(x)
	case 32:
		*(*uint32)(at) = uint32(x)
	default:
		*(*uint64)(at) = x
	}
}
