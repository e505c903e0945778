package codemode

import (
	"errors"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// TextDecoder's legacy encodings: the Encoding Standard's single-byte
// encodings, x-user-defined, and its multi-byte ones (gb18030 and GBK,
// Big5, EUC-JP, ISO-2022-JP, Shift_JIS, EUC-KR). js/web.js decodes UTF-8
// and UTF-16 itself and hands every other label here (native.label,
// native.decode in bridge_web.c).
//
// Labels are golang.org/x/text/encoding/htmlindex's, the standard's table.
// The decoders are the standard's own algorithms (its handlers, byte by
// byte, with the same states, the same bytes restored to the queue and
// the same errors), and their indexes are golang.org/x/text's tables read
// through its decoders, with the standard's values where x/text's tables
// differ from its indexes: the single-byte encodings' C1 controls, which
// x/text leaves unmapped, and the index gb18030 entries x/text lacks (the
// Private Use mappings and GB18030-2022's). x/text's own decoders are not
// used as they are: they differ from the standard in the bytes an error
// consumes, the EUDC range of Shift_JIS, GBK's four-byte sequences,
// ISO-2022-JP's escapes, and the states a stream keeps between calls.
//
// A decoder's state between calls is one uint32 (the standard's state
// variables, packed), which the sandbox keeps: Go keeps nothing per
// decoder.

// textEncoding is one of the Encoding Standard's encodings, as TextDecoder
// decodes it.
type textEncoding struct {
	name   string // the standard's name, lowercased (TextDecoder.prototype.encoding)
	kind   textKind
	single *[128]rune // kindSingleByte: singleByteIndex
}

type textKind uint8

const (
	kindUTF textKind = iota // UTF-8, UTF-16BE/LE: js/web.js's own
	kindReplacement
	kindSingleByte
	kindXUserDefined
	kindGB18030 // and GBK, whose decoder is gb18030's
	kindBig5
	kindEUCJP
	kindISO2022JP
	kindShiftJIS
	kindEUCKR
)

// textEncodings is every encoding htmlindex names, by the id native.label
// hands the sandbox; built once.
var textEncodings = sync.OnceValue(func() []textEncoding {
	var out []textEncoding
	seen := map[string]bool{}
	for _, label := range textCanonical {
		e, err := htmlindex.Get(label)
		if err != nil {
			continue
		}
		name, err := htmlindex.Name(e)
		if err != nil || seen[name] {
			continue
		}
		seen[name] = true
		te := textEncoding{name: name, kind: textKindOf(name)}
		if te.kind == kindSingleByte {
			m, ok := e.(*charmap.Charmap)
			if name == "iso-8859-8-i" { // x/text wraps ISO-8859-8's table; the standard's index is the same one
				m, ok = charmap.ISO8859_8, true
			}
			if !ok {
				continue
			}
			te.single = singleByteIndex(m)
		}
		out = append(out, te)
	}
	return out
})

// textCanonical: the standard's encodings by name (their labels are
// htmlindex's).
var textCanonical = []string{
	"utf-8", "ibm866", "iso-8859-2", "iso-8859-3", "iso-8859-4", "iso-8859-5", "iso-8859-6", "iso-8859-7",
	"iso-8859-8", "iso-8859-8-i", "iso-8859-10", "iso-8859-13", "iso-8859-14", "iso-8859-15", "iso-8859-16",
	"koi8-r", "koi8-u", "macintosh", "windows-874", "windows-1250", "windows-1251", "windows-1252",
	"windows-1253", "windows-1254", "windows-1255", "windows-1256", "windows-1257", "windows-1258",
	"x-mac-cyrillic", "gbk", "gb18030", "big5", "euc-jp", "iso-2022-jp", "shift_jis", "euc-kr",
	"replacement", "utf-16be", "utf-16le", "x-user-defined",
}

func textKindOf(name string) textKind {
	switch name {
	case "utf-8", "utf-16be", "utf-16le":
		return kindUTF
	case "replacement":
		return kindReplacement
	case "x-user-defined":
		return kindXUserDefined
	case "gbk", "gb18030":
		return kindGB18030
	case "big5":
		return kindBig5
	case "euc-jp":
		return kindEUCJP
	case "iso-2022-jp":
		return kindISO2022JP
	case "shift_jis":
		return kindShiftJIS
	case "euc-kr":
		return kindEUCKR
	}
	return kindSingleByte
}

// textLabel is the Encoding Standard's "get an encoding" for a label that
// web.js has already stripped of ASCII whitespace and ASCII-lowercased:
// the encoding's id and name, or -1 for a label of none. htmlindex trims
// and lowercases with Unicode's rules, which the standard does not (a
// U+00A0 or a U+212A KELVIN SIGN is no part of any label): a label it
// would change is refused here first.
func textLabel(label string) (int, string) {
	if label == "" || len(label) > 64 {
		return -1, ""
	}
	for i := 0; i < len(label); i++ {
		if c := label[i]; c <= ' ' || c >= 0x7f || ('A' <= c && c <= 'Z') {
			return -1, ""
		}
	}
	e, err := htmlindex.Get(label)
	if err != nil {
		return -1, ""
	}
	name, err := htmlindex.Name(e)
	if err != nil {
		return -1, ""
	}
	for id, te := range textEncodings() {
		if te.name == name {
			return id, name
		}
	}
	return -1, ""
}

// errTextOverflow: a decode would write past its output, which
// textDecodeBound sizes: never, unless the bound is wrong.
var errTextOverflow = errors.New("codemode: TextDecoder: the decoded text outgrew its bound")

// textDecodeBound is the most UTF-8 a decode of n bytes writes: every
// byte, those a stream kept from before included (at most three), becomes
// at most three bytes of UTF-8 (U+FFFD, or a BMP code point), or with
// others at most four per two (a Big5 pair, a four-byte gb18030 sequence),
// and the end of the stream adds at most one U+FFFD.
func textDecodeBound(n int) int { return 3*(n+3) + 3 }

// textDecode runs encoding id's decoder over in, from the state a previous
// call left (0 for a new stream), writing UTF-8 to out, which holds at
// least textDecodeBound(len(in)) bytes. flush is the end of the stream
// (the standard's end-of-queue; the state returned is then 0). With fatal,
// the first error stops it: ok is false. err is an id out of range, an
// encoding decoded elsewhere, or out too small.
func textDecode(id int, state uint32, in []byte, flush, fatal bool, out []byte) (n int, next uint32, ok bool, err error) {
	encs := textEncodings()
	if id < 0 || id >= len(encs) {
		return 0, 0, false, errors.New("codemode: TextDecoder: no such encoding")
	}
	if len(out) < textDecodeBound(len(in)) {
		return 0, 0, false, errTextOverflow
	}
	d := textDecoder{enc: &encs[id], q: byteQueue{in: in}, out: out, fatal: fatal}
	d.unpack(state)
	switch d.enc.kind {
	case kindSingleByte, kindXUserDefined, kindGB18030, kindBig5, kindEUCJP, kindISO2022JP, kindShiftJIS, kindEUCKR:
	default:
		return 0, 0, false, errors.New("codemode: TextDecoder: " + d.enc.name + " is not decoded here")
	}
	for {
		b := d.q.read()
		if b == endOfQueue && !flush {
			break
		}
		r := d.handle(b)
		if r == resultFinished {
			break
		}
		if r == resultError {
			if fatal {
				return d.n, d.pack(), false, nil
			}
			d.emit(utf8.RuneError)
		}
		if d.overflow {
			return 0, 0, false, errTextOverflow
		}
	}
	if d.overflow {
		return 0, 0, false, errTextOverflow
	}
	if flush {
		return d.n, 0, true, nil
	}
	return d.n, d.pack(), true, nil
}

// endOfQueue is the standard's end-of-queue item.
const endOfQueue = -1

// byteQueue is the standard's I/O queue of bytes over one call's input:
// restored bytes are read again first, in the order restored.
type byteQueue struct {
	in    []byte
	i     int
	back  [4]byte // restored, last out first
	nback int
}

func (q *byteQueue) read() int {
	if q.nback > 0 {
		q.nback--
		return int(q.back[q.nback])
	}
	if q.i < len(q.in) {
		b := q.in[q.i]
		q.i++
		return int(b)
	}
	return endOfQueue
}

// restore puts bs back at the front of the queue, bs[0] read first. A
// handler restores at most three bytes, every one of which it has read
// since the queue last held restored bytes; more would be a bug, refused.
func (q *byteQueue) restore(bs ...byte) bool {
	if q.nback+len(bs) > len(q.back) {
		return false
	}
	for i := len(bs) - 1; i >= 0; i-- {
		q.back[q.nback] = bs[i]
		q.nback++
	}
	return true
}

// A handler's result other than a code point (those are emitted).
type textResult uint8

const (
	resultContinue textResult = iota
	resultError
	resultFinished
)

// textDecoder is one call's decoder: the standard's state variables of
// every legacy decoder (each uses its own), the queue and the output.
type textDecoder struct {
	enc   *textEncoding
	q     byteQueue
	out   []byte
	n     int
	fatal bool

	// gb18030's first, second and third; Big5's, EUC-JP's, Shift_JIS's,
	// EUC-KR's and ISO-2022-JP's leading byte is lead.
	first, second, third byte
	lead                 byte
	jis0212              bool // EUC-JP
	// ISO-2022-JP's decoder state, output state and output flag.
	isoState, isoOutState uint8
	isoOutput             bool

	overflow bool
}

// ISO-2022-JP's decoder states.
const (
	isoASCII uint8 = iota
	isoRoman
	isoKatakana
	isoLeadByte
	isoTrailByte
	isoEscapeStart
	isoEscape
)

// pack is the state between calls: gb18030's three bytes; the other
// decoders' lead in the low byte, then EUC-JP's jis0212 flag or
// ISO-2022-JP's states and output flag.
func (d *textDecoder) pack() uint32 {
	switch d.enc.kind {
	case kindGB18030:
		return uint32(d.first) | uint32(d.second)<<8 | uint32(d.third)<<16
	case kindEUCJP:
		s := uint32(d.lead)
		if d.jis0212 {
			s |= 1 << 8
		}
		return s
	case kindISO2022JP:
		s := uint32(d.lead) | uint32(d.isoState)<<8 | uint32(d.isoOutState)<<12
		if d.isoOutput {
			s |= 1 << 16
		}
		return s
	}
	return uint32(d.lead)
}

// unpack restores pack's state. The sandbox only hands back what a call
// returned (web.js keeps it in a private field, native.decode is out of a
// script's reach), but a state no call leaves is read as a new decoder's
// rather than trusted: every index is read through a valid lead.
func (d *textDecoder) unpack(s uint32) {
	in := func(b, lo, hi byte) bool { return b >= lo && b <= hi }
	valid := true
	switch d.enc.kind {
	case kindGB18030:
		d.first, d.second, d.third = byte(s), byte(s>>8), byte(s>>16)
		valid = s>>24 == 0 && (d.first == 0 || in(d.first, 0x81, 0xfe)) &&
			(d.second == 0 || (d.first != 0 && in(d.second, 0x30, 0x39))) &&
			(d.third == 0 || (d.second != 0 && in(d.third, 0x81, 0xfe)))
	case kindEUCJP:
		d.lead, d.jis0212 = byte(s), s&(1<<8) != 0
		valid = s>>9 == 0 && (d.lead == 0 || d.lead == 0x8e || d.lead == 0x8f || in(d.lead, 0xa1, 0xfe)) &&
			(!d.jis0212 || in(d.lead, 0xa1, 0xfe))
	case kindISO2022JP:
		d.lead = byte(s)
		d.isoState, d.isoOutState = uint8(s>>8&0xf), uint8(s>>12&0xf)
		d.isoOutput = s&(1<<16) != 0
		valid = s>>17 == 0 && d.isoState <= isoEscape && d.isoOutState <= isoLeadByte
		switch {
		case !valid:
		case d.isoState == isoTrailByte:
			valid = in(d.lead, 0x21, 0x7e)
		case d.isoState == isoEscape:
			valid = d.lead == 0x24 || d.lead == 0x28
		} // other states keep the last lead, which they never read
	case kindBig5, kindEUCKR:
		d.lead = byte(s)
		valid = s>>8 == 0 && (d.lead == 0 || in(d.lead, 0x81, 0xfe))
	case kindShiftJIS:
		d.lead = byte(s)
		valid = s>>8 == 0 && (d.lead == 0 || in(d.lead, 0x81, 0x9f) || in(d.lead, 0xe0, 0xfc))
	default:
		valid = s == 0
	}
	if !valid {
		d.first, d.second, d.third, d.lead, d.jis0212 = 0, 0, 0, 0, false
		d.isoState, d.isoOutState, d.isoOutput = isoASCII, isoASCII, false
	}
}

// emit appends code point r (a scalar value) to the output.
func (d *textDecoder) emit(r rune) {
	size := utf8.RuneLen(r)
	if size < 0 {
		size = utf8.UTFMax // not a scalar value: EncodeRune writes U+FFFD
	}
	if len(d.out)-d.n < size {
		d.overflow = true
		return
	}
	d.n += utf8.EncodeRune(d.out[d.n:], r)
}

// emitted: a handler's "return a code point".
func (d *textDecoder) emitted(r rune) textResult {
	d.emit(r)
	return resultContinue
}

// restore: a handler's "restore"; a queue that cannot hold them is a bug,
// reported as an overflow.
func (d *textDecoder) restore(bs ...byte) {
	if !d.q.restore(bs...) {
		d.overflow = true
	}
}

func isASCIIByte(b int) bool { return b >= 0 && b <= 0x7f }

func (d *textDecoder) handle(b int) textResult {
	switch d.enc.kind {
	case kindSingleByte:
		return d.singleByte(b)
	case kindXUserDefined:
		switch {
		case b == endOfQueue:
			return resultFinished
		case isASCIIByte(b):
			return d.emitted(rune(b))
		}
		return d.emitted(rune(0xf780 + b - 0x80))
	case kindGB18030:
		return d.gb18030(b)
	case kindBig5:
		return d.big5(b)
	case kindEUCJP:
		return d.eucJP(b)
	case kindISO2022JP:
		return d.iso2022JP(b)
	case kindShiftJIS:
		return d.shiftJIS(b)
	}
	return d.eucKR(b)
}

// singleByte is the single-byte decoder.
func (d *textDecoder) singleByte(b int) textResult {
	switch {
	case b == endOfQueue:
		return resultFinished
	case isASCIIByte(b):
		return d.emitted(rune(b))
	}
	if r := d.enc.single[b-0x80]; r >= 0 {
		return d.emitted(r)
	}
	return resultError
}

// gb18030 is the gb18030 decoder (GBK's too).
func (d *textDecoder) gb18030(b int) textResult {
	if b == endOfQueue {
		if d.first == 0 && d.second == 0 && d.third == 0 {
			return resultFinished
		}
		d.first, d.second, d.third = 0, 0, 0
		return resultError
	}
	if d.third != 0 {
		if b < 0x30 || b > 0x39 {
			d.restore(d.second, d.third, byte(b))
			d.first, d.second, d.third = 0, 0, 0
			return resultError
		}
		pointer := (int(d.first)-0x81)*(10*126*10) + (int(d.second)-0x30)*(10*126) + (int(d.third)-0x81)*10 + b - 0x30
		r := gb18030RangesCodePoint(pointer)
		d.first, d.second, d.third = 0, 0, 0
		if r < 0 {
			return resultError
		}
		return d.emitted(r)
	}
	if d.second != 0 {
		if b >= 0x81 && b <= 0xfe {
			d.third = byte(b)
			return resultContinue
		}
		d.restore(d.second, byte(b))
		d.first, d.second = 0, 0
		return resultError
	}
	if d.first != 0 {
		if b >= 0x30 && b <= 0x39 {
			d.second = byte(b)
			return resultContinue
		}
		leading := int(d.first)
		d.first = 0
		offset := 0x41
		if b < 0x7f {
			offset = 0x40
		}
		if (b >= 0x40 && b <= 0x7e) || (b >= 0x80 && b <= 0xfe) {
			if r := gb18030Index()[(leading-0x81)*190+b-offset]; r != 0 {
				return d.emitted(rune(r))
			}
		}
		if isASCIIByte(b) {
			d.restore(byte(b))
		}
		return resultError
	}
	switch {
	case isASCIIByte(b):
		return d.emitted(rune(b))
	case b == 0x80:
		return d.emitted('\u20ac')
	case b >= 0x81 && b <= 0xfe:
		d.first = byte(b)
		return resultContinue
	}
	return resultError
}

// big5 is the Big5 decoder.
func (d *textDecoder) big5(b int) textResult {
	if b == endOfQueue {
		if d.lead != 0 {
			d.lead = 0
			return resultError
		}
		return resultFinished
	}
	if d.lead != 0 {
		leading := int(d.lead)
		d.lead = 0
		offset := 0x62
		if b < 0x7f {
			offset = 0x40
		}
		if (b >= 0x40 && b <= 0x7e) || (b >= 0xa1 && b <= 0xfe) {
			pointer := (leading-0x81)*157 + b - offset
			switch pointer { // the standard's table: two code points each
			case 1133:
				d.emit('\u00ca')
				return d.emitted('\u0304')
			case 1135:
				d.emit('\u00ca')
				return d.emitted('\u030c')
			case 1164:
				d.emit('\u00ea')
				return d.emitted('\u0304')
			case 1166:
				d.emit('\u00ea')
				return d.emitted('\u030c')
			}
			if r := big5Index()[pointer]; r != 0 {
				return d.emitted(r)
			}
		}
		if isASCIIByte(b) {
			d.restore(byte(b))
		}
		return resultError
	}
	switch {
	case isASCIIByte(b):
		return d.emitted(rune(b))
	case b >= 0x81 && b <= 0xfe:
		d.lead = byte(b)
		return resultContinue
	}
	return resultError
}

// eucJP is the EUC-JP decoder.
func (d *textDecoder) eucJP(b int) textResult {
	if b == endOfQueue {
		if d.lead != 0 {
			d.lead = 0
			return resultError
		}
		return resultFinished
	}
	if d.lead == 0x8e && b >= 0xa1 && b <= 0xdf {
		d.lead = 0
		return d.emitted(rune(0xff61 - 0xa1 + b))
	}
	if d.lead == 0x8f && b >= 0xa1 && b <= 0xfe {
		d.jis0212 = true
		d.lead = byte(b)
		return resultContinue
	}
	if d.lead != 0 {
		leading := int(d.lead)
		d.lead = 0
		var r uint16
		if leading >= 0xa1 && leading <= 0xfe && b >= 0xa1 && b <= 0xfe {
			pointer := (leading-0xa1)*94 + b - 0xa1
			if d.jis0212 {
				r = jis0212Index()[pointer]
			} else {
				r = jis0208Index()[pointer]
			}
		}
		d.jis0212 = false
		if r != 0 {
			return d.emitted(rune(r))
		}
		if isASCIIByte(b) {
			d.restore(byte(b))
		}
		return resultError
	}
	switch {
	case isASCIIByte(b):
		return d.emitted(rune(b))
	case b == 0x8e || b == 0x8f || (b >= 0xa1 && b <= 0xfe):
		d.lead = byte(b)
		return resultContinue
	}
	return resultError
}

// iso2022JP is the ISO-2022-JP decoder.
func (d *textDecoder) iso2022JP(b int) textResult {
	switch d.isoState {
	case isoASCII, isoRoman, isoKatakana, isoLeadByte:
		switch {
		case b == 0x1b:
			d.isoState = isoEscapeStart
			return resultContinue
		case b == endOfQueue:
			return resultFinished
		}
		d.isoOutput = false
		switch d.isoState {
		case isoASCII:
			if isASCIIByte(b) && b != 0x0e && b != 0x0f {
				return d.emitted(rune(b))
			}
		case isoRoman:
			switch {
			case b == 0x5c:
				return d.emitted('\u00a5')
			case b == 0x7e:
				return d.emitted('\u203e')
			case isASCIIByte(b) && b != 0x0e && b != 0x0f:
				return d.emitted(rune(b))
			}
		case isoKatakana:
			if b >= 0x21 && b <= 0x5f {
				return d.emitted(rune(0xff61 - 0x21 + b))
			}
		case isoLeadByte:
			if b >= 0x21 && b <= 0x7e {
				d.lead = byte(b)
				d.isoState = isoTrailByte
				return resultContinue
			}
		}
		return resultError
	case isoTrailByte:
		switch {
		case b == 0x1b:
			d.isoState = isoEscapeStart
			return resultError
		case b >= 0x21 && b <= 0x7e:
			d.isoState = isoLeadByte
			if r := jis0208Index()[(int(d.lead)-0x21)*94+b-0x21]; r != 0 {
				return d.emitted(rune(r))
			}
			return resultError
		}
		d.isoState = isoLeadByte
		return resultError
	case isoEscapeStart:
		if b == 0x24 || b == 0x28 {
			d.lead = byte(b)
			d.isoState = isoEscape
			return resultContinue
		}
		if b != endOfQueue {
			d.restore(byte(b))
		}
		d.isoOutput = false
		d.isoState = d.isoOutState
		return resultError
	}
	// isoEscape
	leading := d.lead
	d.lead = 0
	state := uint8(0xff)
	switch {
	case leading == 0x28 && b == 0x42:
		state = isoASCII
	case leading == 0x28 && b == 0x4a:
		state = isoRoman
	case leading == 0x28 && b == 0x49:
		state = isoKatakana
	case leading == 0x24 && (b == 0x40 || b == 0x42):
		state = isoLeadByte
	}
	if state != 0xff {
		d.isoState, d.isoOutState = state, state
		output := d.isoOutput
		d.isoOutput = true
		if output {
			return resultError
		}
		return resultContinue
	}
	if b == endOfQueue {
		d.restore(leading)
	} else {
		d.restore(leading, byte(b))
	}
	d.isoOutput = false
	d.isoState = d.isoOutState
	return resultError
}

// shiftJIS is the Shift_JIS decoder.
func (d *textDecoder) shiftJIS(b int) textResult {
	if b == endOfQueue {
		if d.lead != 0 {
			d.lead = 0
			return resultError
		}
		return resultFinished
	}
	if d.lead != 0 {
		leading := int(d.lead)
		d.lead = 0
		offset := 0x41
		if b < 0x7f {
			offset = 0x40
		}
		leadingOffset := 0xc1
		if leading < 0xa0 {
			leadingOffset = 0x81
		}
		if (b >= 0x40 && b <= 0x7e) || (b >= 0x80 && b <= 0xfc) {
			pointer := (leading-leadingOffset)*188 + b - offset
			if pointer >= 8836 && pointer <= 10715 { // EUDC
				return d.emitted(rune(0xe000 - 8836 + pointer))
			}
			if r := jis0208Index()[pointer]; r != 0 {
				return d.emitted(rune(r))
			}
		}
		if isASCIIByte(b) {
			d.restore(byte(b))
		}
		return resultError
	}
	switch {
	case isASCIIByte(b) || b == 0x80:
		return d.emitted(rune(b))
	case b >= 0xa1 && b <= 0xdf:
		return d.emitted(rune(0xff61 - 0xa1 + b))
	case (b >= 0x81 && b <= 0x9f) || (b >= 0xe0 && b <= 0xfc):
		d.lead = byte(b)
		return resultContinue
	}
	return resultError
}

// eucKR is the EUC-KR decoder.
func (d *textDecoder) eucKR(b int) textResult {
	if b == endOfQueue {
		if d.lead != 0 {
			d.lead = 0
			return resultError
		}
		return resultFinished
	}
	if d.lead != 0 {
		leading := int(d.lead)
		d.lead = 0
		if b >= 0x41 && b <= 0xfe {
			if r := eucKRIndex()[(leading-0x81)*190+b-0x41]; r != 0 {
				return d.emitted(rune(r))
			}
		}
		if isASCIIByte(b) {
			d.restore(byte(b))
		}
		return resultError
	}
	switch {
	case isASCIIByte(b):
		return d.emitted(rune(b))
	case b >= 0x81 && b <= 0xfe:
		d.lead = byte(b)
		return resultContinue
	}
	return resultError
}

// The indexes, read from x/text's decoders once per process, the first
// time an encoding that needs one decodes. A pointer an index lacks is 0
// (no index maps a pointer to U+0000).

// xtextRune is what x/text's decoder e makes of bytes b: the one code
// point it decodes them to, or 0 (for none, U+FFFD, or more than one).
func xtextRune(e encoding.Encoding, b []byte) rune {
	var dst [16]byte
	t := e.NewDecoder()
	n, _, err := t.Transform(dst[:], b, true)
	if err != nil {
		return 0
	}
	r, size := utf8.DecodeRune(dst[:n])
	if size != n || r == utf8.RuneError {
		return 0
	}
	return r
}

// singleByteIndex is index single-byte for bytes 0x80 to 0xFF: x/text's
// table, where the standard maps the C1 controls x/text leaves unmapped
// (0x80 to 0x9F, each to itself: the ISO-8859 encodings' and the
// windows-125x gaps); -1 for a byte the index lacks.
func singleByteIndex(m *charmap.Charmap) *[128]rune {
	t := new([128]rune)
	for b := 0x80; b <= 0xff; b++ {
		r := m.DecodeByte(byte(b))
		if r == utf8.RuneError {
			r = -1
			if b < 0xa0 {
				r = rune(b)
			}
		}
		t[b-0x80] = r
	}
	return t
}

// gb18030Index is index gb18030 (pointers 0 to 23939): x/text's GB18030
// two-byte table, with gb18030Missing's entries.
var gb18030Index = sync.OnceValue(func() *[23940]uint16 {
	t := new([23940]uint16)
	for p := range t {
		trail := p % 190
		offset := 0x40
		if trail >= 0x3f {
			offset = 0x41
		}
		t[p] = uint16(xtextRune(simplifiedchinese.GB18030, []byte{byte(p/190 + 0x81), byte(trail + offset)}))
	}
	for _, m := range gb18030Missing {
		for i := range int(m.n) {
			t[int(m.pointer)+i] = m.codePoint + uint16(i)
		}
	}
	return t
})

// gb18030Missing: the runs of index gb18030 that x/text's table does not
// map (pointer, code point, length): the user-defined areas and the other
// Private Use mappings the standard keeps, GB18030-2005's U+1E3F at 0xA8
// 0xBC, and GB18030-2022's 18 code points (whatwg/encoding 2c3853e, "Adopt
// GB18030-2022"). TestTextIndexes holds the whole index against the
// standard's and Node's.
var gb18030Missing = []struct{ pointer, codePoint, n uint16 }{
	{6080, 0xE4C6, 96}, {6270, 0xE526, 96}, {6376, 0xE766, 6}, {6433, 0xE76D, 1}, {6444, 0xE76E, 2},
	{6458, 0xE770, 2}, {6460, 0xE586, 95}, {6650, 0xE5E6, 96}, {6829, 0xE772, 11}, {6840, 0xE646, 96},
	{7022, 0xE77D, 8}, {7030, 0xE6A6, 96}, {7150, 0xE785, 8}, {7182, 0xFE10, 1}, {7183, 0xFE12, 1},
	{7184, 0xFE11, 1}, {7185, 0xFE13, 4}, {7201, 0xFE17, 2}, {7208, 0xFE19, 1}, {7211, 0xE797, 9},
	{7220, 0xE706, 96}, {7349, 0xE7A0, 15}, {7397, 0xE7AF, 13}, {7495, 0xE7BC, 11}, {7533, 0x1E3F, 1},
	{7538, 0xE7C9, 4}, {7579, 0xE7CD, 21}, {7624, 0xE7E2, 1}, {7627, 0xE7E3, 1}, {7629, 0xE7E4, 3},
	{7686, 0xE7F4, 13}, {7775, 0xE801, 15}, {7886, 0xE000, 94}, {8076, 0xE05E, 94}, {8266, 0xE0BC, 94},
	{8456, 0xE11A, 94}, {8646, 0xE178, 94}, {8836, 0xE1D6, 94}, {16525, 0xE810, 5}, {22706, 0xE234, 94},
	{22896, 0xE292, 94}, {23086, 0xE2F0, 94}, {23276, 0xE34E, 94}, {23466, 0xE3AC, 94}, {23656, 0xE40A, 94},
	{23767, 0xE816, 3}, {23775, 0x9FB4, 1}, {23783, 0x9FB5, 1}, {23788, 0x9FB6, 2}, {23794, 0xE831, 1},
	{23795, 0x9FB8, 1}, {23804, 0xE83B, 1}, {23812, 0x9FB9, 1}, {23829, 0x9FBA, 1}, {23830, 0xE855, 1},
	{23845, 0x9FBB, 1}, {23846, 0xE468, 94},
}

// gb18030RangesCodePoint is index gb18030 ranges code point for pointer:
// below 39420, x/text's four-byte decoding (gb18030Ranges), which is the
// index's but for the standard's pointer 7457 (GB18030-2005's U+E7C7); the
// supplementary planes by the index's last range; -1 for null.
func gb18030RangesCodePoint(pointer int) rune {
	switch {
	case (pointer > 39419 && pointer < 189000) || pointer > 1237575 || pointer < 0:
		return -1
	case pointer == 7457:
		return '\ue7c7'
	case pointer >= 189000:
		return rune(0x10000 + pointer - 189000)
	}
	return rune(gb18030Ranges()[pointer])
}

// gb18030Ranges is index gb18030 ranges over the Basic Multilingual Plane
// (pointers 0 to 39419), read from x/text's decoder once, through each
// pointer's four bytes (U+FFFD at pointer 39417 is the index's own).
var gb18030Ranges = sync.OnceValue(func() *[39420]uint16 {
	t := new([39420]uint16)
	d := simplifiedchinese.GB18030.NewDecoder()
	for p := range t {
		b := []byte{byte(p/12600 + 0x81), byte(p%12600/1260 + 0x30), byte(p%1260/10 + 0x81), byte(p%10 + 0x30)}
		var dst [8]byte
		n, _, err := d.Transform(dst[:], b, true)
		if r, size := utf8.DecodeRune(dst[:n]); err == nil && size == n && n > 0 {
			t[p] = uint16(r)
		}
	}
	return t
})

// big5Index is index Big5 (pointers 0 to 19781): x/text's table (its
// HKSCS code points past the BMP included).
var big5Index = sync.OnceValue(func() *[19782]rune {
	t := new([19782]rune)
	for p := range t {
		trail := p % 157
		offset := 0x40
		if trail >= 0x3f {
			offset = 0x62
		}
		t[p] = xtextRune(traditionalchinese.Big5, []byte{byte(p/157 + 0x81), byte(trail + offset)})
	}
	return t
})

// jis0208Index is index jis0208, for every pointer Shift_JIS reaches (0
// to 11279): x/text's Shift_JIS table, read through the pointer's bytes
// (it leaves the EUDC pointers unmapped, as the index does: the Shift_JIS
// decoder maps them itself).
var jis0208Index = sync.OnceValue(func() *[11280]uint16 {
	t := new([11280]uint16)
	for p := range t {
		lead, trail := p/188, p%188
		if lead < 0x1f {
			lead += 0x81
		} else {
			lead += 0xc1
		}
		offset := 0x40
		if trail >= 0x3f {
			offset = 0x41
		}
		t[p] = uint16(xtextRune(japanese.ShiftJIS, []byte{byte(lead), byte(trail + offset)}))
	}
	return t
})

// jis0212Index is index jis0212 (pointers 0 to 8835): x/text's EUC-JP
// table, through 0x8F and the pointer's two bytes.
var jis0212Index = sync.OnceValue(func() *[8836]uint16 {
	t := new([8836]uint16)
	for p := range t {
		t[p] = uint16(xtextRune(japanese.EUCJP, []byte{0x8f, byte(p/94 + 0xa1), byte(p%94 + 0xa1)}))
	}
	return t
})

// eucKRIndex is index EUC-KR, for every pointer the decoder reaches (0 to
// 23939): x/text's table.
var eucKRIndex = sync.OnceValue(func() *[23940]uint16 {
	t := new([23940]uint16)
	for p := range t {
		t[p] = uint16(xtextRune(korean.EUCKR, []byte{byte(p/190 + 0x81), byte(p%190 + 0x41)}))
	}
	return t
})
