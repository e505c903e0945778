//go:build cgo

package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/codemode-go/codemode/internal/jspos"
)

func init() {
	jspos.SetSyntaxCheck(syntaxOK)
	jspos.SetBuiltins(func(name string) bool { return sandboxGlobals[name] })
}

// syntaxOK is package jspos's syntax check (see jspos.SetSyntaxCheck): the
// engine's parser, in a runtime of its own with a 1 MiB stack (at most
// MaxStack) and memory for the source's compile, says whether a script
// is valid before goja's parser, which recovers from errors with no bound
// on its recursion, reads a large source.
func syntaxOK(script string) bool {
	text := make([]byte, len(script)+1) // NUL-terminated, as JS_Eval reads it
	copy(text, script)
	stack := min(uint64(1<<20), uint64(MaxStack()))
	memory := min(uint64(64<<20)+16*uint64(len(script)), 1<<30)
	return C.bridge_syntax_ok((*C.char)(unsafe.Pointer(&text[0])), C.size_t(len(script)), C.uint64_t(stack),
		C.uint64_t(memory)) == 1
}

// sourceMap relates what a model wrote to the wrapped, instrumented text
// the engine compiled, so that every position in an error it reads is a
// line and column of its own source (see package jspos): the wrapper's
// head shares the source's first line, markers stand for the statements
// that record no position, and anything past the source's end is its end.
type sourceMap struct {
	file  string // the name the source carries in stack traces
	head  int    // bytes of wrapper before the source on its first line; runHead: Run's, by the form
	shape jspos.Shape
	src   string     // the source the model wrote, as the wrapper took it
	ts    TypeScript // strips src when it is not JavaScript; nil: never
	mods  *moduleTable
	in    *instrumented
}

// runHead is the head of a Run script's map: its wrapper's length depends
// on the source's form (see wrapScript).
const runHead = -1

// instrumented is a source's instrumentation: its map and, for
// TypeScript, how the stripped JavaScript's positions map back, or the
// stripper's syntax error.
type instrumented struct {
	m     *jspos.Map
	back  func(line, col int) (int, int)
	tsErr *TypeScriptError
	// imported is set when the source does not parse and holds an import
	// declaration: the module it names, at the declaration's offset.
	imported *importDecl
	// note says, of a source that was not read (or not stripped), why: a
	// compile error says so.
	note string
}

// instrument makes the map of the source (cache misses compile its text).
func (s *sourceMap) instrument() *jspos.Map {
	if s.in == nil {
		s.in = instrument(s.src, s.shape, s.ts)
	}
	return s.in.m
}

// importDecl is an import declaration of a source that did not parse.
type importDecl struct {
	module string
	off    int
}

// instrument instruments src as shape; a source that parses in no shape
// is stripped of TypeScript when ts is set, and its JavaScript used when
// that parses (a type-only import is erased then). When neither reads it,
// and it holds an import declaration, that is the error to report: a
// program is a script, with no module to import; otherwise the parser
// that read further says where it went wrong.
func instrument(src string, shape jspos.Shape, ts TypeScript) *instrumented {
	m := jspos.Instrument(src, shape)
	if m.Form() == jspos.Unread {
		return &instrumented{m: m, note: "codemode compiled the source without reading it first: " + m.Why()}
	}
	if m.Form() != jspos.Invalid {
		return &instrumented{m: m}
	}
	in := stripped(m, shape, ts)
	if in.m != m { // its JavaScript parses
		return in
	}
	if module, off, ok := jspos.StaticImport(m.Original()); ok {
		return &instrumented{m: m, imported: &importDecl{module: module, off: off}}
	}
	return in
}

// stripped is the instrumented JavaScript of m's source (which parses in
// no shape) stripped of TypeScript by ts; when it cannot be, m with the
// error to report, if the stripper's is the better one.
func stripped(m *jspos.Map, shape jspos.Shape, ts TypeScript) *instrumented {
	if ts == nil {
		return &instrumented{m: m}
	}
	if ok, r := jspos.TypeScriptReadable(m.Original()); !ok {
		return &instrumented{m: m, note: "codemode did not strip the source as TypeScript: " + r.Why()}
	}
	js, back, err := ts.Strip(m.Original())
	if err != nil {
		te, ok := err.(*TypeScriptError)
		switch se := m.SyntaxError(); {
		case !ok:
		case se == nil:
			// The engine's parser refused the JavaScript of a large source
			// and says only roughly where: the stripper's error is exact.
			return &instrumented{m: m, tsErr: te}
		case !se.StrayCloser:
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
	done chan struct{} // closed once in is set
	refs int
	in   *instrumented
}

// inlineSource is the size up to which a source is instrumented on the
// run's own goroutine: within the bounds (package jspos) its preparation
// is a millisecond or so. A larger one is prepared on a goroutine of its
// own, which the run abandons at its deadline or its context's end.
const inlineSource = 32 << 10

// share instruments smap, the source under key, with the runs in flight
// for the same key. The preparation counts against the run: past its
// deadline, or when ctx ends, the run stops waiting for it (the work,
// bounded, finishes for whoever shares it) and share returns the run's
// outcome (BRIDGE_TIMEOUT or BRIDGE_CANCELED, with ok false). Call release
// once the run no longer needs the map for its compile (smap keeps it).
func (in *instruments) share(ctx context.Context, deadline time.Time, key [32]byte, smap *sourceMap) (release func(), st C.int32_t, ok bool) {
	in.mu.Lock()
	if in.m == nil {
		in.m = make(map[[32]byte]*sharedMap)
	}
	sm := in.m[key]
	first := sm == nil
	if first {
		sm = &sharedMap{done: make(chan struct{})}
		in.m[key] = sm
	}
	sm.refs++
	in.mu.Unlock()
	drop := func() {
		in.mu.Lock()
		if sm.refs--; sm.refs == 0 {
			delete(in.m, key)
		}
		in.mu.Unlock()
	}
	src, shape, ts := smap.src, smap.shape, smap.ts
	prepare := func() {
		sm.in = instrument(src, shape, ts)
		close(sm.done)
	}
	switch {
	case first && len(src) <= inlineSource:
		prepare()
	case first:
		in.mu.Lock()
		sm.refs++ // the preparation's own reference: an abandoned one still fills the entry
		in.mu.Unlock()
		go func() {
			defer drop()
			prepare()
		}()
	}
	select {
	case <-sm.done:
	default:
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		select {
		case <-sm.done:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	// A deadline that passed while the source was prepared decides.
	switch {
	case ctx.Err() != nil:
		drop()
		return nil, C.BRIDGE_CANCELED, false
	case !time.Now().Before(deadline):
		drop()
		return nil, C.BRIDGE_TIMEOUT, false
	}
	smap.in = sm.in
	return drop, 0, true
}

// offset is the source offset an engine position of s.file stands for:
// on the first line the engine counts bytes from the wrapper's start, on
// the others columns from 1.
func (s *sourceMap) offset(line, col int) int { return s.instrument().Offset(s.textOffset(line, col)) }

// textOffset is the offset in the instrumented text of an engine position.
func (s *sourceMap) textOffset(line, col int) int {
	if line <= 1 {
		if s.head == runHead {
			return col - scriptHead(guarded(s.instrument().Form()), jspos.StrictBody(s.src))
		}
		return col - s.head
	}
	return s.instrument().LineOffset(line, col)
}

// render rewrites a rendered error for the model: frames of s.file point
// into the source, the wrapper's own frame and codemode's internal frames
// go (a guarded built-in's frame shows once, not as the guard and the
// method it called), and a syntax error of the source itself (syntax set:
// the engine's compiler refused it) is placed where the parser found it.
func (s *sourceMap) render(msg string, syntax bool) (r string) {
	if syntax {
		s.instrument()
		if note := s.in.note; note != "" {
			defer func() { r = withNote(r, note) }()
		}
	}
	if syntax && strings.HasPrefix(msg, "SyntaxError: ") {
		return s.syntaxError(msg)
	}
	first, frames, _ := strings.Cut(msg, "\n")
	var b strings.Builder
	b.Grow(len(msg))
	b.WriteString(s.frame(first))
	prev, top, above := "", true, ""
	for frames != "" {
		var line string
		line, frames, _ = strings.Cut(frames, "\n")
		if s.internalFrame(line) {
			above = jspos.AnyCallee // codemode's own frame called it: its name is not the program's
			continue
		}
		if line == prev && strings.HasSuffix(line, " (native)") {
			continue
		}
		prev = line
		b.WriteByte('\n')
		switch {
		case syntax:
			b.WriteString(s.frame(line))
		case top:
			// The frame that threw: placed at the expression that threw.
			b.WriteString(s.frameRefined(line, func(off int) int { return s.instrument().Refine(off, first) }))
		default:
			// A frame below: placed at the call it made, when that is a
			// call of the frame above's function.
			callee := above
			b.WriteString(s.frameRefined(line, func(off int) int { return s.instrument().CallAt(off, callee) }))
		}
		top, above = false, frameFunction(line)
	}
	return b.String()
}

// frameFunction is the name of the function a stack frame is in ("" for
// <anonymous>): "    at f (script.js:1:2)" is f's, "    at map (native)"
// map's.
func frameFunction(line string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(line, "    at "), " (")
	if name == "<anonymous>" {
		return ""
	}
	return name
}

//export go_source_text
func go_source_text(handle C.uintptr_t, text *C.char, n C.size_t, length *C.size_t) (out *C.char) {
	defer func() {
		if recover() != nil {
			out = nil // the engine's text stands
		}
	}()
	s := slots.get(uintptr(handle))
	if s == nil || s.call == nil || s.call.prog == nil {
		return nil
	}
	compiled := unsafe.String((*byte)(unsafe.Pointer(text)), int(n))
	for _, sm := range []*sourceMap{&s.call.prog.smap, s.call.prog.selftestMap} {
		if sm == nil {
			continue
		}
		if written, ok := sm.written(compiled); ok && written != compiled {
			*length = C.size_t(len(written))
			return (*C.char)(C.CBytes([]byte(written)))
		}
	}
	return nil
}

// written is the source a model wrote for a piece of the compiled text (a
// function's, which Function.prototype.toString returns): the markers
// within it taken out. ok false: the text is not the source's.
func (s *sourceMap) written(compiled string) (string, bool) {
	m := s.instrument()
	i := strings.Index(m.Source(), compiled)
	if i < 0 {
		return "", false
	}
	from, to := m.Offset(i), m.Offset(i+len(compiled))
	if from > to {
		return "", false
	}
	return m.Original()[from:to], true
}

// withNote puts a note at the end of a rendered error's first line.
func withNote(rendered, note string) string {
	first, rest, found := strings.Cut(rendered, "\n")
	first += " (" + note + ")"
	if !found {
		return first
	}
	return first + "\n" + rest
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
func (s *sourceMap) frame(line string) string { return s.frameRefined(line, nil) }

// frameRefined is frame with its first position moved by refine (nil:
// none), from where the engine last recorded one to the expression that
// threw or the call the frame made (see jspos.Map.Refine and CallAt).
func (s *sourceMap) frameRefined(line string, refine func(off int) int) string {
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
		off := s.offset(l, c)
		if refine != nil {
			off, refine = refine(off), nil
		}
		ul, uc := s.position(off)
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
	if d := s.in.imported; d != nil {
		line, col := s.position(d.off)
		return "SyntaxError: " + s.importMessage(d.module) + "\n    at " + s.file + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
	}
	if te := s.in.tsErr; te != nil {
		return "SyntaxError: " + te.Message + "\n    at " + s.file + ":" + strconv.Itoa(te.Line) + ":" + strconv.Itoa(te.Column)
	}
	n := len(m.Original())
	line, _ := enginePosition(msg, s.file)
	var off int
	switch se := m.SyntaxError(); {
	case text == "break/continue label not found" && (s.shape == jspos.Body || s.shape == jspos.SessionBody):
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

// importMessage says why an import declaration cannot load module: what
// is true of the sandbox's modules.
func (s *sourceMap) importMessage(module string) string {
	const head = "import declarations are not available: the program runs as a script, not a module"
	if s.mods.has(module) {
		return head + `; load the host's module with const m = await import("` + module + `")`
	}
	msg := head + ", and "
	if module == "" {
		msg += "the sandbox has no module to load"
	} else {
		msg += strconv.Quote(module) + " is no module the sandbox has"
	}
	msg += " (it has no Node.js, filesystem or network API: the tools are the program's globals)"
	if s.mods != nil && len(s.mods.names) > 0 {
		msg += "; its only modules are the host's, loaded with await import(name): " + strings.Join(quoteAll(s.mods.names), ", ")
	}
	return msg
}

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return q
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

// placed is where a rendered error happened in the model's source: its
// first position of s.file, or 0, 0 when it has none.
func (s *sourceMap) placed(rendered string) (line, col int) {
	line, col = enginePosition(rendered, s.file)
	if col == 0 {
		return 0, 0
	}
	return line, col
}

// site is where the call marked k (see jspos.Sites) is in the model's
// source, when it is a call of name ("get_user", "provider.tool"); 0, 0
// when the call was not marked (a tool called through an alias) or the
// mark is another call's.
func (s *sourceMap) site(k int, name string) (line, col int) {
	if k < 0 || s.src == "" {
		return 0, 0
	}
	sites := s.instrument().Sites()
	if k >= len(sites) || !sites[k].Matches(name) {
		return 0, 0
	}
	return s.position(sites[k].Offset)
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

// The heads of Run's two wrappers (see wrapScript), on the script's first
// line: positions there are shifted by their length (see sourceMap).
const (
	wrapHead        = "(async () => {"
	syncHead        = "(      () => {" // wrapHead's length: see wrapScript
	guardHead       = "(async () => {__codemode_0123456789abcdef01234567: {"
	strictDirective = `"use strict";`
)

// scriptHead is the length of a script's wrapper head: guarded (see
// wrapScript) or not, and then strict or not.
func scriptHead(guarded, strict bool) int {
	switch {
	case guarded && strict:
		return len(guardHead) + len(strictDirective)
	case guarded:
		return len(guardHead)
	}
	return len(wrapHead)
}

// guarded says whether a script of a form needs the guarded wrapper: one
// the parser did not read whole, as one body (see wrapScript).
func guarded(form jspos.Form) bool { return form == jspos.Invalid || form == jspos.Unread }
