package jspos

import (
	"errors"
	"strconv"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// A parser of a source someone else wrote runs only within bounds checked
// before it starts. The parsers codemode runs in Go (goja's here, esbuild's
// for TypeScript) are recursive descent parsers with no depth limit of
// their own, and a Go stack overflow is fatal: 400 KB of "(" ended the
// process. Their time is not linear either: goja's error recovery costs
// the square of the nesting ("{a:" 4,000 deep: 4 s), esbuild's TypeScript
// backtracking doubles with every arrow in a conditional's middle.
//
// A source is read when one of two things holds:
//
//   - it is small in the only sense that needs no lexing: it holds at most
//     [MaxCount] tokens that could open a level of a parser's recursion
//     (every punctuator but ; , ) ] } and every keyword, counted in strings
//     and comments too), so no parser, however it recovers from errors,
//     recurses deeper than that;
//   - or a lexer that reads it as ECMAScript does finds its nesting within
//     [MaxNesting] and its longest expression within [MaxChain] operators,
//     and (for JavaScript) the engine's own parser, which has a stack
//     limit and no recovery, accepts it: then no parser meets an error,
//     and its recursion follows the nesting the lexer counted.
//
// A source that is neither is not read: it is compiled as it is and the
// engine decides (see [Unread]).
const (
	// MaxCount is the token count under which any source is read.
	MaxCount = 1024
	// MaxNesting bounds a source's nesting as [Nesting] counts it:
	// brackets, and what nests without one (prefix operators, assignments,
	// arrows, conditionals, labels, if, else and loop heads). Programs
	// models write stay well below 100.
	MaxNesting = 1024
	// MaxChain bounds the operators, member accesses and calls of one
	// expression (1+1+...+1, a.b.c...): parsers read them in a loop, but
	// the tree is as deep as the chain is long and walks over it recurse.
	MaxChain = 10000
	// MaxTypeScriptNesting bounds a TypeScript source's nesting: esbuild's
	// parser backtracks over types and arrow heads, and its time grows
	// with the square of the nesting (100 ms at 320 nested arrows).
	MaxTypeScriptNesting = 256
	// MaxConditionalArrows bounds, in TypeScript, the parenthesized
	// expressions followed by a colon in a conditional's middle
	// (`a ? (b): c => ...`): esbuild tries each as an arrow function with
	// a return type by parsing all that follows, so the time doubles with
	// each one nested in another.
	MaxConditionalArrows = 8
)

// syntaxCheck is the engine's parser: it reports whether a script is valid
// JavaScript. Set by the codemode package (SetSyntaxCheck); nil, a source
// past MaxCount is never read.
var syntaxCheck atomic.Pointer[func(script string) bool]

// SetSyntaxCheck sets the parser that decides whether a source past
// [MaxCount] is valid JavaScript before goja's reads it: it must have a
// bounded stack and time of its own (the engine's parser in a fresh
// runtime of bounded memory and stack).
func SetSyntaxCheck(check func(script string) bool) { syntaxCheck.Store(&check) }

// Reading is what [Nesting] found of a source. The scan stops at the
// first bound the source passes: that count is then just past its bound.
type Reading struct {
	// Depth is the deepest nesting, as counted: an upper bound of a
	// parser's recursion (over a valid source), in units of a few frames.
	Depth int
	// Chain is the longest run of operators of one expression.
	Chain int
	// ConditionalArrows counts, in TypeScript, the nested conditionals'
	// parenthesized expressions followed by a colon (see
	// MaxConditionalArrows).
	ConditionalArrows int
	ts                bool // a reading of TypeScript

	// Sure says the lexer read every token as a parser does. It is not sure
	// where a slash could be a division or a regular expression (after a
	// `}`, after yield, await, of, let or a declaration's keyword, after a
	// prefix ++), of HTML-like comments, a hashbang, U+2028 and U+2029, a
	// literal or comment left open, or a bracket that closes what is not
	// open.
	Sure bool
}

// Within says whether the reading is within the bounds (the JavaScript
// ones, or the TypeScript ones when the reading was of TypeScript).
func (r Reading) Within() bool {
	return r.Sure && r.Depth <= r.maxNesting() && r.Chain <= MaxChain && r.ConditionalArrows <= MaxConditionalArrows
}

func (r Reading) maxNesting() int {
	if r.ts {
		return MaxTypeScriptNesting
	}
	return MaxNesting
}

// Why says which bound the reading passed, for an error message.
func (r Reading) Why() string {
	switch {
	case r.Depth > r.maxNesting():
		return "it nests more than " + strconv.Itoa(r.maxNesting()) + " levels deep"
	case r.Chain > MaxChain:
		return "an expression chains more than " + strconv.Itoa(MaxChain) + " operators"
	case r.ConditionalArrows > MaxConditionalArrows:
		return "it nests more than " + strconv.Itoa(MaxConditionalArrows) +
			" parenthesized expressions followed by a colon in conditionals"
	case !r.Sure:
		return "its tokens cannot be told apart without parsing it (a slash that may divide or start a regular " +
			"expression, a literal or comment left open, or a bracket that closes nothing open)"
	}
	return ""
}

// errInvalid is the parse error of a source past MaxCount that the
// engine's parser refused: it is not valid, and goja's never reads it (its
// error recovery is what nothing bounds), so where it goes wrong is the
// engine's to say.
var errInvalid = errors.New("jspos: the engine's parser refused the source")

// unreadError is the parse error of a source past the bounds.
type unreadError struct{ why string }

func (e *unreadError) Error() string { return "jspos: the source is not read: " + e.why }

// admit says whether goja's parser may read a wrapped source: nil, or
// errInvalid, or an *unreadError saying which bound the source passed.
func admit(text string) error {
	if CountTokens(text) <= MaxCount {
		return nil
	}
	if r := Nesting(text, false); !r.Within() {
		return &unreadError{why: r.Why()}
	}
	check := syntaxCheck.Load()
	if check == nil {
		return &unreadError{why: "it holds more than " + strconv.Itoa(MaxCount) + " tokens and no syntax check is set"}
	}
	if !(*check)(text) {
		return errInvalid
	}
	return nil
}

// TypeScriptReadable reports whether a TypeScript source may be given to
// esbuild's parser, which stops at its first error (it does not recover)
// but backtracks: its reading must be sure and within the TypeScript
// bounds, or the source small (see [MaxCount]; its depth and chains then
// need no bound) with few parenthesized expressions followed by a colon,
// the one construct whose backtracking doubles the time (see
// [MaxConditionalArrows]). When it may not, the reading says why.
func TypeScriptReadable(src string) (bool, Reading) {
	r := Nesting(src, true)
	small := CountTokens(src) <= MaxTypeScriptNesting
	switch {
	case r.Sure && small:
		return r.ConditionalArrows <= MaxConditionalArrows, r
	case r.Sure:
		return r.Within(), r
	case small && parenColons(src) <= MaxConditionalArrows:
		return true, r
	}
	return false, r
}

// parenColons counts, without lexing, the `)` followed by `:` (across
// white space): a bound of the conditional arrows however the source is
// read.
func parenColons(src string) int {
	n := 0
	for i := 0; i < len(src); i++ {
		if src[i] != ')' {
			continue
		}
		j := i + 1
		for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r') {
			j++
		}
		if j < len(src) && src[j] == ':' {
			n++
		}
	}
	return n
}

// CountTokens counts, without lexing, every token of src that could open
// a level of a parser's recursion: each punctuator character but ; , ) ]
// and }, and each keyword, wherever they are (in strings and comments
// too). No parser recurses deeper than that, whatever it makes of the
// source: every level it opens takes such a token.
func CountTokens(src string) int {
	n := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ';' || c == ',' || c == ')' || c == ']' || c == '}' || c == ' ' || c == '\t' || c == '\n' ||
			c == '\r' || (c >= '0' && c <= '9'):
			i++
		case c < utf8.RuneSelf && (('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '_' || c == '$'):
			j := i + 1
			for j < len(src) && src[j] < utf8.RuneSelf && isIdentByte(src[j]) {
				j++
			}
			if keywords[src[i:j]] {
				n++
			}
			i = j
		case c >= utf8.RuneSelf:
			i++
		default:
			n++
			i++
		}
	}
	return n
}

// keywords are the reserved words and the contextual ones of ECMAScript
// and TypeScript: CountTokens counts each.
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range []string{"await", "break", "case", "catch", "class", "const", "continue", "debugger",
		"default", "delete", "do", "else", "enum", "export", "extends", "false", "finally", "for", "function", "if",
		"import", "in", "instanceof", "new", "null", "return", "super", "switch", "this", "throw", "true", "try",
		"typeof", "var", "void", "while", "with", "yield", "let", "static", "implements", "interface", "package",
		"private", "protected", "public", "as", "async", "from", "get", "of", "set", "target", "meta", "accessor",
		"keyof", "infer", "readonly", "unique", "asserts", "is", "satisfies", "declare", "namespace", "module",
		"type", "abstract", "override", "out", "using", "never", "unknown", "any", "object", "symbol", "global"} {
		m[w] = true
	}
	return m
}()

// Nesting lexes a source as ECMAScript does (strings, templates and their
// substitutions, comments, regular expressions) and measures its nesting,
// for a valid source an upper bound of a parser's recursion. It keeps, per
// open bracket, the tokens that nest without a bracket since the current
// expression or statement began: the depth is the sum over the open
// brackets. An expression ends at a comma, a semicolon, or where a line
// break must end a statement (an operand, a line break, then an identifier
// or a literal); a chain of statement heads (if, else, loops) at a
// semicolon or the end of its block, unless else or while follows. With ts
// set, what nests in TypeScript's types counts too: `<`, `&`, `|` and the
// type operators.
func Nesting(src string, ts bool) Reading {
	l := lexer{src: src, ts: ts}
	l.scan()
	return Reading{Depth: l.maxDepth, Chain: l.maxChain, ConditionalArrows: l.maxCond, Sure: !l.unsure, ts: ts}
}

// wordKind is what a word is to the lexer.
type wordKind uint8

const (
	wordPlain   wordKind = iota // an identifier: an operand
	wordPrefix                  // an operator before an expression (typeof, new, ...): nests; a slash after it is a regex
	wordStmt                    // a statement head that takes a statement (if, for, while, with, do, else): nests
	wordBefore                  // a keyword after which an expression starts (return, in, case, ...)
	wordAmbig                   // yield, await, of, let: an identifier or a keyword; a slash after one is unsure
	wordLiteral                 // this, super, null, true, false: an operand
	wordOther                   // another reserved word: neither an operand nor a start (var, function, class...)
)

var words = map[string]wordKind{
	"typeof": wordPrefix, "void": wordPrefix, "delete": wordPrefix, "new": wordPrefix, "extends": wordPrefix,
	"await": wordAmbig, "yield": wordAmbig, "of": wordAmbig, "let": wordAmbig,
	"if": wordStmt, "else": wordStmt, "for": wordStmt, "while": wordStmt, "with": wordStmt, "do": wordStmt,
	"return": wordBefore, "throw": wordBefore, "case": wordBefore, "in": wordBefore, "instanceof": wordBefore,
	"this": wordLiteral, "super": wordLiteral, "null": wordLiteral, "true": wordLiteral, "false": wordLiteral,
	"var": wordOther, "const": wordOther, "function": wordOther, "class": wordOther, "import": wordOther,
	"export": wordOther, "default": wordOther, "break": wordOther, "continue": wordOther, "debugger": wordOther,
	"try": wordOther, "catch": wordOther, "finally": wordOther, "switch": wordOther, "enum": wordOther,
}

// tsPrefix are TypeScript's type operators: each nests.
var tsPrefix = map[string]bool{"keyof": true, "infer": true, "readonly": true, "unique": true, "asserts": true,
	"is": true, "as": true, "satisfies": true}

// continuing are the words that continue an expression after a line break.
var continuing = map[string]bool{"in": true, "instanceof": true, "of": true, "extends": true, "as": true,
	"satisfies": true, "is": true, "implements": true}

// prevKind is what the last token was, for what a slash, a plus or a line
// break after it means.
type prevKind uint8

const (
	prevStart   prevKind = iota // nothing, or an operator: an expression may start (a slash is a regex)
	prevOperand                 // an identifier, a literal, `]`, a `)` that is no statement head, a postfix ++
	prevHead                    // the `)` of an if, for, while or with head: a statement follows
	prevBrace                   // `}`: a block's or an expression's, which the lexer cannot tell
	prevWord                    // a keyword after which an expression starts
	prevAmbig                   // yield, await, of, let, a prefix ++ or --
	prevOther                   // var, function, class...
)

// frame is an open bracket (the source itself is the outermost).
type frame struct {
	open  byte // '(', '[', '{', '$' for a template's substitution; 0 for the source
	head  bool // '(': an if, for, while or with head; '{': a statement's block
	expr  int  // tokens that nest since the expression began
	stmt  int  // statement heads since the statement began
	chain int  // operators since the expression began
	quest int  // conditionals' `?` since the expression began
	cond  int  // TypeScript: `(...)` followed by `:` after a `?` in the expression
	// ended says a statement just ended: its heads are forgotten before
	// the next token, unless that is else or while.
	ended bool
}

type lexer struct {
	src    string
	ts     bool
	i      int
	frames []frame
	depth  int // the sum over the frames of 1 + expr + stmt
	cond   int // the sum over the frames of cond
	prev   prevKind
	// stmtHead is set after a word that takes a statement with a block
	// (else, do, try, finally) or a statement head's `)`: a `{` next is
	// that statement's block.
	stmtHead bool
	// parenHead is set after if, for, while, with: a `(` next is a head.
	parenHead bool
	newline   bool // a line break since the last token

	maxDepth, maxChain, maxCond int
	unsure                      bool
}

func (l *lexer) top() *frame { return &l.frames[len(l.frames)-1] }

func (l *lexer) note() {
	l.maxDepth = max(l.maxDepth, l.depth)
	l.maxChain = max(l.maxChain, l.top().chain)
	l.maxCond = max(l.maxCond, l.cond)
}

// nest counts a token that nests in the current expression.
func (l *lexer) nest() {
	l.top().expr++
	l.depth++
	l.note()
}

// chainOp counts an operator of the current expression.
func (l *lexer) chainOp() {
	l.top().chain++
	l.note()
}

// endExpr forgets the current expression's tokens.
func (l *lexer) endExpr() {
	f := l.top()
	l.depth -= f.expr
	l.cond -= f.cond
	f.expr, f.chain, f.quest, f.cond = 0, 0, 0, 0
}

// endStmt ends an expression at the end of a statement: the statement's
// heads go before the next token unless that continues the statement.
func (l *lexer) endStmt() {
	l.endExpr()
	l.top().ended = true
}

func (l *lexer) push(open byte, head bool) {
	l.frames = append(l.frames, frame{open: open, head: head})
	l.depth++
	l.note()
}

// pop closes the top frame if it is open; a closer that closes nothing,
// or the wrong bracket, makes the reading unsure.
func (l *lexer) pop(open byte) (frame, bool) {
	if len(l.frames) == 1 || l.top().open != open {
		l.unsure = true
		return frame{}, false
	}
	f := *l.top()
	l.depth -= 1 + f.expr + f.stmt
	l.cond -= f.cond
	l.frames = l.frames[:len(l.frames)-1]
	return f, true
}

// token is called before every token but a closer: it applies the line
// break rule and a pending statement end.
func (l *lexer) token(word string, operand bool) {
	if l.newline && operand && (l.prev == prevOperand || l.prev == prevBrace) && !continuing[word] {
		// An operand, a line break and an identifier or a literal: no
		// expression goes on that way, so the statement ended there.
		l.endStmt()
	}
	l.newline = false
	if f := l.top(); f.ended {
		f.ended = false
		if word != "else" && word != "while" {
			l.depth -= f.stmt
			f.stmt = 0
		}
	}
}

func (l *lexer) scan() {
	l.frames = append(make([]frame, 0, 16), frame{})
	l.depth = 1
	l.maxDepth = 1
	src := l.src
	if len(src) >= 2 && src[0] == '#' && src[1] == '!' {
		l.unsure = true // a hashbang
	}
	bound := MaxNesting
	if l.ts {
		bound = MaxTypeScriptNesting
	}
	for l.i < len(src) && !l.unsure && l.maxDepth <= bound && l.maxChain <= MaxChain && l.maxCond <= MaxConditionalArrows {
		c := src[l.i]
		switch {
		case c == '\n' || c == '\r':
			l.newline = true
			l.i++
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			l.i++
		case c == '/' && l.i+1 < len(src) && src[l.i+1] == '/':
			l.lineComment()
		case c == '/' && l.i+1 < len(src) && src[l.i+1] == '*':
			l.blockComment()
		case c == '\'' || c == '"':
			l.token("", true)
			l.quoted(c)
			l.prev = prevOperand
		case c == '`':
			l.token("", false)
			if l.prev == prevOperand || l.prev == prevBrace {
				l.chainOp() // a tagged template
			}
			l.i++
			l.template()
		case c >= '0' && c <= '9' || (c == '.' && l.i+1 < len(src) && src[l.i+1] >= '0' && src[l.i+1] <= '9'):
			l.token("", true)
			l.number()
			l.prev = prevOperand
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(src[l.i:])
			switch {
			case r == 0x2028 || r == 0x2029:
				l.unsure = true
			case unicode.IsSpace(r) || r == 0xFEFF:
				l.i += n
			default:
				l.word()
			}
		case isIdentByte(c) || c == '\\' || c == '#':
			l.word()
		default:
			l.punct()
		}
	}
}

func (l *lexer) lineComment() {
	for l.i < len(l.src) && l.src[l.i] != '\n' && l.src[l.i] != '\r' {
		if l.src[l.i] == 0xE2 && l.i+2 < len(l.src) && l.src[l.i+1] == 0x80 && (l.src[l.i+2] == 0xA8 || l.src[l.i+2] == 0xA9) {
			l.unsure = true // U+2028 and U+2029 end a comment
			return
		}
		l.i++
	}
}

func (l *lexer) blockComment() {
	start := l.i
	end := indexFrom(l.src, l.i+2, "*/")
	if end < 0 {
		l.unsure = true // unterminated
		l.i = len(l.src)
		return
	}
	l.i = end + 2
	for k := start; k < end; k++ {
		if l.src[k] == '\n' || l.src[k] == '\r' {
			l.newline = true // a comment with a line break is one
			return
		}
	}
}

func indexFrom(s string, from int, sub string) int {
	for k := from; k+len(sub) <= len(s); k++ {
		if s[k] == sub[0] && s[k:k+len(sub)] == sub {
			return k
		}
	}
	return -1
}

// quoted skips a string literal. One a line break ends, or that never
// ends, makes the reading unsure.
func (l *lexer) quoted(q byte) {
	l.i++
	for l.i < len(l.src) {
		switch c := l.src[l.i]; c {
		case q:
			l.i++
			return
		case '\\':
			l.i += 2
			if l.i-1 < len(l.src) && l.src[l.i-1] == '\r' && l.i < len(l.src) && l.src[l.i] == '\n' {
				l.i++
			}
		case '\n', '\r':
			l.unsure = true
			return
		default:
			l.i++
		}
	}
	l.unsure = true
}

// template skips a template's text up to its end, or to a substitution,
// which opens a frame.
func (l *lexer) template() {
	for l.i < len(l.src) {
		switch l.src[l.i] {
		case '`':
			l.i++
			l.prev = prevOperand
			return
		case '\\':
			l.i += 2
		case '$':
			if l.i+1 < len(l.src) && l.src[l.i+1] == '{' {
				l.i += 2
				l.push('$', false)
				l.prev = prevStart
				return
			}
			l.i++
		default:
			l.i++
		}
	}
	l.unsure = true // unterminated
}

func (l *lexer) number() {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c < utf8.RuneSelf && isIdentByte(c), c == '.':
			l.i++
		case (c == '+' || c == '-') && (l.src[l.i-1] == 'e' || l.src[l.i-1] == 'E') && !hexPrefix(l.src, l.i):
			l.i++ // an exponent's sign
		default:
			return
		}
	}
}

// hexPrefix says whether the number that reaches i is hexadecimal (where
// an e is a digit).
func hexPrefix(src string, i int) bool {
	j := i
	for j > 0 && (isIdentByte(src[j-1]) || src[j-1] == '.') {
		j--
	}
	return j+1 < len(src) && src[j] == '0' && (src[j+1] == 'x' || src[j+1] == 'X')
}

func (l *lexer) word() {
	start := l.i
	escaped := false
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == '\\':
			escaped = true
			l.i++
			if l.i < len(l.src) && l.src[l.i] == 'u' {
				l.i++
				if l.i < len(l.src) && l.src[l.i] == '{' {
					for l.i < len(l.src) && l.src[l.i] != '}' && l.src[l.i] != '\n' {
						l.i++
					}
					l.i++
				}
			}
		case c == '#' && l.i == start:
			l.i++
		case c < utf8.RuneSelf:
			if !isIdentByte(c) {
				goto done
			}
			l.i++
		default:
			r, n := utf8.DecodeRuneInString(l.src[l.i:])
			if r == 0x2028 || r == 0x2029 || unicode.IsSpace(r) || r == 0xFEFF {
				goto done
			}
			l.i += n
		}
	}
done:
	parenHead := l.parenHead
	l.stmtHead, l.parenHead = false, false
	if l.i == start { // a byte no token starts with
		l.i++
		l.unsure = true
		return
	}
	w := l.src[start:l.i]
	kind := wordPlain
	if !escaped {
		kind = words[w]
	}
	l.token(w, true)
	if l.ts && tsPrefix[w] {
		l.nest()
	}
	switch kind {
	case wordPlain, wordLiteral:
		l.prev = prevOperand
	case wordPrefix:
		l.nest()
		l.prev = prevWord
	case wordStmt:
		f := l.top()
		f.stmt++
		l.depth++
		l.note()
		l.prev = prevWord
		switch w {
		case "if", "for", "while", "with":
			l.parenHead = true
		default: // else, do
			l.stmtHead = true
		}
	case wordBefore:
		l.prev = prevWord
	case wordAmbig:
		if w == "await" || w == "yield" {
			l.nest()
		}
		if w == "await" && parenHead {
			l.parenHead = true // for await (
		}
		l.prev = prevAmbig
	default:
		l.prev = prevOther
		if w == "try" || w == "finally" {
			l.stmtHead = true
		}
	}
}

// regexAllowed says whether a slash now starts a regular expression; a
// slash the lexer cannot place makes the reading unsure.
func (l *lexer) regexAllowed() bool {
	switch l.prev {
	case prevOperand:
		return false
	case prevBrace, prevAmbig, prevOther:
		l.unsure = true
		return false
	}
	return true // prevStart, prevHead, prevWord
}

func (l *lexer) regex() {
	l.i++
	inClass := false
	for l.i < len(l.src) {
		switch c := l.src[l.i]; {
		case c == '\\':
			l.i++
			if l.i < len(l.src) && (l.src[l.i] == '\n' || l.src[l.i] == '\r') {
				l.unsure = true
				return
			}
			l.i++
		case c == '\n' || c == '\r':
			l.unsure = true // unterminated
			return
		case c == '[':
			inClass = true
			l.i++
		case c == ']':
			inClass = false
			l.i++
		case c == '/' && !inClass:
			l.i++
			for l.i < len(l.src) && isIdentByte(l.src[l.i]) {
				l.i++
			}
			return
		default:
			l.i++
		}
	}
	l.unsure = true
}

// punctuators of more than one character, longest first.
var punctuators = []string{
	">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=",
	"=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=",
	"&=", "|=", "^=", "**", "<<", ">>",
}

// nesting are the punctuators that nest: what follows them is an operand
// parsed by a recursive call (an assignment's right side, an arrow's body,
// a conditional's branches, a label's or a property's value, a spread).
var nesting = map[string]bool{"=": true, "=>": true, "?": true, ":": true, "**": true, "...": true, "+=": true,
	"-=": true, "*=": true, "/=": true, "%=": true, "**=": true, "<<=": true, ">>=": true, ">>>=": true, "&=": true,
	"|=": true, "^=": true, "&&=": true, "||=": true, "??=": true}

func (l *lexer) punct() {
	src := l.src
	c := src[l.i]
	p := src[l.i : l.i+1]
	for _, q := range punctuators {
		if q[0] == c && len(src)-l.i >= len(q) && src[l.i:l.i+len(q)] == q {
			p = q
			break
		}
	}
	if p == "?." && l.i+2 < len(src) && src[l.i+2] >= '0' && src[l.i+2] <= '9' {
		p = "?" // a ? .5 : b
	}
	if p == "<" && l.i+3 < len(src) && src[l.i:l.i+4] == "<!--" || p == "--" && l.newline && l.i+2 < len(src) && src[l.i+2] == '>' {
		l.unsure = true // HTML-like comments
		return
	}
	stmtHead, parenHead := l.stmtHead, l.parenHead
	l.stmtHead, l.parenHead = false, false
	switch c {
	case ')', ']', '}':
		l.newline = false
	default:
		l.token("", false)
	}
	operand := l.prev == prevOperand || l.prev == prevBrace
	l.i += len(p)
	switch p {
	case "(":
		if operand {
			l.chainOp() // a call
		}
		l.push('(', parenHead)
		l.prev = prevStart
	case "[":
		if operand {
			l.chainOp() // an index
		}
		l.push('[', false)
		l.prev = prevStart
	case "{":
		l.push('{', stmtHead)
		l.prev = prevStart
	case ")":
		f, ok := l.pop('(')
		l.prev = prevOperand
		if ok && f.head {
			l.prev = prevHead
			l.stmtHead = true
		} else if ok && l.ts && l.top().quest > 0 && l.nextIs(':') {
			// TypeScript: `(b):` in a conditional's middle, which esbuild
			// tries as an arrow function's parameters and return type.
			l.top().cond++
			l.cond++
			l.note()
		}
	case "]":
		l.pop('[')
		l.prev = prevOperand
	case "}":
		if len(l.frames) > 1 && l.top().open == '$' {
			l.pop('$')
			l.template()
			return
		}
		if f, ok := l.pop('{'); ok && f.head {
			l.endStmt() // the block of if, else, a loop, try...
		}
		l.prev = prevBrace
	case ";":
		l.endStmt()
		l.prev = prevStart
	case ",":
		l.endExpr()
		l.prev = prevStart
	case "/", "/=":
		l.i -= len(p)
		if l.regexAllowed() {
			l.regex()
			l.prev = prevOperand
			return
		}
		l.i += len(p)
		if p == "/=" {
			l.nest()
		} else {
			l.chainOp()
		}
		l.prev = prevStart
	case "++", "--":
		if l.prev == prevOperand {
			return // postfix: still an operand
		}
		l.nest()
		l.prev = prevAmbig // a slash after a prefix ++ is unsure
	case "+", "-", "!", "~":
		if p == "!" || p == "~" || !operand {
			l.nest() // a prefix operator
		} else {
			l.chainOp()
		}
		l.prev = prevStart
	case "<", "&", "|":
		if l.ts {
			l.nest() // type arguments, intersections, unions
		} else {
			l.chainOp()
		}
		l.prev = prevStart
	default:
		switch {
		case nesting[p]:
			if p == "?" {
				l.top().quest++
			}
			l.nest()
		default:
			l.chainOp()
		}
		l.prev = prevStart
	}
}

// nextIs says whether the next character but white space is c.
func (l *lexer) nextIs(c byte) bool {
	for k := l.i; k < len(l.src); k++ {
		switch l.src[k] {
		case ' ', '\t', '\n', '\r':
			continue
		case c:
			return true
		}
		return false
	}
	return false
}
