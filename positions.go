//go:build cgo

package codemode

import (
	"strconv"
	"strings"
	"sync"

	"github.com/codemode-go/codemode/internal/jspos"
)

// sourceMap relates what a model wrote to the wrapped, instrumented text
// the engine compiled, so that every position in an error it reads is a
// line and column of its own source (see package jspos): the wrapper's
// head shares the source's first line, markers stand for the statements
// that record no position, and anything past the source's end is its end.
type sourceMap struct {
	file  string // the name the source carries in stack traces
	head  int    // bytes of wrapper before the source on its first line
	shape jspos.Shape
	src   string     // the source the model wrote, as the wrapper took it
	ts    TypeScript // strips src when it is not JavaScript; nil: never
	in    *instrumented
}

// instrumented is a source's instrumentation: its map and, for
// TypeScript, how the stripped JavaScript's positions map back, or the
// stripper's syntax error.
type instrumented struct {
	m     *jspos.Map
	back  func(line, col int) (int, int)
	tsErr *TypeScriptError
}

// instrument makes the map of the source (cache misses compile its text).
func (s *sourceMap) instrument() *jspos.Map {
	if s.in == nil {
		s.in = instrument(s.src, s.shape, s.ts)
	}
	return s.in.m
}

// instrument instruments src as shape; a source that parses in no shape
// is stripped of TypeScript when ts is set, and its JavaScript used when
// that parses. When neither reads it, the parser that read further says
// where it went wrong.
func instrument(src string, shape jspos.Shape, ts TypeScript) *instrumented {
	m := jspos.Instrument(src, shape)
	if m.Form() != jspos.Invalid || ts == nil {
		return &instrumented{m: m}
	}
	js, back, err := ts.Strip(m.Original())
	if err != nil {
		te, ok := err.(*TypeScriptError)
		if se := m.SyntaxError(); ok && se != nil && !se.StrayCloser {
			if l, c := m.Position(se.Offset); te.Line > l || (te.Line == l && te.Column > c) {
				return &instrumented{m: m, tsErr: te}
			}
		}
		return &instrumented{m: m}
	}
	if jm := jspos.Instrument(js, shape); jm.Form() != jspos.Invalid {
		return &instrumented{m: jm, back: back}
	}
	return &instrumented{m: m}
}

// position is the model's line and column of an offset of the map's source.
func (s *sourceMap) position(off int) (line, col int) {
	line, col = s.instrument().Position(off)
	if s.in.back != nil {
		line, col = s.in.back(line, col)
	}
	return line, col
}

// instruments shares a source's instrumentation among the runs that miss
// the bytecode cache for it at once: the first run's bytecode is cached
// only once its first slice ends, so a burst of one script (a thousand
// runs awaiting a host call) parsed it once per run, a tenth of the
// burst's time under the race detector. An entry lives while runs use it.
type instruments struct {
	mu sync.Mutex
	m  map[[32]byte]*sharedMap
}

type sharedMap struct {
	once sync.Once
	refs int
	in   *instrumented
}

// share instruments smap, the source under key, with the runs in flight
// for the same key; release once the run no longer needs the map for its
// compile (smap keeps it).
func (in *instruments) share(key [32]byte, smap *sourceMap) (release func()) {
	in.mu.Lock()
	if in.m == nil {
		in.m = make(map[[32]byte]*sharedMap)
	}
	sm := in.m[key]
	if sm == nil {
		sm = &sharedMap{}
		in.m[key] = sm
	}
	sm.refs++
	in.mu.Unlock()
	sm.once.Do(func() { sm.in = instrument(smap.src, smap.shape, smap.ts) })
	smap.in = sm.in
	return func() {
		in.mu.Lock()
		if sm.refs--; sm.refs == 0 {
			delete(in.m, key)
		}
		in.mu.Unlock()
	}
}

// offset is the source offset an engine position of s.file stands for:
// on the first line the engine counts bytes from the wrapper's start, on
// the others columns from 1.
func (s *sourceMap) offset(line, col int) int { return s.instrument().Offset(s.textOffset(line, col)) }

// textOffset is the offset in the instrumented text of an engine position.
func (s *sourceMap) textOffset(line, col int) int {
	if line <= 1 {
		return col - s.head
	}
	return s.instrument().LineOffset(line, col)
}

// render rewrites a rendered error for the model: frames of s.file point
// into the source, the wrapper's own frame and codemode's internal frames
// go (a guarded built-in's frame shows once, not as the guard and the
// method it called), and a syntax error of the source itself (syntax set:
// the engine's compiler refused it) is placed where the parser found it.
func (s *sourceMap) render(msg string, syntax bool) string {
	if syntax && strings.HasPrefix(msg, "SyntaxError: ") {
		return s.syntaxError(msg)
	}
	first, frames, _ := strings.Cut(msg, "\n")
	var b strings.Builder
	b.Grow(len(msg))
	b.WriteString(s.frame(first))
	prev := ""
	for frames != "" {
		var line string
		line, frames, _ = strings.Cut(frames, "\n")
		if s.internalFrame(line) || (line == prev && strings.HasSuffix(line, " (native)")) {
			continue
		}
		prev = line
		b.WriteByte('\n')
		b.WriteString(s.frame(line))
	}
	return b.String()
}

// frames rewrites every position of s.file in a text (console lines that
// print a stack, say); a text without one is returned as it is.
func (s *sourceMap) frames(text string) string {
	if !strings.Contains(text, s.file+":") {
		return text
	}
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	prev := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "    at <eval> ("+s.file+":") || (l == prev && strings.HasSuffix(l, " (native)")) {
			continue // the wrapper's own frame; a guard's
		}
		prev = l
		kept = append(kept, s.frame(l))
	}
	return strings.Join(kept, "\n")
}

// internalFrame reports a frame of codemode's own: the wrapper's top
// level, the runtime, the guards' slow paths.
func (s *sourceMap) internalFrame(line string) bool {
	if strings.HasPrefix(line, "    at <eval> ("+s.file+":") || strings.Contains(line, "<codemode:") {
		return true
	}
	// The call of an arrow or a declared function that the source's form
	// needed (see jspos.Form).
	if !strings.Contains(line, s.file+":") {
		return false
	}
	l, c := enginePosition(line, s.file)
	return c > 0 && s.instrument().Synthetic(s.textOffset(l, c))
}

// frame rewrites the positions "file:line:col" in one line.
func (s *sourceMap) frame(line string) string {
	at := s.file + ":"
	var b strings.Builder
	for {
		i := strings.Index(line, at)
		if i < 0 {
			if b.Len() == 0 {
				return line
			}
			b.WriteString(line)
			return b.String()
		}
		start := i + len(at)
		l, n1 := leadingInt(line[start:])
		c, n2 := 0, 0
		if n1 > 0 && start+n1 < len(line) && line[start+n1] == ':' {
			c, n2 = leadingInt(line[start+n1+1:])
		}
		if n1 == 0 || n2 == 0 {
			b.WriteString(line[:start])
			line = line[start:]
			continue
		}
		ul, uc := s.position(s.offset(l, c))
		b.WriteString(line[:start])
		b.WriteString(strconv.Itoa(ul))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(uc))
		line = line[start+n1+1+n2:]
	}
}

// leadingInt parses the decimal digits at the start of s.
func leadingInt(s string) (v, n int) {
	for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int(s[n]-'0')
		n++
	}
	return v, n
}

// syntaxError renders the engine's refusal of the source: its message,
// unless that is about the wrapper (the source ended early, or closed a
// brace it never opened), placed where the source went wrong. The engine's
// line is reliable but its column is often stale (the lexer's, from
// another line); the parser's position is exact where it agrees on the
// line, and otherwise the line's first character stands for it. (Markers
// add no lines: the engine's lines are the source's.)
func (s *sourceMap) syntaxError(msg string) string {
	first, _, _ := strings.Cut(msg, "\n")
	text := strings.TrimPrefix(first, "SyntaxError: ")
	m := s.instrument()
	if te := s.in.tsErr; te != nil {
		return "SyntaxError: " + te.Message + "\n    at " + s.file + ":" + strconv.Itoa(te.Line) + ":" + strconv.Itoa(te.Column)
	}
	n := len(m.Original())
	line, _ := enginePosition(msg, s.file)
	var off int
	switch se := m.SyntaxError(); {
	case text == "break/continue label not found" && s.shape == jspos.Body:
		// Only the wrapper's own label can be missing: the source closed
		// the wrapper's block with a brace it never opened.
		text = "Unexpected token '}'"
		if off = jspos.StrayCloser(m.Original(), s.shape); off < 0 {
			return "SyntaxError: " + text
		}
	case se != nil && se.StrayCloser:
		text = se.Message
		if se.Offset < 0 {
			return "SyntaxError: " + text
		}
		off = se.Offset
	case line > m.Lines():
		text, off = endOfInput(text), n
	case se != nil && !se.EndOfInput && m.Line(se.Offset) == line:
		off = se.Offset
		if strings.Contains(text, reservedPrefix) {
			text = se.Message
		}
	default:
		off = m.Indent(m.LineStart(line))
	}
	line, col := s.position(off)
	return "SyntaxError: " + text + "\n    at " + s.file + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
}

// endOfInput is the message of a source that ended too early: the
// engine's own when it says which construct was left open (a string, a
// comment, a template, a regular expression), else the plain fact.
func endOfInput(engine string) string {
	if strings.HasPrefix(strings.ToLower(engine), "unexpected end of") && !strings.Contains(engine, reservedPrefix) {
		return engine
	}
	return "unexpected end of input"
}

// enginePosition reads the first "file:line:col" of a rendered error.
func enginePosition(msg, file string) (line, col int) {
	i := strings.Index(msg, file+":")
	if i < 0 {
		return 1, 0
	}
	rest := msg[i+len(file)+1:]
	l, n := leadingInt(rest)
	if n == 0 || n >= len(rest) || rest[n] != ':' {
		return 1, 0
	}
	c, _ := leadingInt(rest[n+1:])
	return l, c
}
