package codemode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/jspos"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorPositions: every position a model reads is a line and column
// of its own source: never inside the wrapper, never past its last line,
// and at the expression that failed (the property read, the name), though
// the engine records a position only at statements, calls and operators.
func TestErrorPositions(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}))
	tests := []struct {
		name, script, want string
	}{
		// Syntax errors: start, middle, end; constructs left open.
		{"at the start", "}", "SyntaxError: Unexpected token '}'\n    at script.js:1:1"},
		{"first line", "const x = = 1", "SyntaxError: unexpected token in expression: '='\n    at script.js:1:11"},
		{"middle", "let x = 1;\nlet y = ;\nreturn y", "SyntaxError: unexpected token in expression: ';'\n    at script.js:2:9"},
		{"a statement left open", "const a = 1\nconst b = [1, 2\nreturn a", "SyntaxError: Unexpected token 'return'\n    at script.js:3:1"},
		{"an object at the end", "return {", "SyntaxError: unexpected end of input\n    at script.js:1:9"},
		{"an operator at the end", "const a = 1\nconst b = 2\nreturn a +", "SyntaxError: unexpected end of input\n    at script.js:3:11"},
		{"trailing blank lines", "return 1 +\n\n", "SyntaxError: unexpected end of input\n    at script.js:1:11"},
		{"a block left open", "if (x) {\n  return 1\n", "SyntaxError: unexpected end of input\n    at script.js:2:11"},
		{"unterminated string", "return 'abc\nconst z = 1", "SyntaxError: unexpected end of string\n    at script.js:1:8"},
		{"unterminated template", "const s = `line one\nline two", "SyntaxError: unexpected end of string\n    at script.js:2:9"},
		{"unterminated comment", "return 1 /* open", "SyntaxError: unexpected end of comment\n    at script.js:1:17"},
		{"a stray brace", "function f() {\n  if (true) {\n    return 1\n  }\n}\n}\nreturn f()",
			"SyntaxError: Unexpected token '}'\n    at script.js:6:1"},
		{"escaping the wrapper", "}); (async () => {", "SyntaxError: Unexpected token '}'\n    at script.js:1:1"},
		{"bad bytes", "return 1 \xff\xfe", "SyntaxError: invalid UTF-8 sequence\n    at script.js:1:10"},
		// Thrown errors.
		{"after a log line", "const u = {}\nconsole.log('x')\nreturn u.address.city",
			"TypeError: cannot read property 'city' of undefined\n    at <anonymous> (script.js:3:18)"},
		{"a declaration", "await null\nconst u = {}\nconst v = u.a.b\nreturn v",
			"TypeError: cannot read property 'b' of undefined\n    at <anonymous> (script.js:3:15)"},
		{"an if condition", "const m = new Map()\nm.set('a', 1)\nconst v = m.get('b')\nif (v.ok) {\n  return 1\n}",
			"TypeError: cannot read property 'ok' of undefined\n    at <anonymous> (script.js:4:7)"},
		{"the last line", "const data = {items: []}\nconsole.log('loaded')\nreturn data.items[0].name",
			"TypeError: cannot read property 'name' of undefined\n    at <anonymous> (script.js:3:22)"},
		{"a nested function", "const f = () => {\n  return null.x\n}\nreturn f()",
			"TypeError: cannot read property 'x' of null\n    at f (script.js:2:15)\n    at <anonymous> (script.js:4:8)"},
		{"a callback", "const rows = [{a: 1}, {}]\nreturn rows.map(function (r) {\n  const v = r.a\n  return v.toFixed(1)\n})",
			"TypeError: cannot read property 'toFixed' of undefined\n    at <anonymous> (script.js:4:12)\n    at map (native)\n    at <anonymous> (script.js:2:13)"},
		{"an async function", "async function load() {\n  await null\n  const cfg = undefined\n  return cfg.url\n}\nreturn await load()",
			"TypeError: cannot read property 'url' of undefined\n    at load (script.js:4:14)"},
		{"a timer's callback", "await new Promise((resolve, reject) => setTimeout(() => {\n  try { null.x } catch (e) { reject(e) }\n}, 1))",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:2:14)"},
		{"a loop's later iteration", "let total = 0\nconst xs = [1, 2, null]\nfor (let i = 0; i < xs.length; i++) {\n  total += xs[i].valueOf()\n}\nreturn total",
			"TypeError: cannot read property 'valueOf' of null\n    at <anonymous> (script.js:4:18)"},
		{"a switch case", "switch (1) {\n  case 1:\n    const q = null\n    return q.z\n}",
			"TypeError: cannot read property 'z' of null\n    at <anonymous> (script.js:4:14)"},
		{"a getter", "class A {\n  constructor() {\n    this.x = null\n  }\n  get y() {\n    return this.x.y\n  }\n}\nreturn new A().y",
			"TypeError: cannot read property 'y' of null\n    at get y (script.js:6:19)\n    at <anonymous> (script.js:9:12)"},
		{"non-ASCII before it", "const é = 'ü'\nconst n = null\nreturn é + n.p",
			"TypeError: cannot read property 'p' of null\n    at <anonymous> (script.js:3:14)"},
		{"rethrown", "try {\n  null.f()\n} catch (e) {\n  throw e\n}",
			"TypeError: cannot read property 'f' of null\n    at <anonymous> (script.js:2:8)"},
		{"for await", "for await (const x of []) {}\nconst u = {}\nreturn u.a.b",
			"TypeError: cannot read property 'b' of undefined\n    at <anonymous> (script.js:3:12)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := e.Run(context.Background(), tt.script)
			assert.Equal(t, tt.want, execErr(t, err).Message, "Run(%q)", tt.script)
			// Twice: the second run comes from cached bytecode.
			_, err = e.Run(context.Background(), tt.script)
			assert.Equal(t, tt.want, execErr(t, err).Message, "Run(%q) from the cache", tt.script)
		})
	}
}

// TestLoggedPositions: a stack the script prints points into its source
// too, without the wrapper's frame; an uncaught error in a timer is logged
// with its position.
func TestLoggedPositions(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}))
	res, err := e.Run(context.Background(), "try {\n  null.x\n} catch (e) {\n  console.log(e.stack)\n}\n"+
		"setTimeout(() => {\n  undefined.y\n}, 1)\nawait new Promise(r => setTimeout(r, 20))\nreturn 'done'")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"    at <anonymous> (script.js:2:3)\n",
		"[error] Uncaught TypeError: cannot read property 'y' of undefined\n    at <anonymous> (script.js:7:3)",
	}, res.Logs)
}

// TestToolAndProgramPositions: tools and Execute programs read the same.
func TestToolAndProgramPositions(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}))
	ctx := context.Background()
	for _, tt := range []struct{ source, want string }{
		{"(args) => {\n  const u = args.user\n  return u.name\n}", "TypeError: cannot read property 'name' of undefined\n    at <anonymous> (tool.js:3:12)"},
		{"function tool(args) {\n  return args.x.y\n}", "TypeError: cannot read property 'y' of undefined\n    at tool (tool.js:2:17)"},
	} {
		e.Deregister("t")
		_, err := e.Register(ctx, ToolSource{Name: "t", Source: tt.source})
		require.NoError(t, err)
		_, err = e.Call(ctx, "t", json.RawMessage(`{}`))
		assert.Equal(t, tt.want, execErr(t, err).Message, "Call of %q", tt.source)
	}
	for _, tt := range []struct{ source, want string }{
		{"(args) => {\n  return [\n", "SyntaxError: unexpected end of input\n    at tool.js:2:11"},
		{"(args) => 1)", "SyntaxError: Unexpected token )\n    at tool.js:1:12"},
	} {
		_, err := e.Register(ctx, ToolSource{Name: "bad", Source: tt.source})
		assert.Equal(t, tt.want, registerErr(t, err).Message, "Register of %q", tt.source)
	}
	dispatch := func(context.Context, string, string, string) (string, error) { return `{"result":{}}`, nil }
	for _, tt := range []struct{ code, want string }{
		{"async () => {\n  const r = await store.get()\n  return r.items.length\n}",
			"TypeError: cannot read property 'length' of undefined\n    at <anonymous> (program.js:3:18)"},
		{"async () => {\n  return [\n", "SyntaxError: unexpected end of input\n    at program.js:2:11"},
		{"async () => {\n  const x = 1\n  x = 2\n}", "TypeError: 'x' is read-only\n    at <anonymous> (program.js:3:3)"},
	} {
		res := e.Execute(ctx, Request{Code: tt.code, Providers: []Provider{{Name: "store"}}, Dispatch: dispatch})
		assert.Equal(t, tt.want, res.Error, "Execute(%q)", tt.code)
	}
}

// TestMarkersKeepMeaning: the instrumented script means what the source
// meant: directives, ASI, labels, loops, completion values of blocks.
func TestMarkersKeepMeaning(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	tests := []struct{ script, want string }{
		{"function f() { 'use strict'; return this }\nreturn f() === undefined", "true"},
		{"'use strict'\nlet threw = false\ntry { undeclared = 1 } catch { threw = true }\nreturn threw", "true"},
		{"let a = 1\nlet b = a\n;[b] = [2]\nreturn [a, b]", "[1,2]"},
		{"const f = (x) => x * 2\nconst g = f\n(3)\nreturn g", "6"},
		{"let n = 0\nouter: for (let i = 0; i < 3; i++) {\n  for (let j = 0; j < 3; j++) {\n    if (j == 1) continue outer\n    n++\n  }\n}\nreturn n", "3"},
		{"let i = 0\ndo { i++ } while (i < 5)\nreturn i", "5"},
		{"let s = ''\nfor (const k in {a: 1, b: 2}) { s += k }\nreturn s", `"ab"`},
		{"switch (2) {\n  case 1: return 'one'\n  case 2:\n  case 3: return 'two or three'\n}", `"two or three"`},
		{"return eval('1; if (true) { 2 }')", "2"},
		{"class A { static n = 1; static { A.n++ } }\nreturn A.n", "2"},
		{"return (function f() { return 1 }).toString()", `"function f() { return 1 }"`}, // the markers are not the model's
		{"const g = () => {\n  const x = 1\n  return x\n}\nreturn String(g) + Function.prototype.toString.call(g).length", `"() => {\n  const x = 1\n  return x\n}34"`},
		{"return Function.prototype.toString.call(Math.max)", `"function max() {\n    [native code]\n}"`},
		{"const re = /0;/\nreturn '0;x'.replace(re, '')", `"x"`},
		{"return `a\n${1 + 1}\nb`", `"a\n2\nb"`},
		{"let x = 5\nif (x > 3)\n  x = 1\nelse\n  x = 2\nreturn x", "1"},
		{"var v = 1\n{ var v = 2 }\nreturn v", "2"},
	}
	for _, tt := range tests {
		res, err := e.Run(context.Background(), tt.script)
		require.NoError(t, err, "Run(%q)", tt.script)
		assert.Equal(t, tt.want, string(res.Value), "Run(%q)", tt.script)
	}
	// The golden corpus (TestRunGolden checks its values) runs instrumented.
	files, err := filepath.Glob("testdata/golden/*.js")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		m := jspos.Instrument(string(src), jspos.Body)
		assert.Nil(t, m.SyntaxError(), f)
		assert.Positive(t, m.Markers(), f)
	}
}

// TestImportDeclarationsSayWhy: a program is a script; an import
// declaration is refused with what is true of the sandbox's modules (none
// but the host's), at the declaration, not with a parser's complaint about
// what follows it.
func TestImportDeclarationsSayWhy(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithModules(map[string]string{"helpers.js": "export const two = 2"}))
	ctx := context.Background()
	_, err := e.Run(ctx, "const a = 1\nimport fs from 'fs'\nreturn fs.readFileSync('/etc/passwd')")
	assert.Equal(t, `SyntaxError: import declarations are not available: the program runs as a script, not a module, and "fs" is no module the sandbox has (it has no Node.js, filesystem or network API: the tools are the program's globals); its only modules are the host's, loaded with await import(name): "helpers.js"`+
		"\n    at script.js:2:1", execErr(t, err).Message)
	_, err = e.Run(ctx, "import { two } from \"helpers.js\"\nreturn two")
	assert.Equal(t, `SyntaxError: import declarations are not available: the program runs as a script, not a module; load the host's module with const m = await import("helpers.js")`+
		"\n    at script.js:1:1", execErr(t, err).Message)
	res := e.Execute(ctx, Request{Code: "import fs from 'fs'\nasync () => 1"})
	assert.Contains(t, res.Error, `"fs" is no module the sandbox has`)
	// What the message says works.
	r, err := e.Run(ctx, "const { two } = await import('helpers.js'); return two")
	require.NoError(t, err)
	assert.Equal(t, "2", string(r.Value))
}

// TestStrictDirective: a program's "use strict" makes it strict code (the
// wrapper's own block once made the directive a plain string).
func TestStrictDirective(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	_, err := e.Run(context.Background(), `"use strict"; x = 1; return typeof x`)
	assert.Equal(t, "ReferenceError: x is not defined\n    at <anonymous> (script.js:1:15)", execErr(t, err).Message)
	res, err := e.Run(context.Background(), `x = 1; return typeof x`)
	require.NoError(t, err)
	assert.Equal(t, `"number"`, string(res.Value), "sloppy without it")
}
