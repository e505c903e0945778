//go:build cgo

package codemode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// shape.go: results and logs cut to a budget, structurally. A model's
// context is the scarce thing: a 5 MB array the program returned is
// better as its first items and how many were left out than as a payload
// error the model can only guess at. Shaping is a pure function of the
// value and the budget (the same input gives the same bytes), its output
// is valid JSON, and it never grows a value that fits.

// DefaultOutputBudget is the budget CodeModeTool, the adapters and
// `codemode mcp` shape a run's output to unless told otherwise: 24 KiB,
// about 8,000 tokens at [BytesPerToken].
const DefaultOutputBudget = 24 << 10

// BytesPerToken is the estimate [TokenBudget] converts by: JSON text
// averages three to four bytes per token in the OpenAI and Anthropic
// tokenizers (punctuation and digits tokenize densely); three keeps a
// budget in tokens from being exceeded.
const BytesPerToken = 3

// TokenBudget is a budget of n tokens in bytes, at BytesPerToken.
func TokenBudget(n int) int { return n * BytesPerToken }

// minShape is the smallest budget a value is shaped into: below it, an
// array or an object is not entered.
const minShape = 24

// minEnter is the smallest share an array's item after its first is
// shaped into when it does not fit whole: with less, the array ends there
// (the model is better served by the count than by a shell).
const minEnter = 256

// maxShapeDepth bounds the nesting shaping descends into: a deeper array
// or object is replaced by a string saying what it was.
const maxShapeDepth = 64

// Shaping says what shaping cut from a value or from logs, for the model
// (see [Shaping.Note]) and the host.
type Shaping struct {
	// Budget is the budget the value (or the logs) was shaped to, in
	// bytes; Size its size before.
	Budget, Size int
	// Arrays counts the arrays cut, Items the items they left out.
	Arrays, Items int
	// Objects counts the objects cut, Keys the members they left out.
	Objects, Keys int
	// Strings counts the strings cut to their start.
	Strings int
	// Deep counts the arrays and objects replaced by a description,
	// being too deep or too large to enter with the budget left.
	Deep int
	// Lines counts the log lines left out.
	Lines int
}

// Note tells the model what was cut and how to ask for less.
func (s *Shaping) Note(what string) string {
	var parts []string
	if s.Items > 0 {
		parts = append(parts, fmt.Sprintf("%d array items left out (%s)", s.Items, plural(s.Arrays, "array")))
	}
	if s.Keys > 0 {
		parts = append(parts, fmt.Sprintf("%d object members left out (%s)", s.Keys, plural(s.Objects, "object")))
	}
	if s.Strings == 1 {
		parts = append(parts, "1 string cut to its start")
	} else if s.Strings > 1 {
		parts = append(parts, fmt.Sprintf("%d strings cut to their start", s.Strings))
	}
	if s.Deep > 0 {
		parts = append(parts, fmt.Sprintf("%s replaced by a description", plural(s.Deep, "nested value")))
	}
	if s.Lines > 0 {
		parts = append(parts, fmt.Sprintf("%s left out between the first and the last", plural(s.Lines, "line")))
	}
	return fmt.Sprintf("the %s was %d bytes, over the budget of %d, and was shaped to fit: %s. "+
		"To see what was cut, return less: filter, slice or summarize in the program (or return a part at a time)",
		what, s.Size, s.Budget, strings.Join(parts, "; "))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// ShapeJSON returns value cut to at most budget bytes, structurally: an
// array keeps its first items and ends with a string saying how many were
// left out, an object keeps its first members and ends with a member "…"
// saying which were left out, a long string keeps its start and says its
// length, and what is too deep (past 64 levels) or too large to enter
// becomes a string describing it. The output is valid JSON; value must
// be (a run's result is). A value that fits is returned as it is, with a
// nil Shaping. A budget below 64 bytes is taken as 64.
func ShapeJSON(value json.RawMessage, budget int) (json.RawMessage, *Shaping) {
	budget = max(budget, 64)
	if len(value) <= budget {
		return value, nil
	}
	s := &shaper{b: value, info: Shaping{Budget: budget, Size: len(value)}}
	i := skipWS(value, 0)
	s.shape(i, skipValue(value, i), budget, 0)
	return s.out, &s.info
}

// shaper writes one shaped value.
type shaper struct {
	b    []byte
	out  []byte
	info Shaping
}

// shape appends the value b[i:end] in at most budget bytes.
func (s *shaper) shape(i, end, budget, depth int) {
	raw := s.b[i:end]
	if len(raw) <= budget {
		s.out = append(s.out, raw...)
		return
	}
	switch raw[0] {
	case '"':
		s.str(raw, budget)
	case '[', '{':
		if depth >= maxShapeDepth || budget < minShape {
			s.describe(raw)
			return
		}
		if raw[0] == '[' {
			s.array(i, end, budget, depth)
		} else {
			s.object(i, end, budget, depth)
		}
	default: // a number longer than the budget (a literal never is)
		s.info.Deep++
		s.out = append(s.out, fmt.Sprintf(`"… a number of %d characters"`, len(raw))...)
	}
}

// str appends a string's start and its length, in about budget bytes.
func (s *shaper) str(raw []byte, budget int) {
	s.info.Strings++
	n := jsonChars(raw[1 : len(raw)-1])
	tail := fmt.Sprintf("… [%d characters in all]\"", n)
	keep := max(budget-len(tail)-1, 8)
	s.out = append(s.out, '"')
	s.out = append(s.out, cutJSONString(raw[1:len(raw)-1], keep)...)
	s.out = append(s.out, tail...)
}

// jsonChars counts the characters of a JSON string's content (an escape
// is one).
func jsonChars(content []byte) int {
	n := 0
	for i := 0; i < len(content); n++ {
		switch c := content[i]; {
		case c == '\\' && i+1 < len(content) && content[i+1] == 'u':
			i += 6
		case c == '\\':
			i += 2
		default:
			_, step := utf8.DecodeRune(content[i:])
			i += step
		}
	}
	return n
}

// cutJSONString is the start of a string's JSON content, at most n bytes,
// not splitting an escape or a character.
func cutJSONString(content []byte, n int) []byte {
	if len(content) <= n {
		return content
	}
	i := 0
	for i < len(content) {
		step := 1
		switch c := content[i]; {
		case c == '\\':
			step = 2
			if i+1 < len(content) && content[i+1] == 'u' {
				step = 6
			}
		case c >= 0x80:
			_, step = utf8.DecodeRune(content[i:])
		}
		if i+step > n {
			break
		}
		i += step
	}
	return content[:i]
}

// describe appends a string describing an array or object not entered.
func (s *shaper) describe(raw []byte) {
	s.info.Deep++
	n := 0
	for i := skipWS(raw, 1); i < len(raw) && raw[i] != ']' && raw[i] != '}'; {
		i = skipValue(raw, i)
		if raw[0] == '{' { // the key's value
			i = skipValue(raw, skipWS(raw, skipWS(raw, i)+1))
		}
		n++
		i = skipWS(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	what := plural(n, "item")
	open, close := "[", "]"
	if raw[0] == '{' {
		what, open, close = plural(n, "key"), "{", "}"
	}
	s.out = append(s.out, fmt.Sprintf(`"%s… %s, %d bytes%s"`, open, what, len(raw), close)...)
}

// spans returns the array's items (or the object's members: key start,
// value start, value end) as offsets into b.
func (s *shaper) spans(i, end int, object bool) [][3]int {
	var out [][3]int
	b := s.b
	j := skipWS(b, i+1)
	for j < end-1 && b[j] != ']' && b[j] != '}' {
		k := j
		if object {
			k = skipWS(b, skipWS(b, skipValue(b, j))+1) // past the colon
		}
		e := skipValue(b, k)
		out = append(out, [3]int{j, k, e})
		j = skipWS(b, e)
		if j < end && b[j] == ',' {
			j = skipWS(b, j+1)
		}
	}
	return out
}

// array appends the array's first items that fit and a string counting
// the rest.
func (s *shaper) array(i, end, budget, depth int) {
	items := s.spans(i, end, false)
	start := len(s.out)
	s.out = append(s.out, '[')
	kept := 0
	for idx, it := range items {
		left := len(items) - idx
		marker := 0
		if left > 1 {
			marker = len(arrayMarker(left-1, len(items))) + 1
		}
		room := budget - (len(s.out) - start) - 1 - marker - 1 // the comma, the marker, the bracket
		if !s.member(nil, it[0], it[2], room, left, start+budget-1-marker, depth, idx > 0) {
			break
		}
		kept++
	}
	if kept < len(items) {
		s.info.Arrays++
		s.info.Items += len(items) - kept
		if kept > 0 {
			s.out = append(s.out, ',')
		}
		s.out = append(s.out, arrayMarker(len(items)-kept, len(items))...)
	}
	s.out = append(s.out, ']')
}

// member appends one item (key nil) or member, shaped to its share of
// room (left items share it), after a comma when comma is set; it takes
// back what it wrote and reports false when that does not end by limit
// (an offset into out) or its share is too small to enter.
func (s *shaper) member(key []byte, i, end, room, left, limit, depth int, comma bool) bool {
	give := room - len(key) - 1
	if left > 1 && end-i > give {
		give /= min(4, left) // too large for the room: a share of it
	}
	if end-i > give && (give < minShape || comma && key == nil && give < minEnter) {
		return false // an item after the first is entered only with room to show some of it
	}
	mark, info := len(s.out), s.info
	if comma {
		s.out = append(s.out, ',')
	}
	if key != nil {
		s.out = append(s.out, key...)
		s.out = append(s.out, ':')
	}
	s.shape(i, end, give, depth+1)
	if len(s.out) > limit {
		s.out, s.info = s.out[:mark], info
		return false
	}
	return true
}

func arrayMarker(left, all int) string {
	return fmt.Sprintf(`"… %d more %s (%d in all)"`, left, map[bool]string{true: "item", false: "items"}[left == 1], all)
}

// objectMarker is the member naming the keys left out, at most 64 bytes.
func objectMarker(left int, names []string) string {
	q, _ := marshal(fmt.Sprintf("%d more keys: %s", left, strings.Join(names, ", ")))
	if len(q) > 56 {
		q = append(append(cutJSONString(q[1:len(q)-1], 50), "…"...), '"')
		q = append([]byte{'"'}, q...)
	}
	return `"…":` + string(q)
}

// object appends the object's members shaped to fair shares of the
// budget, when every member's key fits with room to say something of its
// value; else its first members that fit and a member "…" naming the rest.
func (s *shaper) object(i, end, budget, depth int) {
	members := s.spans(i, end, true)
	keys := make([][]byte, len(members))
	for k, m := range members {
		keys[k] = s.b[m[0]:skipValue(s.b, m[0])]
	}
	start := len(s.out)
	s.out = append(s.out, '{')
	if shares := fairShares(members, keys, budget-2); shares != nil {
		for idx, m := range members {
			if idx > 0 {
				s.out = append(s.out, ',')
			}
			s.out = append(s.out, keys[idx]...)
			s.out = append(s.out, ':')
			s.shape(m[1], m[2], shares[idx], depth+1)
		}
		if len(s.out)-start+1 <= budget {
			s.out = append(s.out, '}')
			return
		}
		s.out = s.out[:start+1] // a share overflowed: the members in turn instead
	}
	kept := 0
	for idx, m := range members {
		left := len(members) - idx
		marker := 0
		if left > 1 {
			marker = 64 + 1
		}
		room := budget - (len(s.out) - start) - 1 - marker - 1
		if !s.member(keys[idx], m[1], m[2], room, left, start+budget-1-marker, depth, idx > 0) {
			break
		}
		kept++
	}
	if kept < len(members) {
		s.info.Objects++
		s.info.Keys += len(members) - kept
		var names []string
		for _, m := range members[kept:] {
			var k string
			if json.Unmarshal(s.b[m[0]:skipValue(s.b, m[0])], &k) == nil {
				names = append(names, k)
			}
			if len(names) == 8 {
				break
			}
		}
		if kept > 0 {
			s.out = append(s.out, ',')
		}
		s.out = append(s.out, objectMarker(len(members)-kept, names)...)
	}
	s.out = append(s.out, '}')
}

// fairShares divides room among an object's member values: a value that
// fits in an equal share keeps its size, and the others divide what is
// left equally (water-filling). Nil when the keys leave less than
// minShape a member.
func fairShares(members [][3]int, keys [][]byte, room int) []int {
	avail := room
	for k := range members {
		avail -= len(keys[k]) + 2 // the key, its colon, a comma
	}
	if avail < minShape*len(members) {
		return nil
	}
	sizes := make([]int, len(members))
	for k, m := range members {
		sizes[k] = m[2] - m[1]
	}
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	left, n := avail, len(sorted)
	for _, sz := range sorted {
		if sz > left/n {
			break
		}
		left -= sz
		n--
	}
	level := avail
	if n > 0 {
		level = left / n
	}
	shares := make([]int, len(members))
	for k, sz := range sizes {
		shares[k] = min(sz, level)
	}
	return shares
}

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i
// (valid JSON assumed), without recursion: nesting is counted.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '[', '{':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(b) && !strings.ContainsRune(",]} \n\r\t", rune(b[i])) {
			i++
		}
		return i
	}
}

// skipString returns the index just past the string starting at i.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// ShapeLogs returns logs cut to at most budget bytes of JSON (as a JSON
// array of strings): the first lines and the last, each line past an
// eighth of the budget cut to its start, and one line between them
// saying how many were left out. Logs that fit are returned as they are,
// with a nil Shaping.
func ShapeLogs(logs []string, budget int) ([]string, *Shaping) {
	budget = max(budget, 64)
	size := 2
	for _, l := range logs {
		size += jsonStringLen(l) + 1
	}
	if size <= budget {
		return logs, nil
	}
	info := &Shaping{Budget: budget, Size: size}
	line := func(l string) string {
		if n := max(budget/8, 32); jsonStringLen(l) > n {
			info.Strings++
			return strings.ToValidUTF8(cutUTF8(l, n-32), "\uFFFD") + fmt.Sprintf("… [%d characters in all]", utf8.RuneCountInString(l))
		}
		return l
	}
	room := budget - 2 - 64 // the brackets and the line saying what was left out
	var head, tail []string
	used := 0
	for _, l := range logs {
		h := line(l)
		if n := jsonStringLen(h) + 1; used+n <= room/2 {
			head, used = append(head, h), used+n
			continue
		}
		break
	}
	for j := len(logs) - 1; j >= len(head); j-- {
		t := line(logs[j])
		if n := jsonStringLen(t) + 1; used+n <= room {
			tail, used = append(tail, t), used+n
			continue
		}
		break
	}
	left := len(logs) - len(head) - len(tail)
	out := head
	if left > 0 {
		info.Lines = left
		out = append(out, fmt.Sprintf("… %d lines left out (%d in all) …", left, len(logs)))
	}
	for k := len(tail) - 1; k >= 0; k-- {
		out = append(out, tail[k])
	}
	return out, info
}

// jsonStringLen is the length of s as a JSON string.
func jsonStringLen(s string) int {
	if plainASCII(s) {
		return len(s) + 2
	}
	b, _ := marshal(s)
	return len(b)
}

// cutUTF8 is s's start, at most n bytes, on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ShapeOutput shapes a run's output for a model: its value (a result, or
// an error's JSON; what names it in the note) and its logs together, to
// budget bytes (0: no shaping). The logs take what the value leaves, and
// at least a quarter of the budget when both are over; the value takes
// the rest. note tells the model what was cut and how to ask for less,
// or is "" when both fit.
func ShapeOutput(value json.RawMessage, logs []string, budget int, what string) (json.RawMessage, []string, string) {
	if budget <= 0 {
		return value, logs, ""
	}
	size := 0
	for _, l := range logs {
		size += len(l) + 3
	}
	if len(value)+size <= budget {
		return value, logs, ""
	}
	var notes []string
	logs, li := ShapeLogs(logs, max(budget/4, budget-len(value)))
	var lb []byte
	if len(logs) > 0 {
		lb, _ = marshal(logs)
	}
	value, vi := ShapeJSON(value, budget-len(lb))
	if vi != nil {
		notes = append(notes, vi.Note(what))
	}
	if li != nil {
		notes = append(notes, li.Note("log"))
	}
	return value, logs, strings.Join(notes, ". ")
}
