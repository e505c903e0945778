package jspos

import (
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
)

// Form is the shape a model's source was found to have: what [Instrument]
// made of it for a [Body] or [StrictExpression] target.
type Form int

const (
	// Statements are a function body: top-level return and await. When no
	// return statement is among them (outside nested functions) and the
	// last is an expression statement, its value is returned.
	Statements Form = iota
	// Function is one function or arrow expression: it is called.
	Function
	// Declaration is one named function declaration: it is called.
	Declaration
	// Value is one expression that is not a statement (an object literal,
	// an anonymous function): its value, called when it is a function.
	Value
	// Invalid parses in no shape: it is compiled as statements, and the
	// map holds the parser's error (none when the source was past
	// MaxCount: the engine's parser refused it, and says where).
	Invalid
	// Unread is a source past the bounds of what is read (see MaxCount):
	// nothing is inserted, it is compiled as it is (a body for Run), and
	// the engine, whose parser has a stack limit, decides.
	Unread
)

// shaped is what the shape analysis found in one candidate text.
type shaped struct {
	form Form
	code string   // the candidate: the source with fences and `export default` blanked
	root ast.Node // the node whose statement lists are marked
	base int      // the parser's offset (1-based) of code[0]
	// Where the shape's own insertions go, as offsets of code.
	start  int    // the first token (Function, Value)
	end    int    // the function's end (Function)
	last   int    // the returned expression statement's start (Statements), or -1
	name   string // the declared function (Declaration)
	fn     bool   // the value is a function (Value)
	blanks []int  // trailing semicolons an expression target cannot hold
	err    error  // the body parse's error (Invalid)
}

// analyze finds the form of src: as it is, or inside its markdown fence,
// and behind `export default`. A fence is read when the source holds one
// (the prose around it, even prose that happens to parse, is dropped),
// unless its backticks are inside the source's own code (a template
// literal, a string or a comment of a source that parses). Every
// candidate keeps the source's length and lines: what is dropped becomes
// spaces.
func analyze(src string) shaped {
	if code, open := unfence(src); open >= 0 {
		s := try(src, false)
		if s.form == Invalid || s.form == Unread || s.templateAt(open) {
			return analyzeCode(code)
		}
		return s
	}
	return analyzeCode(src)
}

// analyzeCode finds the form of code (no fence), behind `export default`
// or not. What follows `export default` is an expression first.
func analyzeCode(code string) shaped {
	if c := blankExportDefault(code); c != code {
		// `export` never parses in a body: the error to report, if any, is
		// the one after it.
		return try(c, true)
	}
	return try(code, false)
}

// templateAt says whether the source's parse holds a template literal
// that starts at off: a fence's backticks read as code.
func (s shaped) templateAt(off int) bool {
	if s.root == nil {
		return false
	}
	found := false
	inspect(reflect.ValueOf(s.root), func(n any) bool {
		t, ok := n.(*ast.TemplateLiteral)
		found = ok && int(t.OpenQuote)-s.base == off
		return !found
	})
	return found
}

// inspect calls f with every node pointer in the tree under v, in document
// order, until f returns false; it reports whether the walk went through.
func inspect(v reflect.Value, f func(any) bool) bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return true
		}
		return f(v.Interface()) && inspect(v.Elem(), f)
	case reflect.Interface:
		if !v.IsNil() {
			return inspect(v.Elem(), f)
		}
	case reflect.Struct:
		for _, i := range plan(v.Type()) {
			if !inspect(v.Field(i), f) {
				return false
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if !inspect(v.Index(i), f) {
				return false
			}
		}
	}
	return true
}

// errStrayCloser marks a body that closed the wrapper and went on.
var errStrayCloser = &strayCloserError{}

type strayCloserError struct{}

func (*strayCloserError) Error() string { return "stray closer" }

// try parses code as a body, then as one expression (the other way
// round when valueFirst: what follows `export default`).
func try(code string, valueFirst bool) shaped {
	if valueFirst {
		if v, ok := tryValue(code); ok {
			return v
		}
	}
	s := shaped{code: code, last: -1}
	prog, err := parse(bodyHead + parsable(code) + bodyTail)
	if _, ok := err.(*unreadError); ok {
		s.form, s.err = Unread, err
		return s
	}
	if err == nil {
		root, ok := single(prog, Body, code)
		if !ok {
			s.form, s.err = Invalid, errStrayCloser
			return s
		}
		s.root, s.base = root, len(bodyHead)+1
		s.statements(root.(*ast.ArrowFunctionLiteral).Body.(*ast.BlockStatement).List)
		return s
	}
	s.form, s.err = Invalid, err
	if !valueFirst {
		if v, ok := tryValue(code); ok {
			return v
		}
	}
	return s
}

// tryValue parses code as one expression that is no statement; a
// trailing semicolon is blanked.
func tryValue(code string) (shaped, bool) {
	expr, blank := code, -1
	if end := len(strings.TrimRightFunc(code, unicode.IsSpace)); end > 0 && code[end-1] == ';' {
		expr, blank = code[:end-1]+" "+code[end:], end-1
	}
	prog, err := parse(exprHead + parsable(expr) + exprTail)
	if err != nil {
		return shaped{}, false
	}
	root, ok := single(prog, Expression, expr)
	if !ok {
		return shaped{}, false
	}
	s := shaped{form: Value, code: expr, root: root, base: len(exprHead) + 1, last: -1, start: skipTrivia(expr, 0)}
	if blank >= 0 {
		s.blanks = []int{blank}
	}
	switch root.(*ast.ExpressionStatement).Expression.(type) {
	case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
		s.fn = true
	}
	return s, true
}

// statements classifies a body's top-level statements.
func (s *shaped) statements(list []ast.Statement) {
	var real []ast.Statement
	for _, st := range list {
		if e, ok := st.(*ast.EmptyStatement); ok {
			s.blanks = append(s.blanks, int(e.Semicolon)-s.base)
			continue
		}
		real = append(real, st)
	}
	s.form = Statements
	if len(real) == 1 {
		switch st := real[0].(type) {
		case *ast.ExpressionStatement:
			switch st.Expression.(type) {
			case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
				s.form = Function
				s.start = skipTrivia(s.code, 0)
				s.end = statementEnd(s.code, s.endOf(st.Expression))
				s.blanks = append(s.blanks, s.trailingSemicolon(s.end)...)
				return
			}
		case *ast.FunctionDeclaration:
			if st.Function.Name != nil {
				s.form, s.name = Declaration, st.Function.Name.Name.String()
				return
			}
		}
	}
	if len(real) == 0 || hasReturn(real) {
		return
	}
	if last, ok := real[len(real)-1].(*ast.ExpressionStatement); ok {
		prev := 0
		if len(real) > 1 {
			prev = s.endOf(real[len(real)-2])
		}
		s.last = statementStart(s.code, prev, int(last.Idx0())-s.base)
	}
}

// endOf is n's end offset in s.code. The parser's Idx1 of a node that
// ends in an identifier counts the identifier's name as the parser holds
// it (UTF-16 when it is not ASCII, escapes decoded), not its source bytes
// (a fuzzer's find: `A0ʋ\rԦ` put an insertion past the end): such an end
// is measured in the source instead (ASCII source without a backslash
// needs no such care), and every end is kept within it.
func (s *shaped) endOf(n ast.Node) int {
	e := int(n.Idx1()) - s.base
	if !asciiOnly(s.code) || strings.IndexByte(s.code, '\\') >= 0 {
		if id := lastIdentifier(reflect.ValueOf(n)); id != nil && id.Idx1() == n.Idx1() {
			e = identEnd(s.code, int(id.Idx)-s.base)
		}
	}
	return min(max(e, 0), len(s.code))
}

func asciiOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lastIdentifier is the identifier that starts last in the tree under v.
func lastIdentifier(v reflect.Value) *ast.Identifier {
	var last *ast.Identifier
	inspect(v, func(n any) bool {
		if id, ok := n.(*ast.Identifier); ok && (last == nil || id.Idx > last.Idx) {
			last = id
		}
		return true
	})
	return last
}

// identEnd is the end of the identifier that starts at i: its source
// bytes, escapes included.
func identEnd(code string, i int) int {
	if i < 0 {
		return 0
	}
	for i < len(code) {
		if code[i] == '\\' && i+1 < len(code) && code[i+1] == 'u' {
			j := i + 2
			if j < len(code) && code[j] == '{' {
				for j < len(code) && code[j] != '}' {
					j++
				}
				i = j + 1
			} else {
				i = min(j+4, len(code))
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(code[i:])
		if r != '$' && r != '_' && r != 0x200C && r != 0x200D && !unicode.IsLetter(r) &&
			!unicode.In(r, unicode.Nd, unicode.Mn, unicode.Mc, unicode.Pc, unicode.Nl, unicode.Other_ID_Start, unicode.Other_ID_Continue) {
			break
		}
		i += n
	}
	return min(i, len(code))
}

// statementEnd is where the only statement's expression ends, from the
// parser's end of it: past the closing parentheses the parser leaves out
// (a concise arrow body's, `() => ({ n: 1 })`, and those around the whole
// expression) and past what the parser's end falls short of (`new X()`:
// it ends before the parentheses), up to the statement's semicolon.
func statementEnd(code string, from int) int {
	end, depth := from, 0
	for i := skipTrivia(code, from); i < len(code); i = skipTrivia(code, i+1) {
		switch code[i] {
		case ';':
			if depth <= 0 {
				return end
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		end = i + 1
	}
	return end
}

// statementStart is where a statement's text begins: the parser's start
// of it (which leaves out the parentheses around an expression) moved back
// over the opening parentheses before it, within what lies after the end
// of the statement before (which the parser may place short of its last
// tokens: `new X()` ends before its parentheses).
func statementStart(code string, prevEnd, start int) int {
	opens := -1 // the first of the opening parentheses just before start
	for i := skipTrivia(code, prevEnd); i < start; i = skipTrivia(code, i+1) {
		switch {
		case code[i] != '(':
			opens = -1
		case opens < 0:
			opens = i
		}
	}
	if opens >= 0 {
		return opens
	}
	return start
}

// trailingSemicolon finds the semicolon that ends the only statement,
// after its expression's end (past closing parentheses and trivia).
func (s *shaped) trailingSemicolon(from int) []int {
	for i := from; i < len(s.code); {
		switch c := s.code[i]; {
		case c == ')':
			i++
		case c == ';':
			return []int{i}
		default:
			j := skipTrivia(s.code, i)
			if j == i {
				return nil
			}
			i = j
		}
	}
	return nil
}

// hasReturn says whether a return statement is among the statements or
// the statements they hold (not in nested functions or classes).
func hasReturn(list []ast.Statement) bool {
	for _, st := range list {
		if returns(st) {
			return true
		}
	}
	return false
}

func returns(st ast.Statement) bool {
	switch st := st.(type) {
	case *ast.ReturnStatement:
		return true
	case *ast.BlockStatement:
		return hasReturn(st.List)
	case *ast.IfStatement:
		return returns(st.Consequent) || (st.Alternate != nil && returns(st.Alternate))
	case *ast.ForStatement:
		return returns(st.Body)
	case *ast.ForInStatement:
		return returns(st.Body)
	case *ast.ForOfStatement:
		return returns(st.Body)
	case *ast.WhileStatement:
		return returns(st.Body)
	case *ast.DoWhileStatement:
		return returns(st.Body)
	case *ast.LabelledStatement:
		return returns(st.Statement)
	case *ast.WithStatement:
		return returns(st.Body)
	case *ast.SwitchStatement:
		for _, c := range st.Body {
			if hasReturn(c.Consequent) {
				return true
			}
		}
	case *ast.TryStatement:
		return hasReturn(st.Body.List) || (st.Catch != nil && hasReturn(st.Catch.Body.List)) ||
			(st.Finally != nil && hasReturn(st.Finally.List))
	}
	return false
}

// StaticImport finds a line that begins with an import declaration (not
// `import(` or `import.meta`, not TypeScript's `import type`): the module
// it names and the declaration's offset; ok false when there is none. A
// program runs as a script, where such a declaration is a syntax error
// whose true reason is that there is no module to load: call it only on
// a source that did not parse.
func StaticImport(src string) (module string, off int, ok bool) {
	at := 0
	for line := range strings.Lines(src) {
		i := skipTrivia(line, 0)
		rest := line[i:]
		if !strings.HasPrefix(rest, "import") || len(rest) < 7 || isIdentByte(rest[6]) || rest[6] == '(' || rest[6] == '.' {
			at += len(line)
			continue
		}
		after := strings.TrimLeft(rest[6:], " \t")
		if strings.HasPrefix(after, "type ") || strings.HasPrefix(after, "type{") {
			at += len(line)
			continue
		}
		spec := after
		if len(spec) == 0 || (spec[0] != '\'' && spec[0] != '"') {
			// import x from 'm', import { a } from "m", import * as n from 'm'
			k := strings.Index(after, "from")
			if k < 0 {
				at += len(line)
				continue
			}
			spec = strings.TrimLeft(after[k+4:], " \t")
		}
		if len(spec) > 1 && (spec[0] == '\'' || spec[0] == '"') {
			if end := strings.IndexByte(spec[1:], spec[0]); end >= 0 {
				return spec[1 : 1+end], at + i, true
			}
		}
		return "", at + i, true
	}
	return "", 0, false
}

// StrictBody says, without parsing, whether a body begins with a "use
// strict" directive: its first statements are string literals (in a
// markdown fence or not), one of them 'use strict' or "use strict" as
// written. A wrapper that puts the body in a block of its own must then
// make its function strict.
func StrictBody(src string) bool {
	if code, open := unfence(src); open >= 0 {
		src = code
	}
	i := skipTrivia(src, 0)
	for i < len(src) && (src[i] == '\'' || src[i] == '"') {
		q := src[i]
		j := i + 1
		for j < len(src) && src[j] != q && src[j] != '\n' && src[j] != '\r' {
			if src[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(src) || src[j] != q {
			return false
		}
		literal := src[i+1 : j]
		// A directive ends its statement: a semicolon, a closing brace or
		// the end, or a line break before what cannot continue the
		// expression (a string, an identifier).
		k := j + 1
		for k < len(src) && (src[k] == ' ' || src[k] == '\t') {
			k++
		}
		n := skipTrivia(src, k)
		switch {
		case n >= len(src), src[n] == ';', src[n] == '}':
		case strings.ContainsAny(src[k:n], "\n\r") && (src[n] == '\'' || src[n] == '"' || isIdentByte(src[n])) &&
			!strings.HasPrefix(src[n:], "in ") && !strings.HasPrefix(src[n:], "instanceof"):
		default:
			return false
		}
		if literal == "use strict" {
			return true
		}
		if n < len(src) && src[n] == ';' {
			n = skipTrivia(src, n+1)
		}
		i = n
	}
	return false
}

// skipTrivia returns the offset of the first byte at or after i that is
// neither white space nor inside a comment.
func skipTrivia(code string, i int) int {
	for i < len(code) {
		c := code[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			i++
		case c == '/' && i+1 < len(code) && code[i+1] == '/':
			j := strings.IndexAny(code[i:], "\n\r")
			if j < 0 {
				return len(code)
			}
			i += j
		case c == '/' && i+1 < len(code) && code[i+1] == '*':
			j := strings.Index(code[i+2:], "*/")
			if j < 0 {
				return len(code)
			}
			i += j + 4
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(code[i:])
			if !unicode.IsSpace(r) && r != '\uFEFF' {
				return i
			}
			i += n
		default:
			return i
		}
	}
	return i
}

// blankExportDefault blanks a leading `export default` (after trivia).
func blankExportDefault(code string) string {
	i := skipTrivia(code, 0)
	if !strings.HasPrefix(code[i:], "export") || (i+6 < len(code) && isIdentByte(code[i+6])) {
		return code
	}
	j := skipTrivia(code, i+6)
	if j == i+6 || !strings.HasPrefix(code[j:], "default") || (j+7 < len(code) && isIdentByte(code[j+7])) {
		return code
	}
	b := []byte(code)
	copy(b[i:i+6], "      ")
	copy(b[j:j+7], "       ")
	return string(b)
}

// fenceLangs are the info strings of a fence whose code is read.
var fenceLangs = map[string]bool{"": true, "js": true, "javascript": true, "ts": true, "typescript": true,
	"jsx": true, "tsx": true, "mjs": true, "cjs": true, "mts": true}

// unfence blanks what lies outside the source's code fences: the prose
// around and between them, their fence lines, and fences of another
// language (```json, ```bash). The code of every fence is kept in place,
// in order, so a reply that defines a helper in one fence and calls it in
// the next runs as one program, every position its own. open is the offset
// of the first code fence's backticks, -1 (and src as it is) when src
// holds none. A fence left open (a cut-off answer) runs to the end; when
// it is the only one, it counts only when it opens the source.
func unfence(src string) (code string, open int) {
	if !strings.Contains(src, "```") { // the common case: no fence to look for
		return src, -1
	}
	type block struct{ start, end int } // a code fence's code
	var blocks []block
	open = -1
	inFence, isCode := false, false
	start, fenceAt, off := 0, 0, 0
	for line := range strings.Lines(src) {
		t := strings.TrimSpace(line)
		switch {
		case !inFence && strings.HasPrefix(t, "```"):
			inFence, fenceAt, start = true, off, off+len(line)
			isCode = fenceLangs[strings.ToLower(strings.TrimSpace(t[3:]))] && strings.HasSuffix(line, "\n")
		case inFence && t == "```":
			inFence = false
			if isCode {
				blocks = append(blocks, block{start, off})
			}
		}
		if inFence && isCode && open < 0 && start == off+len(line) {
			open = fenceAt + strings.Index(line, "`")
		}
		off += len(line)
	}
	if inFence && isCode && (len(blocks) > 0 || strings.TrimSpace(src[:fenceAt]) == "") {
		blocks = append(blocks, block{start, len(src)})
	}
	if len(blocks) == 0 {
		return src, -1
	}
	b := []byte(src)
	last := 0
	for _, bl := range blocks {
		blank(b[last:bl.start])
		last = bl.end
	}
	blank(b[last:])
	return string(b), open
}

// blank turns every byte but line breaks into a space.
func blank(b []byte) {
	for i, c := range b {
		if c != '\n' {
			b[i] = ' '
		}
	}
}
