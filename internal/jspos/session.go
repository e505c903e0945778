package jspos

import (
	"strings"

	"github.com/dop251/goja/ast"
)

// A run in a session keeps what its body declares at its top level for
// the runs after it, as Node's REPL does with an input that awaits (the
// body of a run is an async function's: each input awaits in that sense).
// The body stays the async function's; its top-level declarations are
// hoisted out of it into the script's global scope, which the runs share:
//
//   - the names go into a declaration prologue, a global script the
//     engine instantiates before anything of the run runs: `let` for
//     `let`, `const` and `class` names, `var` for `var` and function
//     names. So a name declared again by a later run fails the run before
//     it starts, with the engine's own SyntaxError, exactly where a
//     second classic script would: `let`, `const` and `class` names
//     cannot be declared again, `var` and function names can (the later
//     one replaces the function);
//   - in the body, `let`, `const` and `var` declarations become
//     assignments to those bindings (the keyword becomes a `;`, a
//     destructuring pattern gets parentheses), a class declaration an
//     assignment of its class, and each function declaration stays where
//     it is (hoisted in the body, as it was) and is copied to the global
//     object as the body starts.
//
// As in Node's REPL, a `const` so declared can be assigned by a later
// run, and a name read before its declaration within the run reads
// undefined rather than throwing. Declarations below the top level (in a
// block, a loop's head, a nested function) stay the run's own, and so does
// everything of a body whose form is not Statements (an arrow or a value
// is called or returned, not declared).

// SessionBody is [Body] for a run in a session, and
// SessionStrictExpression [StrictExpression] for an Execute program in
// one: the top-level declarations of a body (a program written as
// statements) are hoisted into [Map.Globals].
const (
	SessionBody             Shape = 100
	SessionStrictExpression Shape = 101
)

// hoisting is what a session run's hoist makes of a body.
type hoisting struct {
	ins      []insertion
	keywords []int // offsets of declaration keywords to blank (a ';' then spaces)
	globals  string
}

// hoist finds a Statements body's top-level declarations.
func hoist(s shaped) hoisting {
	var h hoisting
	if s.root == nil {
		return h
	}
	fn, ok := s.root.(*ast.ArrowFunctionLiteral)
	if !ok {
		return h
	}
	body, ok := fn.Body.(*ast.BlockStatement)
	if !ok {
		return h
	}
	var lexical, vars []string
	seen := map[string]bool{}
	add := func(list *[]string, name string) {
		if !seen[name] {
			seen[name] = true
			*list = append(*list, name)
		}
	}
	first := -1 // where the body's statements begin, after its directives
	var copies strings.Builder
	directives := true
	for _, st := range body.List {
		if directives {
			if e, ok := st.(*ast.ExpressionStatement); ok {
				if _, ok := e.Expression.(*ast.StringLiteral); ok {
					continue
				}
			}
			if _, ok := st.(*ast.EmptyStatement); !ok {
				directives = false
				first = int(st.Idx0()) - s.base
			}
		}
		switch st := st.(type) {
		case *ast.VariableStatement:
			h.keywords = append(h.keywords, int(st.Var)-s.base)
			h.bindings(s, st.List, func(name string) { add(&vars, name) })
		case *ast.LexicalDeclaration:
			h.keywords = append(h.keywords, int(st.Idx)-s.base)
			h.bindings(s, st.List, func(name string) { add(&lexical, name) })
		case *ast.FunctionDeclaration:
			if st.Function.Name == nil {
				continue
			}
			name := st.Function.Name.Name.String()
			add(&vars, name)
			copies.WriteString("globalThis." + name + " = " + name + ";")
		case *ast.ClassDeclaration:
			if st.Class.Name == nil {
				continue
			}
			name := st.Class.Name.Name.String()
			add(&lexical, name)
			at := int(st.Class.Class) - s.base
			h.ins = append(h.ins, insertion{at: at, target: at, text: name + " = "})
			end := s.endOf(st)
			h.ins = append(h.ins, insertion{at: end, target: end, text: ";"})
		}
	}
	if copies.Len() > 0 && first >= 0 {
		h.ins = append(h.ins, insertion{at: first, target: first, text: copies.String()})
	}
	var g strings.Builder
	if len(lexical) > 0 {
		g.WriteString("let " + strings.Join(lexical, ", ") + ";")
	}
	if len(vars) > 0 {
		g.WriteString("var " + strings.Join(vars, ", ") + ";")
	}
	h.globals = g.String()
	return h
}

// bindings hoists a declaration's bindings: each name to declare, and a
// pattern's assignment in parentheses (an object pattern at a statement's
// start would be a block).
func (h *hoisting) bindings(s shaped, list []*ast.Binding, declare func(string)) {
	for _, b := range list {
		boundNames(b.Target, declare)
		switch b.Target.(type) {
		case *ast.ObjectPattern, *ast.ArrayPattern:
			if b.Initializer == nil {
				continue // not a declaration the parser accepts
			}
			at, end := int(b.Target.Idx0())-s.base, s.endOf(b.Initializer)
			h.ins = append(h.ins, insertion{at: at, target: at, text: "("}, insertion{at: end, target: end, text: ")"})
		}
	}
}

// boundNames calls f with each name a binding target declares.
func boundNames(t ast.Expression, f func(string)) {
	switch t := t.(type) {
	case *ast.Identifier:
		f(t.Name.String())
	case *ast.AssignExpression: // a default: `{a = 1}`, `[b = 2]`
		boundNames(t.Left, f)
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				f(p.Name.Name.String())
			case *ast.PropertyKeyed:
				boundNames(p.Value, f)
			}
		}
		if t.Rest != nil {
			boundNames(t.Rest, f)
		}
	case *ast.ArrayPattern:
		for _, e := range t.Elements {
			if e != nil {
				boundNames(e, f)
			}
		}
		if t.Rest != nil {
			boundNames(t.Rest, f)
		}
	}
}

// blankKeywords replaces each declaration keyword at the offsets with a
// ';' and spaces, as long as the keyword: the statement before it ends
// there (`f()\nlet [a] = b` must not become `f()[a] = b`).
func blankKeywords(code string, at []int) string {
	if len(at) == 0 {
		return code
	}
	b := []byte(code)
	for _, i := range at {
		n := 0
		switch {
		case strings.HasPrefix(code[i:], "const"):
			n = 5
		case strings.HasPrefix(code[i:], "let"), strings.HasPrefix(code[i:], "var"):
			n = 3
		}
		if n == 0 {
			continue
		}
		b[i] = ';'
		for k := 1; k < n; k++ {
			b[i+k] = ' '
		}
	}
	return string(b)
}

// Globals is the declaration prologue of a [SessionBody]: a global script
// that declares the body's top-level names ("" when it declares none).
func (m *Map) Globals() string { return m.globals }
