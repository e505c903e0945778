package jspos

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSites: calls of a global's name or a global's method are marked
// (their last argument passes through the mark, or the callee's root, for
// a call with none) and listed where the call stands, by index; names the
// source declares, and builtins, are not.
func TestSites(t *testing.T) {
	SetBuiltins(func(name string) bool { return name == "Math" || name == "console" })
	t.Cleanup(func() { SetBuiltins(nil) })
	for _, tt := range []struct {
		name, src, out string
		sites          []Site
	}{
		{"two calls of one tool", "const a = await store.get({id: 1});\nconst b = await store.get({id: 2});\nreturn {a, b};",
			"0;const a = await store.get(__codemode_at({id: 1},0));\n0;const b = await store.get(__codemode_at({id: 2},1));\n0;return {a, b};",
			[]Site{{22, "store.get"}, {58, "store.get"}}},
		{"no argument", "return get_user()", "0;return (__codemode_at(0),get_user)()", []Site{{7, "get_user"}}},
		{"declared names are not globals", "const store = {get(){}}; function f({g}, ...r) {}; return store.get(1) + f() + g() + r()",
			"0;const store = {get(){}}; function f({g}, ...r) {}; 0;return store.get(1) + f() + g() + r()", nil},
		{"builtins, nested and spread", "return Math.max(1, store.list(), x.y(...zs))",
			"0;return Math.max(1, (__codemode_at(0),store).list(), x.y(...__codemode_at(zs,1)))",
			[]Site{{25, "store.list"}, {35, "x.y"}}},
		{"string and computed keys", "return [store['get'](a, b,), store[k](c)]",
			"0;return [store['get'](a, __codemode_at(b,0),), store[k](__codemode_at(c,1))]",
			[]Site{{14, "store.get"}, {35, "store.*"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := Instrument(tt.src, Body)
			assert.Equal(t, tt.out, m.Source())
			assert.Equal(t, tt.sites, m.Sites())
		})
	}
}

func TestSiteMatches(t *testing.T) {
	assert.True(t, Site{Callee: "store.get"}.Matches("store.get"))
	assert.False(t, Site{Callee: "store.get"}.Matches("store.put"))
	assert.True(t, Site{Callee: "store.*"}.Matches("store.put"))
	assert.False(t, Site{Callee: "store.*"}.Matches("other.put"))
	assert.True(t, Site{Callee: "get_user"}.Matches("get_user"))
}

// TestRefine: an engine position (where it last recorded one) moves to the
// expression the message names when exactly one lies within reach.
func TestRefine(t *testing.T) {
	for _, tt := range []struct {
		name, src, msg string
		off, want      int
	}{
		{"the property read", "const a = {};\n  return a.nope.deeper;", "TypeError: cannot read property 'deeper' of undefined", 16, 30},
		{"the name not defined", "return foo(1, 2)", "ReferenceError: foo is not defined", 0, 7},
		{"not a function: the callee", "const o = {}; return o.foo(1);", "TypeError: not a function", 27, 23},
		{"the property written", "const o={}; o.x.y = 3; return 1", "TypeError: cannot set property 'y' of undefined", 12, 18}, // at "=", as V8
		{"what for-of iterates", "const o = {}; for (const x of o.list) {} return 1",
			"TypeError: cannot read property 'Symbol.iterator' of undefined", 14, 32}, // at "list", as V8
		{"after a binary operator", "const a = {}; return a.b.c + a.x.c", "TypeError: cannot read property 'c' of undefined", 29, 33},
		{"before it", "const a = {}; return a.b.c + a.x.c", "TypeError: cannot read property 'c' of undefined", 14, 25},
		{"two candidates: stays", "const a = {}; const f = () => 1; return f(a.x.y, a.x.y)",
			"TypeError: cannot read property 'y' of undefined", 42, 42},
		{"a pattern of nothing", "let u; const {a, b} = u; return a", "TypeError: Cannot convert undefined or null to object", 7, 14},
		{"new: its keyword", "const o = {}; return new o.f()", "TypeError: not a function", 25, 21},
		{"another function's: stays", "const f = (o) => o.q.r; return f({})", "TypeError: cannot read property 'r' of undefined", 24, 24},
		{"an unknown message: stays", "return a.b", "Error: boom", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Instrument(tt.src, Body).Refine(tt.off, tt.msg))
		})
	}
	// A frame below the top is at the call it made: its callee's name.
	m := Instrument("function f(o){ return o.x.y }\nreturn f({});", Body)
	assert.Equal(t, 37, m.CallAt(39, "f"))
	assert.Equal(t, 39, m.CallAt(39, "g"), "a call of another function is not the frame's")
	// A source that does not parse is left as it is.
	assert.Equal(t, 3, Instrument("return (", Body).Refine(3, "ReferenceError: x is not defined"))
}

// TestSiteExtents: the mark holds the last argument's whole text; where
// the parser's extent may leave a parenthesis out, the call is not marked,
// so the call gets the value it got before.
func TestSiteExtents(t *testing.T) {
	for _, tt := range []struct{ src, out string }{
		{"return f(a + (b))", "0;return f(a + (b))"},
		{"return f(a, (b))", "0;return f(a, (b))"},
		{"return f(x => (x))", "0;return f(x => (x))"},
		{"return f(x => g(x))", "0;return f(__codemode_at(x => g(__codemode_at(x,1)),0))"},
		{"return f(a, ...xs )", "0;return f(a, ...__codemode_at(xs,0) )"},
		{"return f(a, ...(xs))", "0;return f(a, ...(xs))"},
		{"return f(a, b,\n)", "0;return f(a, __codemode_at(b,0),\n)"},
		{"return f(a // last\n)", "0;return f(__codemode_at(a,0) // last\n)"},
		{"return f(a /* c */)", "0;return f(__codemode_at(a,0) /* c */)"},
		{"return f(/x/)", "0;return f(__codemode_at(/x/,0))"},
		{"return f(`a${(b)}`)", "0;return f(__codemode_at(`a${(b)}`,0))"},
	} {
		assert.Equal(t, tt.out, Instrument(tt.src, Body).Source(), tt.src)
	}
}

// TestRefineArrowBody: an error in an arrow whose body is an expression,
// which the engine reports at the start of the arrow's line, is placed in
// that body when one expression there matches.
func TestRefineArrowBody(t *testing.T) {
	src := "const q = 1\nconst g = [1].map((x) => x.y.z)\nreturn g"
	m := Instrument(src, Body)
	assert.Equal(t, strings.Index(src, "z)"), m.Refine(12, "TypeError: cannot read property 'z' of undefined"))
	// Two arrows on the line that could have thrown: it stays.
	src = "const g = [1].map((x) => x.z).map((y) => y.z)"
	assert.Equal(t, 0, Instrument(src, Body).Refine(0, "TypeError: cannot read property 'z' of undefined"))
}
