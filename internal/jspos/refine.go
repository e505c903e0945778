package jspos

import (
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/token"
)

// The engine places an error at the last position it recorded before the
// throw: a statement's start (a marker's), a call's arguments, a binary
// operator's right side. [Map.Refine] moves such a position to the
// expression that threw when the message names it and exactly one
// expression of that name lies between that position and the next the
// engine records, in the same function: `return a.nope.deeper` is placed
// at `deeper`, `foo(1)` (foo is not defined) at `foo`. Otherwise the
// position stays.

// errorKinds read an engine message's first line: what it names.
var (
	readProperty = regexp.MustCompile(`^TypeError: cannot (read|set) property '(.*)' of (?:undefined|null)`)
	destructure  = regexp.MustCompile(`^TypeError: [Cc]annot convert undefined or null to object`)
	notIterable  = regexp.MustCompile(`^TypeError: .*is not iterable`)
	notDefined   = regexp.MustCompile(`^ReferenceError: ([\p{L}\p{Nl}$_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$\x{200C}\x{200D}]*) is not defined`)
	notCallable  = regexp.MustCompile(`^TypeError: (?:.* )?not a (?:function|constructor)`)
)

type refKind uint8

const (
	refMember  refKind = iota // a property read or write: name is the key
	refIdent                  // an identifier's use
	refIter                   // what a for-of or a spread iterates
	refCall                   // a call or `new`: at is its callee's place
	refPattern                // an object pattern: at is its first property's
)

// refNode is an expression an error may be placed at.
type refNode struct {
	kind     refKind
	start    int // where its evaluation begins (its first byte)
	at       int // the place reported
	name     string
	computed bool  // a member whose key is computed
	assignAt int   // a member assigned to: its operator's offset (V8 places a failed write there); -1 otherwise
	fn       int   // the function it is in (its index in refTree.fns)
	points   []int // a call's: where the engine records its position
	rp       int   // a call's closing parenthesis
}

// refTree is what Refine reads of a source: the expressions and the
// positions the engine records.
type refTree struct {
	nodes  []refNode
	points []refPoint
	fns    []fnSpan // the functions' extents; 0 is the whole text
}

type refPoint struct{ off, fn int }

// Refine returns the source offset an engine position off (a source
// offset, see [Map.Offset]) of an error with message stands for (see
// above): the place of the expression that threw, or off.
func (m *Map) Refine(off int, message string) int {
	first, _, _ := strings.Cut(message, "\n")
	t := m.refTree()
	if t == nil {
		return off
	}
	fn := t.fnAt(off)
	if notCallable.MatchString(first) {
		return t.callOf(off, fn, func(*refNode) bool { return true })
	}
	var want func(n *refNode) bool
	var wild func(n *refNode) bool
	write := false
	if sub := readProperty.FindStringSubmatch(first); sub != nil {
		name := sub[2]
		write = sub[1] == "set"
		if name == "Symbol.iterator" {
			want = func(n *refNode) bool { return n.kind == refIter }
		} else {
			want = func(n *refNode) bool { return n.kind == refMember && !n.computed && n.name == name }
			wild = func(n *refNode) bool { return n.kind == refMember && n.computed }
		}
	} else if notIterable.MatchString(first) {
		want = func(n *refNode) bool { return n.kind == refIter }
	} else if destructure.MatchString(first) {
		want = func(n *refNode) bool { return n.kind == refPattern }
	} else if sub := notDefined.FindStringSubmatch(first); sub != nil {
		name := sub[1]
		want = func(n *refNode) bool { return n.kind == refIdent && n.name == name }
	} else {
		return off
	}
	end := t.next(off, fn)
	pick := func(match func(n *refNode) bool) (int, int) {
		found, at := 0, off
		for i := range t.nodes {
			n := &t.nodes[i]
			if n.fn != fn || n.start < off || n.start >= end || !match(n) {
				continue
			}
			found++
			at = n.at
			if write && n.assignAt >= 0 {
				at = n.assignAt
			}
		}
		return found, at
	}
	found, at := pick(want)
	if found == 0 && wild != nil {
		found, at = pick(wild)
	}
	switch {
	case found == 1:
		return at
	case found == 0:
		return t.arrowBody(m.src, off, want)
	}
	return off
}

// arrowBody places an error thrown in an arrow whose body is an
// expression: the engine records no position there and reports the start
// of the arrow's line. Off at a line's start, the match is looked for in
// the expression-bodied arrows that begin on that line; exactly one
// places it.
func (t *refTree) arrowBody(src string, off int, want func(n *refNode) bool) int {
	if off < 0 || off > len(src) || (off > 0 && src[off-1] != '\n') {
		return off
	}
	eol := strings.IndexByte(src[off:], '\n')
	if eol < 0 {
		eol = len(src) - off
	}
	found, at := 0, off
	for i := range t.nodes {
		n := &t.nodes[i]
		if f := t.fns[n.fn]; !f.expr || f.from < off || f.from >= off+eol || !want(n) {
			continue
		}
		found++
		at = n.at
	}
	if found == 1 {
		return at
	}
	return off
}

// CallAt returns the place of the call a stack frame's position off (a
// source offset) stands for, the frame above it being a call of the
// function named callee ("" for an anonymous one): a frame below the top
// one is at a call, which the engine records at its first argument (or
// its closing parenthesis, or a `new`'s callee); it is placed at the
// callee's name (a `new` at its keyword), as V8 places it. off when the
// position is no call's own (a later one recorded inside its arguments),
// or the call there is not of callee (a getter's read, an alias).
func (m *Map) CallAt(off int, callee string) int {
	if t := m.refTree(); t != nil {
		return t.callOf(off, t.fnAt(off), func(n *refNode) bool { return callee == AnyCallee || n.name == callee })
	}
	return off
}

// AnyCallee is CallAt's callee when the function the frame called is not
// known by a name the source could use (a provider tool's, whose frames
// are codemode's runtime): any call there stands.
const AnyCallee = "\x00any"

// fnAt is the innermost function that holds off (0: none, the source's
// top level; fns[0] is the whole text).
func (t *refTree) fnAt(off int) int {
	best := 0 // the whole text
	for i, f := range t.fns {
		// A position at a function's first byte is its enclosing
		// function's (a call whose first argument is the function).
		if off > f.from && off < f.to && f.to-f.from <= t.fns[best].to-t.fns[best].from {
			best = i
		}
	}
	return best
}

// next is the first position the engine records after off, in fn.
func (t *refTree) next(off, fn int) int {
	end := int(^uint(0) >> 1)
	for _, p := range t.points {
		if p.fn == fn && p.off > off && p.off < end {
			end = p.off
		}
	}
	return end
}

// call places a "not a function" error, or a frame's call: at the call
// (or `new`) off is one of the engine's positions of, when exactly one is;
// a position recorded later inside its arguments leaves the call unknown.
func (t *refTree) callOf(off, fn int, of func(n *refNode) bool) int {
	found, at := 0, off
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.kind == refCall && n.fn == fn && slices.Contains(n.points, off) && of(n) {
			found++
			at = n.at
		}
	}
	if found == 1 {
		return at
	}
	return off
}

// refTree parses the map's source again (on the first error that asks)
// and keeps what Refine reads; nil when it does not parse.
func (m *Map) refTree() *refTree {
	m.refOnce.Do(func() {
		if m.form == Invalid || m.form == Unread {
			return
		}
		code := standIn(m.src)
		var root ast.Node
		var base int
		if m.shape == Expression {
			head, tail := wrappers(Expression)
			prog, err := parse(head + parsable(code) + tail)
			if err != nil {
				return
			}
			r, ok := single(prog, Expression, code)
			if !ok {
				return
			}
			root, base = r, len(head)+1
		} else {
			s := analyze(code)
			if s.root == nil || s.form == Invalid || s.form == Unread {
				return
			}
			root, base = s.root, s.base
		}
		marked := make(map[int]bool, len(m.sites))
		for _, s := range m.sites {
			marked[s.Offset] = true
		}
		b := refBuilder{src: code, base: base, marked: marked, t: &refTree{}}
		b.fns = append(b.fns, fnSpan{from: -1 << 30, to: 1 << 30})
		b.visit(reflect.ValueOf(root), 0)
		b.t.fns = b.fns
		m.ref = b.t
	})
	return m.ref
}

// fnSpan is a function's extent; expr says it is an arrow whose body is
// an expression (the engine records no position in it).
type fnSpan struct {
	from, to int
	expr     bool
}

type refBuilder struct {
	src     string
	base    int
	marked  map[int]bool // the sites' places: a marked call records at its last argument too
	t       *refTree
	fns     []fnSpan
	assigns map[ast.Expression]bool // assignments' targets: a member is visited after the assignment it is the target of
}

// place is where V8 places an expression, as an offset of a source the
// parser read from base: a member at its property's name (or computed
// key), a call at its callee's, anything else at its start.
func place(e ast.Expression, base int) int {
	for {
		switch x := e.(type) {
		case *ast.DotExpression:
			return int(x.Identifier.Idx) - base
		case *ast.BracketExpression:
			return int(x.Member.Idx0()) - base
		case *ast.CallExpression:
			e = x.Callee
			continue
		}
		return int(e.Idx0()) - base
	}
}

// assigned is the offset of the operator of the assignment a member is the
// target of (the first byte after the member that is not white space), or
// -1 when it is no assignment's target.
func (b *refBuilder) assigned(member ast.Expression) int {
	if !b.assigns[member] {
		return -1
	}
	j := b.end(member)
	for j < len(b.src) && isSpace(b.src[j]) {
		j++
	}
	if j < len(b.src) && b.src[j] != '/' && b.src[j] != ')' {
		return j
	}
	return -1
}

func (b *refBuilder) off(n ast.Node) int { return int(n.Idx0()) - b.base }
func (b *refBuilder) end(n ast.Node) int { return int(n.Idx1()) - b.base }

func (b *refBuilder) point(off, fn int) { b.t.points = append(b.t.points, refPoint{off, fn}) }

func (b *refBuilder) visit(v reflect.Value, fn int) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		switch n := v.Interface().(type) {
		case *ast.FunctionLiteral:
			b.fns = append(b.fns, fnSpan{from: b.off(n), to: b.end(n)})
			fn = len(b.fns) - 1
		case *ast.ArrowFunctionLiteral:
			_, expr := n.Body.(*ast.ExpressionBody)
			b.fns = append(b.fns, fnSpan{from: b.off(n), to: b.end(n), expr: expr})
			fn = len(b.fns) - 1
		case *ast.Identifier:
			b.t.nodes = append(b.t.nodes, refNode{kind: refIdent, start: b.off(n), at: b.off(n), name: n.Name.String(), fn: fn, assignAt: -1})
			return
		case *ast.DotExpression:
			b.t.nodes = append(b.t.nodes, refNode{kind: refMember, start: b.off(n), at: int(n.Identifier.Idx) - b.base,
				name: n.Identifier.Name.String(), fn: fn, assignAt: b.assigned(n)})
			b.visit(reflect.ValueOf(n.Left), fn)
			return
		case *ast.BracketExpression:
			rn := refNode{kind: refMember, start: b.off(n), at: b.off(n.Member), fn: fn, computed: true, assignAt: b.assigned(n)}
			switch k := n.Member.(type) {
			case *ast.StringLiteral:
				rn.name, rn.computed = k.Value.String(), false
			case *ast.NumberLiteral:
				rn.name, rn.computed = k.Literal, false
			}
			b.t.nodes = append(b.t.nodes, rn)
		case *ast.CallExpression:
			b.callNode(n.Callee, n.RightParenthesis, n.ArgumentList, fn, -1)
		case *ast.NewExpression:
			b.point(b.off(n.Callee), fn)
			b.callNode(n.Callee, n.RightParenthesis, n.ArgumentList, fn, b.off(n))
		case *ast.AssignExpression:
			if b.assigns == nil {
				b.assigns = make(map[ast.Expression]bool)
			}
			b.assigns[n.Left] = true
		case *ast.ObjectPattern:
			at := b.off(n)
			if len(n.Properties) > 0 {
				at = b.off(n.Properties[0])
			}
			b.t.nodes = append(b.t.nodes, refNode{kind: refPattern, start: b.off(n), at: at, fn: fn, assignAt: -1})
		case *ast.BinaryExpression:
			switch n.Operator {
			case token.LOGICAL_AND, token.LOGICAL_OR, token.COALESCE, token.EXPONENT:
			default:
				b.point(b.off(n.Right), fn)
			}
		case *ast.ForOfStatement:
			b.point(b.off(n), fn)
			b.t.nodes = append(b.t.nodes, refNode{kind: refIter, start: b.off(n), at: place(n.Source, b.base), fn: fn, assignAt: -1})
		case *ast.SpreadElement:
			b.t.nodes = append(b.t.nodes, refNode{kind: refIter, start: b.off(n.Expression), at: place(n.Expression, b.base), fn: fn, assignAt: -1})
		case *ast.IfStatement:
			b.point(b.ifStart(n), fn)
		case *ast.ThrowStatement:
			b.point(b.off(n), fn)
			b.point(b.off(n.Argument), fn)
		case ast.Statement:
			switch n.(type) {
			case *ast.BlockStatement, *ast.EmptyStatement, *ast.FunctionDeclaration, *ast.TryStatement,
				*ast.BranchStatement, *ast.DebuggerStatement, *ast.BadStatement:
			default:
				b.point(b.off(n), fn)
			}
		}
		b.visit(v.Elem(), fn)
	case reflect.Interface:
		if !v.IsNil() {
			b.visit(v.Elem(), fn)
		}
	case reflect.Struct:
		for _, i := range plan(v.Type()) {
			b.visit(v.Field(i), fn)
		}
	case reflect.Slice:
		for i := range v.Len() {
			b.visit(v.Index(i), fn)
		}
	}
}

// callNode notes a call (or `new`): where the engine records it (its
// first argument, or its closing parenthesis when it has none; a marked
// call's last argument too) and where it is reported (its callee's name).
func (b *refBuilder) callNode(callee ast.Expression, rp file.Idx, args []ast.Expression, fn, newAt int) {
	site := place(callee, b.base)
	rn := refNode{kind: refCall, start: b.off(callee), at: site, fn: fn, rp: int(rp) - b.base, assignAt: -1}
	switch c := callee.(type) {
	case *ast.Identifier:
		rn.name = c.Name.String()
	case *ast.DotExpression:
		rn.name = c.Identifier.Name.String()
	}
	switch {
	case newAt >= 0:
		// The engine records `new` at its callee; V8 places it at the keyword.
		rn.at = newAt
		rn.points = append(rn.points, rn.start)
	case b.marked[site] && len(args) == 0:
		rn.points = append(rn.points, rn.start) // the mark's own call, before the callee
	}
	if len(args) == 0 {
		rn.points = append(rn.points, rn.rp)
	} else {
		rn.points = append(rn.points, b.off(args[0]))
		if b.marked[site] {
			last := args[len(args)-1]
			if s, ok := last.(*ast.SpreadElement); ok {
				last = s.Expression
			}
			rn.points = append(rn.points, b.off(last))
		}
	}
	for _, p := range rn.points {
		b.point(p, fn)
	}
	b.t.nodes = append(b.t.nodes, rn)
}

// ifStart is walker.ifStart's: the `if` keyword before the condition.
func (b *refBuilder) ifStart(n *ast.IfStatement) int {
	w := walker{src: b.src, base: b.base, limit: len(b.src)}
	return w.ifStart(n)
}
