package jspos

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dop251/goja/ast"
)

// AtName is the sandbox's global function that marks a call site: the
// instrumentation passes a marked call's last argument through it,
// __codemode_at(arg, K), or, for a call with no argument, puts
// (__codemode_at(K), root) in place of the callee's root. It records K as
// the site of the host call about to start and returns its first
// argument (undefined with one), so the call sees what it would have.
const AtName = "__codemode_at"

// Site is a call the instrumentation marked: a call of a global function,
// get_user(...), or of a global's method, store.get(...) (a capability's
// or a provider tool's, most likely), by its index K.
type Site struct {
	// Offset is the source offset that stands for the call: the method's
	// name (get in store.get), the computed key (store[k]), or the
	// function's name, as V8 places a call in a stack trace.
	Offset int
	// Callee is the call's callee as a host names what it called:
	// "get_user", "store.get", or "store.*" for a computed key that is not
	// a string literal.
	Callee string
}

// Sites are the calls the instrumentation marked, by index.
func (m *Map) Sites() []Site { return m.sites }

// Matches says whether the site is a call of the host function named
// name ("get_user", or "provider.tool").
func (s Site) Matches(name string) bool {
	if root, ok := strings.CutSuffix(s.Callee, ".*"); ok {
		return strings.HasPrefix(name, root+".")
	}
	return s.Callee == name
}

// builtin says which global names are the sandbox's own (set by the
// engine's package): calls of them and of their methods are never marked.
var builtin atomic.Pointer[func(name string) bool]

// SetBuiltins sets which global names are the sandbox's own: a call of
// one (Math.max, JSON.parse, console.log) is no host call, and is left
// unmarked.
func SetBuiltins(f func(name string) bool) { builtin.Store(&f) }

func isBuiltin(name string) bool {
	if strings.HasPrefix(name, "__codemode") {
		return true
	}
	if f := builtin.Load(); f != nil && *f != nil {
		return (*f)(name)
	}
	return false
}

// candidate is a call that may be a host call: its callee's root is an
// identifier, which is a global unless the source declares it.
type candidate struct {
	call *ast.CallExpression
	root string
	site Site
	// rootEnd is the source offset just past the callee's root
	// identifier, where a call with no argument closes its mark.
	rootStart, rootEnd int
}

// callSite notes a call whose callee is a global's name or a global's
// method: get_user(...), store.get(...), store["get"](...).
func (w *walker) callSite(n *ast.CallExpression) {
	root, ok := n.Callee.(*ast.Identifier)
	callee := ""
	switch c := n.Callee.(type) {
	case *ast.DotExpression:
		root, ok = c.Left.(*ast.Identifier)
		callee = "." + c.Identifier.Name.String()
	case *ast.BracketExpression:
		root, ok = c.Left.(*ast.Identifier)
		callee = ".*"
		if s, isString := c.Member.(*ast.StringLiteral); isString {
			callee = "." + s.Value.String()
		}
	}
	if !ok {
		return
	}
	c := candidate{call: n, root: root.Name.String(), rootStart: int(root.Idx) - w.base}
	c.rootEnd = c.rootStart + len(c.root)
	c.site = Site{Offset: place(n.Callee, w.base), Callee: c.root + callee}
	// A root written with an escape (\u0073tore) is longer than its name:
	// the mark's closing parenthesis would land inside it.
	if c.rootStart < 0 || c.rootEnd > w.limit || w.src[c.rootStart:c.rootEnd] != c.root {
		return
	}
	w.calls = append(w.calls, c)
}

// bind notes the names a binding target declares.
func (w *walker) bind(t ast.Node) {
	switch t := t.(type) {
	case *ast.Identifier:
		if t != nil {
			w.declare(t.Name.String())
		}
	case *ast.ObjectPattern:
		if t == nil {
			return
		}
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				w.declare(p.Name.Name.String())
			case *ast.PropertyKeyed:
				w.bind(p.Value)
			}
		}
		w.bind(t.Rest)
	case *ast.ArrayPattern:
		if t == nil {
			return
		}
		for _, e := range t.Elements {
			w.bind(e)
		}
		w.bind(t.Rest)
	case *ast.AssignExpression:
		if t != nil {
			w.bind(t.Left)
		}
	}
}

// declare notes a name the source declares (the set is made on the first).
func (w *walker) declare(name string) {
	if w.declared == nil {
		w.declared = make(map[string]bool)
	}
	w.declared[name] = true
}

// marks turns the calls of globals the source does not declare into
// sites: their insertions, and the sites by index.
func (w *walker) marks() []Site {
	var sites []Site
	for _, c := range w.calls {
		if w.declared[c.root] || isBuiltin(c.root) {
			continue
		}
		k := strconv.Itoa(len(sites))
		args := c.call.ArgumentList
		if len(args) == 0 {
			w.ins = append(w.ins,
				insertion{at: c.rootStart, target: c.rootStart, text: "(" + AtName + "(" + k + "),", keep: true},
				insertion{at: c.rootEnd, target: c.rootEnd, text: ")", keep: true})
		} else {
			from, to, ok := w.lastArgument(c.call)
			if !ok {
				continue
			}
			w.ins = append(w.ins,
				insertion{at: from, target: from, text: AtName + "(", keep: true},
				insertion{at: to, target: to, text: "," + k + ")", keep: true})
		}
		sites = append(sites, c.site)
	}
	return sites
}

// lastArgument is the extent of a call's last argument: the parser's,
// when the text around it says it is the argument's whole text. The
// parser's extents leave parentheses out (of (b), and of a + (b) at its
// end): a mark around such an extent would change what the call gets, so
// a call whose last argument has a parenthesis at either edge, or
// anything but white space, comments and a trailing comma between it and
// the closing parenthesis, is not marked.
func (w *walker) lastArgument(call *ast.CallExpression) (from, to int, ok bool) {
	last := call.ArgumentList[len(call.ArgumentList)-1]
	if s, isSpread := last.(*ast.SpreadElement); isSpread {
		last = s.Expression
	}
	lp, rp := int(call.LeftParenthesis)-w.base, int(call.RightParenthesis)-w.base
	from, to = w.offset(last), int(last.Idx1())-w.base
	if lp < 0 || rp >= w.limit || from <= lp || to > rp || from >= to || w.src[rp] != ')' {
		return 0, 0, false
	}
	// Before it: white space back to the call's parenthesis, a comma or a
	// spread's dots.
	j := from - 1
	for j > lp && isSpace(w.src[j]) {
		j--
	}
	if c := w.src[j]; j != lp && c != ',' && c != '.' {
		return 0, 0, false
	}
	// After it: white space, comments and one comma, up to the call's
	// closing parenthesis.
	comma := false
	for i := to; i < rp; {
		switch c := w.src[i]; {
		case isSpace(c):
			i++
		case c == ',' && !comma:
			comma = true
			i++
		case c == '/' && i+1 < rp && w.src[i+1] == '/':
			nl := strings.IndexByte(w.src[i:rp], '\n')
			if nl < 0 {
				return 0, 0, false
			}
			i += nl
		case c == '/' && i+1 < rp && w.src[i+1] == '*':
			end := strings.Index(w.src[i+2:rp], "*/")
			if end < 0 {
				return 0, 0, false
			}
			i += end + 4
		default:
			return 0, 0, false
		}
	}
	return from, to, true
}
