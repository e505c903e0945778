//go:build cgo

package codemode

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// What an Observer is told of an answer the program sees as a failure
// although Go handed it over as a success: a provider tool's envelope
// {"error": …} (from a DispatchFunc, a tool server, an MCP upstream's
// isError), text outside the envelope, or a capability's result that is
// not JSON. The engine decides these in C (bridge_host.c's open_envelope,
// bridge_json.c's parse_result), after the call's observation ended, so
// the observation decides them again here from the answer's text, as the
// engine's JSON parser reads it. Only observed calls pay for it.
//
// What the text alone cannot say: an answer nested deeper than the
// sandbox's stack lets the engine parse (about 5,000 levels at the default
// Limits.Stack) fails in the engine and reads as a success here; a program
// that gives Object.prototype an "error" property fails every call itself;
// a failure's text is `${error}` for JSON values, not for what the codec
// revives (a typed array, a function handle).

// msgInvalidResult is what a capability's result that is not JSON throws
// (bridge_host.c).
const msgInvalidResult = "the capability returned invalid JSON"

// seenFailure returns the failure the program sees in d, a completion Go
// made as a success, and whether there is one.
func (d *completion) seenFailure() (string, bool) {
	if d.failed || len(d.result) == 0 {
		return "", false
	}
	b := d.result[:len(d.result)-1] // NUL-terminated
	if d.str {
		return envelopeFailure(b)
	}
	if s := (jscan{b: b}); !s.document() || !engineUTF8(b) {
		return msgInvalidResult, true
	}
	return "", false
}

// envelopeFailure returns the failure the program sees in a provider
// tool's answer, and whether there is one: the answer is not a JSON object
// (MsgOutsideEnvelope), or its "error" member (the last of that name, as
// JSON.parse keeps it) is truthy by JavaScript's rules, failing with its
// text as `${error}` gives it.
func envelopeFailure(answer []byte) (string, bool) {
	s := jscan{b: answer}
	s.ws()
	if s.i >= len(answer) || answer[s.i] != '{' {
		return MsgOutsideEnvelope, true
	}
	start, end := -1, -1
	s.i++
	s.ws()
	if s.i < len(answer) && answer[s.i] == '}' {
		s.i++
	} else {
		for {
			s.ws()
			k := s.i
			if s.i >= len(answer) || answer[s.i] != '"' || !s.str() {
				return MsgOutsideEnvelope, true
			}
			key := answer[k+1 : s.i-1]
			s.ws()
			if s.i >= len(answer) || answer[s.i] != ':' {
				return MsgOutsideEnvelope, true
			}
			s.i++
			s.ws()
			v := s.i
			if !s.value() {
				return MsgOutsideEnvelope, true
			}
			if keyIs(key, "error") {
				start, end = v, s.i
			}
			s.ws()
			if s.i < len(answer) && answer[s.i] == ',' {
				s.i++
				continue
			}
			if s.i < len(answer) && answer[s.i] == '}' {
				s.i++
				break
			}
			return MsgOutsideEnvelope, true
		}
	}
	s.ws()
	if s.i != len(answer) {
		return MsgOutsideEnvelope, true
	}
	if start < 0 || !truthy(answer[start:end]) {
		return "", false
	}
	return jsText(answer[start:end]), true
}

// truthy reports whether the JSON value v is truthy in JavaScript: all
// but false, null, "", and a number that reads as zero (0, -0, 1e-400).
func truthy(v []byte) bool {
	switch v[0] {
	case 'f', 'n':
		return false
	case '"':
		return len(v) > 2
	case 't', '{', '[':
		return true
	}
	return jsNumber(v) != 0
}

// jsNumber is a JSON number's value as the engine reads it (strtod's
// rounding: past the largest double, an infinity; below the smallest, 0).
func jsNumber(v []byte) float64 {
	f, _ := strconv.ParseFloat(string(v), 64) // ErrRange keeps the infinity or zero
	return f
}

// jsText is `${v}` for the truthy JSON value v: a string's text, a
// number's as Number.prototype.toString writes it, an array's elements'
// joined with commas (null as nothing), "[object Object]" for an object —
// and "toPrimitive", the engine's TypeError, for an object (in an array
// or not) with a "toString" of its own, which no JSON value can call. The
// text is cut near MaxObservedText; the scan goes on for a TypeError.
func jsText(v []byte) string {
	var b strings.Builder
	s := jscan{b: v}
	// Arrays nest: each level joins its elements, whose own joins come
	// flat in between (an explicit stack of "an element came" flags).
	var levels []bool
	for {
		s.ws()
		if len(levels) > 0 {
			top := len(levels) - 1
			switch v[s.i] {
			case ']':
				s.i++
				levels = levels[:top]
				if len(levels) == 0 {
					return b.String()
				}
				continue
			case ',':
				s.i++
				s.ws()
			}
			if levels[top] && b.Len() <= MaxObservedText {
				b.WriteByte(',')
			}
			levels[top] = true
		}
		start := s.i
		switch v[s.i] {
		case '[':
			s.i++
			levels = append(levels, false)
			s.ws()
			continue
		case '{':
			if ownToString(&s) {
				return "toPrimitive"
			}
			if b.Len() <= MaxObservedText {
				b.WriteString("[object Object]")
			}
		default:
			s.value()
			if b.Len() <= MaxObservedText {
				b.WriteString(jsScalar(v[start:s.i]))
			}
		}
		if len(levels) == 0 {
			return b.String()
		}
	}
}

// jsScalar is `${v}` for a JSON value that is no object or array.
func jsScalar(v []byte) string {
	switch v[0] {
	case '"':
		return jsString(v[1 : len(v)-1])
	case 'n':
		return "" // as an array's element; a lone null is falsy
	case 't', 'f':
		return string(v)
	}
	return numberText(jsNumber(v))
}

// ownToString scans the object at s.i and reports whether it has a
// member named "toString".
func ownToString(s *jscan) bool {
	s.i++
	s.ws()
	if s.b[s.i] == '}' {
		s.i++
		return false
	}
	found := false
	for {
		s.ws()
		k := s.i
		s.str()
		if keyIs(s.b[k+1:s.i-1], "toString") {
			found = true
		}
		s.ws()
		s.i++ // ':'
		s.ws()
		s.value()
		s.ws()
		s.i++ // ',' or '}'
		if s.b[s.i-1] == '}' {
			return found
		}
	}
}

// numberText is Number.prototype.toString(f) (ECMA-262 Number::toString,
// radix 10): the shortest digits that read back as f, fixed between 1e-7
// and 1e21, else exponential.
func numberText(f float64) string {
	switch {
	case f == 0:
		return "0"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f < 0:
		return "-" + numberText(-f)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±x
	m, x, _ := strings.Cut(e, "e")
	digits := strings.Replace(m, ".", "", 1)
	exp, _ := strconv.Atoi(x)
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	mant := digits[:1]
	if k > 1 {
		mant += "." + digits[1:]
	}
	if n-1 < 0 {
		return mant + "e-" + strconv.Itoa(1-n)
	}
	return mant + "e+" + strconv.Itoa(n-1)
}

// keyIs reports whether the inside of a JSON string reads as name (an
// ASCII name).
func keyIs(raw []byte, name string) bool {
	if string(raw) == name { // no copy made to compare
		return true
	}
	return len(raw) > len(name) && jsString(raw) == name // escapes: longer
}

// jsString is the text of a JSON string's inside (between its quotes, as
// jscan.str accepted it) as the engine reads it, in Go: escapes decoded,
// bytes as utf8_decode reads them (a byte it refuses is U+FFFD; a
// surrogate's three-byte form is that surrogate), surrogate pairs joined,
// and a lone surrogate U+FFFD (as a JavaScript string's lone surrogate
// reaches Go through JSON).
func jsString(raw []byte) string {
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(raw)
	}
	u := make([]uint16, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch e := raw[i+1]; e {
			case 'b':
				u = append(u, '\b')
			case 'f':
				u = append(u, '\f')
			case 'n':
				u = append(u, '\n')
			case 'r':
				u = append(u, '\r')
			case 't':
				u = append(u, '\t')
			case 'u':
				u = append(u, hex4(raw[i+2:]))
				i += 6
				continue
			default: // '"', '\\', '/'
				u = append(u, uint16(e))
			}
			i += 2
		case c < 0x80:
			u = append(u, uint16(c))
			i++
		default:
			r, n := engineRune(raw[i:])
			if utf16.IsSurrogate(r) {
				u = append(u, uint16(r))
			} else {
				u = utf16.AppendRune(u, r)
			}
			i += n
		}
	}
	return string(utf16.Decode(u))
}

func hex4(b []byte) uint16 {
	var v uint16
	for _, c := range b[:4] {
		v <<= 4
		switch {
		case c <= '9':
			v |= uint16(c - '0')
		case c >= 'a':
			v |= uint16(c - 'a' + 10)
		default:
			v |= uint16(c - 'A' + 10)
		}
	}
	return v
}

// engineRune decodes the character at b[0] (at least one byte, from
// 0x80) as the engine's utf8_decode (cutils.h) does: the WHATWG decoder's
// forms plus the surrogates' three-byte ones, which JavaScript strings
// hold; a sequence it refuses is U+FFFD, one byte long.
func engineRune(b []byte) (rune, int) {
	c := b[0]
	var need int
	var r rune
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need, r = 1, rune(c&0x1F)
	case c == 0xE0:
		need, r, lo = 2, 0, 0xA0
	case c >= 0xE1 && c <= 0xEF:
		need, r = 2, rune(c&0x0F)
	case c == 0xF0:
		need, r, lo = 3, 0, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need, r = 3, rune(c&0x07)
	case c == 0xF4:
		need, r, hi = 3, 4, 0x8F
	default:
		return utf8.RuneError, 1
	}
	if need >= len(b) || b[1] < lo || b[1] > hi {
		return utf8.RuneError, 1
	}
	for j := 1; j <= need; j++ {
		if j > 1 && (b[j] < 0x80 || b[j] > 0xBF) {
			return utf8.RuneError, 1
		}
		r = r<<6 | rune(b[j]&0x3F)
	}
	return r, need + 1
}

// engineUTF8 reports whether the engine's JSON parser takes b's bytes
// (engineRune refuses none).
func engineUTF8(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] < 0x80 {
			i++
			continue
		}
		r, n := engineRune(b[i:])
		if n == 1 && r == utf8.RuneError {
			return false
		}
		i += n
	}
	return true
}

// jscan reads JSON (RFC 8259, the grammar the engine's JSON.parse takes)
// without recursion: nesting costs a byte of stack per level. It takes
// any byte from 0x80 in a string: engineUTF8 judges the bytes apart.
type jscan struct {
	b []byte
	i int
}

// document reports whether b is one JSON value with only whitespace
// around it.
func (s *jscan) document() bool {
	s.ws()
	if !s.value() {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value at s.i, reporting whether it is JSON.
func (s *jscan) value() bool {
	var stack []byte // the open containers: '{' or '['
	for {
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		open := false
		switch c := s.b[s.i]; {
		case c == '{' || c == '[':
			s.i++
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == c+2 { // '}' or ']'
				s.i++
				break
			}
			stack = append(stack, c)
			if c == '{' && !s.key() {
				return false
			}
			open = true
		case c == '"':
			if !s.str() {
				return false
			}
		case c == 't':
			if !s.lit("true") {
				return false
			}
		case c == 'f':
			if !s.lit("false") {
				return false
			}
		case c == 'n':
			if !s.lit("null") {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if !s.number() {
				return false
			}
		default:
			return false
		}
		if open {
			continue
		}
		// After a value: close containers, or a comma and the next.
		for {
			if len(stack) == 0 {
				return true
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			top := stack[len(stack)-1]
			c := s.b[s.i]
			if c == top+2 {
				s.i++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return false
			}
			s.i++
			if top == '{' && !s.key() {
				return false
			}
			break
		}
	}
}

// key scans a member's name and its colon.
func (s *jscan) key() bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' || !s.str() {
		return false
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return false
	}
	s.i++
	return true
}

// str scans a string at s.i (its opening quote).
func (s *jscan) str() bool {
	for s.i++; s.i < len(s.b); {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				s.i += 6
			default:
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

func (s *jscan) lit(w string) bool {
	if !strings.HasPrefix(string(s.b[s.i:]), w) {
		return false
	}
	s.i += len(w)
	return true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *jscan) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b) || !digit(s.b[s.i]):
		return false
	case s.b[s.i] == '0':
		s.i++
	default:
		s.digits()
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.i >= len(s.b) || !digit(s.b[s.i]) {
			return false
		}
		s.digits()
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(s.b) || !digit(s.b[s.i]) {
			return false
		}
		s.digits()
	}
	return true
}

func (s *jscan) digits() {
	for s.i < len(s.b) && digit(s.b[s.i]) {
		s.i++
	}
}

func digit(c byte) bool { return c >= '0' && c <= '9' }
