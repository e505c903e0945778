// Package jspos makes the source positions a model reads point into the
// source it wrote, at the statement that failed.
//
// The engine records a position only where its parser emits one: at calls,
// `new`, binary operators, expression statements and throws. An error in
// any other expression (`return u.address.city`, `const v = a.b.c`, an
// `if` condition) is reported at the last position recorded before it,
// which may be another statement's. [Instrument] parses the source (with
// github.com/dop251/goja/parser, a complete ECMAScript parser that keeps
// exact offsets) and, before every statement of a statement list that
// records no position of its own, inserts a marker expression statement
// `0;` whose position stands for that statement; before the closing brace
// of a for, while or do-while body it inserts `;0;`, which stands for the
// loop, so a test or an update that fails on a later iteration is the
// loop's. [Map.Offset] turns a position in the instrumented text back into
// one in the source.
//
// A source the parser refuses is left as it is: the engine's positions are
// then the only ones, and [Map.SyntaxError] holds the parser's exact
// position of the first error, which the engine reports only roughly.
package jspos

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// Shape says what a source is, and so how it is parsed.
type Shape int

const (
	// Body is the body of an async function: top-level return and await.
	Body Shape = iota
	// Expression is one expression (a function, for tools).
	Expression
	// StrictExpression is one expression in strict mode code (Execute's
	// programs).
	StrictExpression
)

// The wrappers the parser sees. Neither has a line break before the
// source, so source lines are the wrapped text's.
const (
	bodyHead   = "(async () => {"
	bodyTail   = "\n})"
	exprHead   = "("
	strictHead = "'use strict';("
	exprTail   = "\n)"
)

func wrappers(shape Shape) (head, tail string) {
	switch shape {
	case Body:
		return bodyHead, bodyTail
	case StrictExpression:
		return strictHead, exprTail
	}
	return exprHead, exprTail
}

// insertion is text inserted at source offset at, standing for the source
// offset target (the statement or loop it marks).
type insertion struct {
	at, target int
	text       string
	call       bool // a call the target's form needs: no frame of the source's
	keep       bool // a site's mark: never dropped as a repeat (see merge)
}

// SyntaxError is where and why the parser refused a source.
type SyntaxError struct {
	// Offset is the byte offset in the source of the token the parser
	// stopped at; len(source) when the source ended too early.
	Offset int
	// EndOfInput says the source ended before it was complete.
	EndOfInput bool
	// StrayCloser says the source closes a brace (a parenthesis, for an
	// expression) it never opened; Offset is that closer's, or -1 when it
	// could not be found.
	StrayCloser bool
	// Message is the parser's own words.
	Message string
}

// Map relates a source to its instrumented text. It is safe for
// concurrent use.
type Map struct {
	src   string
	out   string
	ins   []insertion // by at
	form  Form
	lines []int     // offsets of the instrumented text's line starts, made on first use
	once  sync.Once // makes lines: a Map is safe for concurrent use
	err   *SyntaxError
	why   string // Unread: which bound the source passed
	// globals is a SessionBody's declaration prologue (see hoist).
	globals string
	sites   []Site // the marked calls, by index (see Sites)
	shape   Shape  // how the source was read (Refine reads it again)
	refOnce sync.Once
	ref     *refTree // what Refine reads, made on its first use
}

// Instrument parses src as shape and returns its instrumented text's map.
// It never fails: a source the parser refuses is kept as it is (and its
// map holds the parse error). It reads nothing but src.
//
// For a [Body] or [StrictExpression] target, src may have any of the
// forms a model writes (see [Form]), inside a markdown fence or not, and
// behind `export default`: the instrumented text is that form made into
// the target (a body, or an expression whose value is a function), by
// insertions that [Map.Offset] maps back, so every position stays the
// source's. What the fence or `export default` took is blanked, not cut:
// the map's source ([Map.Original]) has src's length and lines.
func Instrument(src string, shape Shape) *Map { return instrumentAll(src, shape, true) }

// InstrumentUnmarked is Instrument without the call sites' marks (see
// [Map.Sites]): the text the marks are put into, for tests that hold the
// marks to changing no value.
func InstrumentUnmarked(src string, shape Shape) *Map { return instrumentAll(src, shape, false) }

func instrumentAll(src string, shape Shape, marks bool) *Map {
	clean := standIn(src)
	m := instrument(clean, shape, marks)
	if clean != src {
		m.restore(src)
	}
	m.shape = shape
	return m
}

// Plain is the map of a source compiled as it is, with no shape and no
// markers: every position is the source's own.
func Plain(src string) *Map { return &Map{src: src, out: src, form: Statements} }

func instrument(src string, shape Shape, marks bool) *Map {
	if shape == Expression {
		return instrumentExpression(src, marks)
	}
	session := shape == SessionBody || shape == SessionStrictExpression
	switch shape {
	case SessionBody:
		shape = Body
	case SessionStrictExpression:
		shape = StrictExpression
	}
	s := analyze(src)
	if session && s.form == Declaration {
		s.form = Statements // a session declares it, for the runs after
	}
	m := &Map{src: s.code, out: s.code, form: s.form}
	var ins []insertion
	switch s.form {
	case Unread:
		m.why = s.err.(*unreadError).why
		return m
	case Invalid:
		if s.err == errInvalid {
			break // the engine's parser says where
		}
		if s.err == errStrayCloser {
			m.err = &SyntaxError{Offset: StrayCloser(s.code, Body), StrayCloser: true, Message: "Unexpected token " + closer(Body)}
		} else {
			m.err = syntaxError(s.code, Body, s.err)
		}
	default:
		w := newWalker(s.code, s.base)
		w.visit(reflect.ValueOf(s.root))
		if marks {
			m.sites = w.marks()
		}
		ins = w.ins
	}
	code := s.code
	if session && s.form == Statements {
		h := hoist(s)
		ins = append(ins, h.ins...)
		code = blankKeywords(code, h.keywords)
		m.globals = h.globals
	}
	if shape == StrictExpression && (s.form == Function || s.form == Declaration) && len(s.blanks) > 0 {
		b := []byte(code)
		for _, at := range s.blanks {
			if at >= 0 && at < len(b) && b[at] == ';' {
				b[at] = ' '
			}
		}
		code = string(b)
	}
	m.ins = merge(append(s.insertions(shape), ins...))
	m.out = splice(code, m.ins)
	return m
}

// insertions are the text that makes the source's form the target's.
func (s shaped) insertions(target Shape) []insertion {
	n := len(s.code)
	at := func(off int, text string) insertion { return insertion{at: off, target: min(off, n), text: text} }
	call := func(off int, text string) insertion {
		in := at(off, text)
		in.call = true
		return in
	}
	// "0;" before a return makes the engine record the statement's
	// position (it records none for a return's expression), as the
	// markers do.
	var ins []insertion
	if target == Body {
		switch s.form {
		case Statements:
			if s.last >= 0 {
				ins = append(ins, at(s.last, "0;return "))
			}
		case Function:
			ins = append(ins, at(s.start, "0;return ("), call(s.end, "\n)()"))
		case Declaration:
			// The call stands for the declaration in a stack trace.
			ins = append(ins, insertion{at: n, target: skipTrivia(s.code, 0), text: "\n;return " + s.name + "();", call: true})
		case Value:
			if s.fn {
				ins = append(ins, at(s.start, "0;return ("), call(n, "\n)()"))
			} else {
				ins = append(ins, at(s.start, "0;return ("), at(n, "\n)"))
			}
		}
		return ins
	}
	switch s.form {
	case Invalid:
		if s.err == errStrayCloser {
			// As it is: in the expression's parentheses a brace it never
			// opened is the engine's syntax error too (inside a function
			// made for it, a balanced one would compile).
			return nil
		}
		fallthrough
	case Statements:
		ins = append(ins, at(0, "async () => {"))
		if s.last >= 0 {
			ins = append(ins, at(s.last, "0;return "))
		}
		ins = append(ins, at(n, "\n}"))
	case Value:
		if !s.fn {
			ins = append(ins, at(s.start, "() => ("), at(n, "\n)"))
		}
	}
	return ins
}

// merge orders insertions by offset (those at one offset in the order
// given) and joins those at one offset into one, dropping repeats.
func merge(ins []insertion) []insertion {
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].at < ins[j].at })
	var out []insertion
	for _, in := range ins {
		if k := len(out) - 1; k >= 0 && out[k].at == in.at {
			if in.keep || !strings.HasSuffix(out[k].text, in.text) {
				out[k].text += in.text
				out[k].call = out[k].call || in.call
			}
			continue
		}
		out = append(out, in)
	}
	return out
}

// splice makes the instrumented text: code with the insertions.
func splice(code string, ins []insertion) string {
	if len(ins) == 0 {
		return code
	}
	var b strings.Builder
	size := len(code)
	for _, in := range ins {
		size += len(in.text)
	}
	b.Grow(size)
	last := 0
	for _, in := range ins {
		b.WriteString(code[last:in.at])
		b.WriteString(in.text)
		last = in.at
	}
	b.WriteString(code[last:])
	return b.String()
}

// standIn is src with each invalid UTF-8 byte replaced by \x01, one byte
// for one. The parser reads an invalid byte as U+FFFD, three bytes where
// the source has one, so its offsets were not the source's and an arrow's
// call went in at the wrong place (FuzzShapes: an arrow ending in
// `//\xe5` returned null). \x01 is as invalid outside strings and
// comments as the byte it stands for, and as harmless inside them.
func standIn(src string) string {
	if utf8.ValidString(src) {
		return src
	}
	b := []byte(src)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			b[i] = 1
		}
		i += n
	}
	return string(b)
}

// restore puts src's invalid bytes back where standIn replaced them (and
// nothing blanked them), in the map's source and instrumented text alike:
// the engine reads the source as it was.
func (m *Map) restore(src string) {
	source, out := []byte(m.src), []byte(m.out)
	shift, k := 0, 0 // the text inserted before offset i of the source
	for i := 0; i < len(src) && i < len(source); {
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && n == 1 && source[i] == 1 {
			for k < len(m.ins) && m.ins[k].at <= i {
				shift += len(m.ins[k].text)
				k++
			}
			source[i] = src[i]
			if j := i + shift; j < len(out) && out[j] == 1 {
				out[j] = src[i]
			}
		}
		i += n
	}
	m.src, m.out = string(source), string(out)
}

// instrumentExpression instruments a tool's source: one expression.
func instrumentExpression(src string, marks bool) *Map {
	m := &Map{src: src, out: src, form: Value}
	head, tail := wrappers(Expression)
	prog, err := parse(head + parsable(src) + tail)
	if ue, ok := err.(*unreadError); ok {
		m.form, m.why = Unread, ue.why
		return m
	}
	if err != nil {
		if err != errInvalid {
			m.err = syntaxError(src, Expression, err)
		}
		m.form = Invalid
		return m
	}
	root, ok := single(prog, Expression, src)
	if !ok {
		// The source closed the wrapper and went on: the engine's wrapper
		// refuses that, so it is a stray closer.
		m.err = &SyntaxError{Offset: StrayCloser(src, Expression), StrayCloser: true, Message: "Unexpected token " + closer(Expression)}
		m.form = Invalid
		return m
	}
	w := newWalker(src, len(head)+1)
	w.visit(reflect.ValueOf(root))
	if marks {
		m.sites = w.marks()
	}
	m.ins = merge(w.ins)
	m.out = splice(src, m.ins)
	return m
}

// parsable returns src with the constructs the parser lacks (or trips on)
// rewritten to ones of the same length and shape it has: `for await (`
// becomes `for       (`, `import(` or `import.` becomes `_mport(`,
// `_mport.`, and an escape of a code point past U+FFFF, `\u{20BB7}`, one of
// U+004E, `\u{0004E}` (the parser panics on some strings of them). Only
// offsets are read off the parse, and the instrumented text is made from
// src itself, so a rewrite inside a string or a comment is harmless.
func parsable(src string) string {
	if !strings.Contains(src, "await") && !strings.Contains(src, "import") && !strings.Contains(src, "\\u{") {
		return src
	}
	b := []byte(src)
	for i := 0; i+3 <= len(b); i++ {
		if b[i] == '\\' && b[i+1] == 'u' && b[i+2] == '{' {
			j := i + 3
			for j < len(b) && isHex(b[j]) {
				j++
			}
			if j < len(b) && b[j] == '}' && j-(i+3) > 4 {
				for k := i + 3; k < j; k++ {
					b[k] = '0'
				}
				b[j-2], b[j-1] = '4', 'E'
			}
			continue
		}
		switch {
		case b[i] == 'f' && string(b[i:i+3]) == "for" && (i == 0 || !isIdentByte(b[i-1])):
			j := i + 3
			for j < len(b) && isSpace(b[j]) {
				j++
			}
			if j+5 <= len(b) && string(b[j:j+5]) == "await" && (j+5 == len(b) || !isIdentByte(b[j+5])) {
				copy(b[j:j+5], "     ")
			}
		case b[i] == 'i' && i+7 <= len(b) && string(b[i:i+6]) == "import" && (b[i+6] == '(' || b[i+6] == '.') &&
			(i == 0 || !isIdentByte(b[i-1])):
			b[i] = '_'
		}
	}
	return string(b)
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parse parses a wrapped source when it is within the bounds (see admit:
// errInvalid or an *unreadError when it is not); it never loads a source
// map (the parser's default reads the file a sourceMappingURL comment
// names).
func parse(text string) (prog *ast.Program, err error) {
	if err := admit(text); err != nil {
		return nil, err
	}
	// The parser panics on some valid sources (a string of escapes
	// '\u{20BB7}...\u{10FFFF}' past a certain length): such a source is
	// not read.
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, &unreadError{why: fmt.Sprintf("the parser that places positions failed on it (%v)", r)}
		}
	}()
	return parser.ParseFile(nil, "", text, parser.IgnoreRegExpErrors, parser.WithDisableSourceMaps)
}

// single returns the node whose statements are the source's: the
// wrapper's own expression must be the program's only statement, and for a
// body the arrow's closing brace the wrapper's; otherwise the source closed
// the wrapper early and went on.
func single(prog *ast.Program, shape Shape, src string) (ast.Node, bool) {
	body := prog.Body
	if shape == StrictExpression && len(body) > 0 {
		body = body[1:] // the directive
	}
	if len(body) != 1 {
		return nil, false
	}
	st, ok := body[0].(*ast.ExpressionStatement)
	if !ok {
		return nil, false
	}
	if shape != Body {
		return st, true
	}
	arrow, ok := st.Expression.(*ast.ArrowFunctionLiteral)
	if !ok {
		return nil, false
	}
	block, ok := arrow.Body.(*ast.BlockStatement)
	if !ok || int(block.RightBrace) != len(bodyHead)+len(src)+2 { // 1-based: the tail's '}'
		return nil, false
	}
	return arrow, true
}

func closer(shape Shape) string {
	if shape == Body {
		return "'}'"
	}
	return "')'"
}

// syntaxError locates the parser's first error in the source.
func syntaxError(src string, shape Shape, err error) *SyntaxError {
	head, tail := wrappers(shape)
	text := head + src + tail
	list, ok := err.(parser.ErrorList)
	if !ok || len(list) == 0 {
		return &SyntaxError{Offset: len(src), EndOfInput: true, Message: err.Error()}
	}
	first := list[0]
	off := lineStart(text, first.Position.Line) + first.Position.Column - 1 - len(head)
	se := &SyntaxError{Offset: off, Message: first.Message}
	switch {
	case off < 0:
		se.Offset = 0
	case off >= len(src):
		// Past the source: it ended early, unless it closed the wrapper
		// with a closer of its own.
		se.Offset = len(src)
		se.EndOfInput = true
		if off == len(src)+1 && first.Message == "Unexpected token "+tail[1:2] {
			if at := StrayCloser(src, shape); at >= 0 {
				se.EndOfInput, se.StrayCloser = false, true
				se.Offset = at
			}
		}
	}
	return se
}

// maxCloserTries bounds the parses StrayCloser spends, and
// maxCloserBytes the bytes they read together.
const (
	maxCloserTries = 64
	maxCloserBytes = 16 << 20
)

// StrayCloser finds the closer (a brace for a body, a parenthesis for an
// expression) with which a source ends the wrapper early: the first at
// which the source, cut just after it, closes the wrapper. -1 if none is
// found within maxCloserTries parses.
func StrayCloser(src string, shape Shape) int {
	head, tail := wrappers(shape)
	c := tail[1]
	tries, read := 0, 0
	for i := 0; i < len(src) && tries < maxCloserTries && read+i < maxCloserBytes; i++ {
		if src[i] != c {
			continue
		}
		tries++
		read += i + 1
		prefix := src[:i+1]
		prog, err := parse(head + parsable(prefix) + tail)
		if err == nil {
			if _, ok := single(prog, shape, prefix); !ok {
				return i
			}
			continue
		}
		if list, ok := err.(parser.ErrorList); ok && len(list) > 0 {
			text := head + prefix + tail
			off := lineStart(text, list[0].Position.Line) + list[0].Position.Column - 1 - len(head)
			if off == len(prefix)+1 && list[0].Message == "Unexpected token "+tail[1:2] {
				return i
			}
		}
	}
	return -1
}

// lineStart is the offset of line n (1-based) of text, or len(text).
func lineStart(text string, n int) int {
	off := 0
	for l := 1; l < n; l++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return len(text)
		}
		off += i + 1
	}
	return off
}

// walker collects the insertions for every statement list under a node.
// It walks the tree by reflection, so no node type can be missed, along a
// plan per type of the fields that can hold nodes.
type walker struct {
	src   string
	base  int // the parser's offset (1-based) of the source's first byte
	limit int // the source's length
	ins   []insertion
	// The calls that may be host calls, and every name the source
	// declares anywhere (a call of one is not marked: see marks).
	calls    []candidate
	declared map[string]bool
}

func newWalker(src string, base int) walker {
	return walker{src: src, base: base, limit: len(src)}
}

var statementList = reflect.TypeOf([]ast.Statement(nil))

// plans caches, per struct type, the indices of the fields that can hold
// nodes: a map read without a lock, replaced whole when a type is added
// (the types are few, so it soon stops changing).
var (
	plans   atomic.Pointer[map[reflect.Type][]int]
	plansMu sync.Mutex
)

func plan(t reflect.Type) []int {
	if m := plans.Load(); m != nil {
		if p, ok := (*m)[t]; ok {
			return p
		}
	}
	var fields []int
	for i := range t.NumField() {
		f := t.Field(i)
		// DeclarationList repeats declarations the body holds; the file,
		// token and string types hold no nodes.
		if !f.IsExported() || f.Name == "DeclarationList" || !mayHoldNodes(f.Type) {
			continue
		}
		fields = append(fields, i)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	next := map[reflect.Type][]int{t: fields}
	if m := plans.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	plans.Store(&next)
	return fields
}

var astPackage = reflect.TypeOf(ast.Program{}).PkgPath()

func mayHoldNodes(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice:
		return mayHoldNodes(t.Elem())
	case reflect.Struct:
		return t.PkgPath() == astPackage
	}
	return false
}

func (w *walker) offset(n ast.Node) int { return int(n.Idx0()) - w.base }

func (w *walker) add(at, target int, text string) {
	if at >= 0 && at <= w.limit {
		w.ins = append(w.ins, insertion{at: at, target: target, text: text})
	}
}

func (w *walker) visit(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		switch n := v.Interface().(type) {
		case *ast.Identifier, *ast.PrivateIdentifier, *ast.StringLiteral, *ast.NumberLiteral,
			*ast.BooleanLiteral, *ast.NullLiteral, *ast.RegExpLiteral, *ast.ThisExpression:
			return // leaves: no node below
		case *ast.DotExpression: // the commonest: only its left side holds nodes
			w.visit(reflect.ValueOf(n.Left))
			return
		case *ast.CallExpression:
			w.callSite(n)
		case *ast.Binding:
			w.bind(n.Target)
		case *ast.FunctionLiteral:
			w.bind(n.Name)
		case *ast.ClassLiteral:
			w.bind(n.Name)
		case *ast.CatchStatement:
			w.bind(n.Parameter)
		case *ast.ForDeclaration:
			w.bind(n.Target)
		case *ast.ParameterList:
			w.bind(n.Rest)
		default:
			w.loop(n)
		}
		w.visit(v.Elem())
	case reflect.Interface:
		if !v.IsNil() {
			w.visit(v.Elem())
		}
	case reflect.Struct:
		for _, i := range plan(v.Type()) {
			f := v.Field(i)
			if f.Type() == statementList {
				w.list(f.Interface().([]ast.Statement))
			}
			w.visit(f)
		}
	case reflect.Slice:
		for i := range v.Len() {
			w.visit(v.Index(i))
		}
	}
}

// list marks the statements of a statement list that record no position
// of their own.
func (w *walker) list(stmts []ast.Statement) {
	for _, st := range stmts {
		switch st.(type) {
		case *ast.ExpressionStatement, *ast.ThrowStatement, // the engine records these
			*ast.EmptyStatement, *ast.FunctionDeclaration, *ast.DebuggerStatement, *ast.BadStatement,
			*ast.BlockStatement, *ast.TryStatement, *ast.BranchStatement: // nothing of theirs can fail
			continue
		}
		off := w.offset(st)
		if ifs, ok := st.(*ast.IfStatement); ok {
			off = w.ifStart(ifs) // the parser leaves an if statement's own offset unset
		}
		w.add(off, off, "0;")
	}
}

// ifStart finds the `if` keyword before an if statement's condition: back
// from the condition over white space and opening parentheses. -1 when
// anything else is in between (a comment): the statement goes unmarked.
func (w *walker) ifStart(n *ast.IfStatement) int {
	j := w.offset(n.Test) - 1
	parens := 0
	for ; j >= 0; j-- {
		c := w.src[j]
		if c == '(' {
			parens++
		} else if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
	}
	if parens == 0 || j < 1 || w.src[j-1:j+1] != "if" || (j >= 2 && isIdentByte(w.src[j-2])) {
		return -1
	}
	return j - 1
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// loop marks the end of a loop's block body for the loop.
func (w *walker) loop(n any) {
	var body ast.Statement
	var start int
	switch n := n.(type) {
	case *ast.ForStatement:
		body, start = n.Body, w.offset(n)
	case *ast.WhileStatement:
		body, start = n.Body, w.offset(n)
	case *ast.DoWhileStatement:
		body, start = n.Body, w.offset(n)
	default:
		return
	}
	if b, ok := body.(*ast.BlockStatement); ok {
		w.add(int(b.RightBrace)-w.base, start, ";0;")
	}
}

// Source is the instrumented text: the source itself when it did not parse.
func (m *Map) Source() string { return m.out }

// Original is the source the map was made from, with what a markdown
// fence or `export default` took blanked (its length and lines are the
// source's).
func (m *Map) Original() string { return m.src }

// Form is the shape the source was found to have.
func (m *Map) Form() Form { return m.form }

// Why says, of an [Unread] source, which bound it passed.
func (m *Map) Why() string { return m.why }

// SyntaxError is the parser's first error, or nil when the source parsed.
func (m *Map) SyntaxError() *SyntaxError { return m.err }

// Markers is how many markers the instrumented text holds.
func (m *Map) Markers() int { return len(m.ins) }

// Offset turns an offset in the instrumented text into the source offset
// it stands for: a marker's is its statement's; past the end is len(src).
func (m *Map) Offset(off int) int {
	if off <= 0 {
		return 0
	}
	shift := 0
	for _, in := range m.ins {
		start := in.at + shift
		if off < start {
			break
		}
		if off < start+len(in.text) {
			return in.target
		}
		shift += len(in.text)
	}
	return min(off-shift, len(m.src))
}

// Synthetic says whether an offset in the instrumented text falls in a
// call that the source's form needed (an arrow's, a declared function's):
// a stack frame there is codemode's, not the source's.
func (m *Map) Synthetic(off int) bool {
	shift := 0
	for _, in := range m.ins {
		start := in.at + shift
		if off < start {
			return false
		}
		if off < start+len(in.text) {
			return in.call
		}
		shift += len(in.text)
	}
	return false
}

// LineOffset is the offset in the instrumented text of line line (1-based)
// and byte column col (1-based) of it, or len(text) past its last line.
func (m *Map) LineOffset(line, col int) int {
	m.once.Do(func() {
		m.lines = []int{0}
		for i := 0; i < len(m.out); i++ {
			if m.out[i] == '\n' {
				m.lines = append(m.lines, i+1)
			}
		}
	})
	if line < 1 {
		return 0
	}
	if line > len(m.lines) {
		return len(m.out)
	}
	return min(m.lines[line-1]+max(col-1, 0), len(m.out))
}

// Position is the 1-based line and column (in characters) of a source
// offset; offsets past the source's end are its end (see [Map.End]).
func (m *Map) Position(off int) (line, col int) {
	if off >= len(m.src) {
		return m.End()
	}
	off = max(off, 0)
	start := strings.LastIndexByte(m.src[:off], '\n') + 1
	return 1 + strings.Count(m.src[:start], "\n"), 1 + utf8.RuneCountInString(m.src[start:off])
}

// Lines is how many lines the source has.
func (m *Map) Lines() int { return 1 + strings.Count(m.src, "\n") }

// LineStart is the source offset of line n (1-based), or len(src).
func (m *Map) LineStart(n int) int { return lineStart(m.src, n) }

// Line is the 1-based line of a source offset.
func (m *Map) Line(off int) int {
	off = min(max(off, 0), len(m.src))
	return 1 + strings.Count(m.src[:off], "\n")
}

// Indent moves an offset forward to the first character of its line that
// is not white space, when it lies before it (the engine's stale columns
// often point at a line's start); offsets past the source stay.
func (m *Map) Indent(off int) int {
	if off >= len(m.src) {
		return off
	}
	off = max(off, 0)
	start := strings.LastIndexByte(m.src[:off], '\n') + 1
	first := start
	for first < len(m.src) && (m.src[first] == ' ' || m.src[first] == '\t') {
		first++
	}
	return max(off, first)
}

// End is the position just past the source's last character that is not
// white space: where an incomplete source ends, never past its last line.
func (m *Map) End() (line, col int) {
	end := len(strings.TrimRightFunc(m.src, unicode.IsSpace))
	start := strings.LastIndexByte(m.src[:end], '\n') + 1
	return 1 + strings.Count(m.src[:start], "\n"), 1 + utf8.RuneCountInString(m.src[start:end])
}
