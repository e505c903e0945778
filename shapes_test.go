package codemode

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shapeCases are the forms models write, each with the value a reader
// expects; every entry point takes them all (Cloudflare's normalizeCode
// cases among them, and realistic model answers).
var shapeCases = []struct {
	name, code, want string
}{
	// A function body: today's Run.
	{"body with return", "return 1 + 1", "2"},
	{"body with await", "const v = await Promise.resolve(5)\nreturn v", "5"},
	{"return alone", "return 42", "42"},
	// Statements ending in an expression return it.
	{"one expression", "1 + 2", "3"},
	{"statements then an expression", "const x = 10;\nx * 2", "20"},
	{"a string", `"42"`, `"42"`},
	{"an awaited expression", "await Promise.resolve(5)", "5"},
	{"a loop then the total", "let s = 0\nfor (const x of [1, 2, 3]) s += x\ns", "6"},
	{"a helper then its call", "function helper() { return 1; }\nhelper()", "1"},
	{"an arrow constant then its call", "const f = () => 2; f()", "2"},
	{"an IIFE", "(async () => { return 42; })()", "42"},
	{"a class then a call", "class A { m() { return 6 } }\nnew A().m()", "6"},
	{"a directive then an expression", "'use strict'; 5", "5"},
	{"a body starting with a parenthesis stays a body", "(function () { globalThis.z = 3 })(); return z", "3"},
	{"a return anywhere: as written", "if (1) { return 'early' }\n'late'", `"early"`},
	{"console.log last", "console.log('hi')", "null"},
	// Bodies ending in a declaration or a loop return null.
	{"a declaration", "const x = 42", "null"},
	{"a loop", "for (let i = 0; i < 10; i++) {}", "null"},
	{"an if", "if (true) { 1 }", "null"},
	{"declarations", "const a = 1;\nconst b = 2;", "null"},
	{"a labelled block", "label: { 1 }", "null"},
	{"empty", "", "null"},
	{"white space", "   \n\t  ", "null"},
	// A function or arrow expression is called.
	{"async arrow", "async () => { return 1; }", "1"},
	{"sync arrow", "() => { return 1; }", "1"},
	{"arrow with parameters", "async (a, b) => { return (a ?? 1) + (b ?? 2); }", "3"},
	{"concise arrow", "() => 42", "42"},
	{"arrow with a semicolon", "async () => { return 1; };", "1"},
	{"arrow in white space", "  () => 42  ", "42"},
	{"one-parameter arrow", "x => 5", "5"},
	{"async arrow returning an object", "async () => ({ ok: true })", `{"ok":true}`},
	{"arrow returning an object", "() => ({n: 1})", `{"n":1}`},
	{"parenthesised arrow returning an object", "(async () => ({ok: 1}))", `{"ok":1}`},
	{"arrow returning an object, a comment after", "() => ({n: 2}) // done", `{"n":2}`},
	{"parenthesised arrow", "/* c */ (async () => 3)", "3"},
	{"twice parenthesised", "((() => 4))", "4"},
	{"arrow between comments", "// the answer\nasync () => 9 // done", "9"},
	{"anonymous function", "function () { return 5 }", "5"},
	{"async function expression", "(async function () { return 8 })", "8"},
	// A lone named function declaration is called.
	{"named async function", "async function doStuff() { return 42; }", "42"},
	{"named sync function", "function compute() { return 1 + 2; }", "3"},
	{"named function and a semicolon", "function main() { return 1 };", "1"},
	{"main awaiting", "async function main() {\n  const r = await Promise.all([1, 2].map(async (x) => x * 10))\n  return r\n}", "[10,20]"},
	// export default.
	{"export default async arrow", "export default async () => { return 1; }", "1"},
	{"export default arrow", "export default () => { return 1; }", "1"},
	{"export default value", "export default 42", "42"},
	{"export default anonymous function", "export default function() { return 42; }", "42"},
	{"export default named function", "export default async function main() { return 'm' }", `"m"`},
	{"export default object", "export default { ok: true }", `{"ok":true}`},
	// An expression that is no statement.
	{"object literal", `{"a": 1, "b": [2]}`, `{"a":1,"b":[2]}`},
	// Markdown fences.
	{"js fence", "```js\nasync () => { return 1; }\n```", "1"},
	{"javascript fence", "```javascript\nconst x = 1;\nx + 2\n```", "3"},
	{"typescript fence", "```typescript\n() => 42\n```", "42"},
	{"ts fence", "```ts\n() => 42\n```", "42"},
	{"tsx fence", "```tsx\n() => 42\n```", "42"},
	{"jsx fence", "```jsx\n() => 42\n```", "42"},
	{"bare fence", "```\nasync () => { return 1; }\n```", "1"},
	{"fence and trailing white space", "```js\nasync () => { return 1; }\n```  ", "1"},
	{"fence left open", "```js\nasync () => { return 1; }", "1"},
	{"fence and export default", "```js\nexport default async () => { return 1; }\n```", "1"},
	{"fence and a named function", "```js\nasync function run() { return await Promise.resolve('r'); }\n```", `"r"`},
	{"fence with prose around it", "Here is the code:\n\n```js\nconst r = [1, 2, 3].map((x) => x * 2);\nr\n```\n\nThis doubles each number.", "[2,4,6]"},
	{"fence with a body", "```js\nconst a = await Promise.resolve(2)\nreturn a * 3\n```", "6"},
	{"fence lines inside a comment stay comment", "/* usage:\n```js\nx()\n```\n*/\nreturn 7", "7"},
	{"two fences: a helper, then its call", "Define it:\n```js\nfunction helper(x) { return x * 2 }\n```\nThen call it:\n```js\nhelper(21)\n```", "42"},
	{"a fence of another language between", "```js\nconst a = 40\n```\nwhich prints\n```json\n{\"a\": 40}\n```\nthen\n```js\nreturn a + 2\n```", "42"},
	// A directive prologue is the program's: strict code stays strict.
	{"use strict", "\"use strict\"; let threw = false; try { undeclared = 1 } catch { threw = true }; threw", "true"},
	{"use strict in a fence", "```js\n'use strict'\nreturn (function () { return this })() === undefined\n```", "true"},
}

func TestInputShapes(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	ctx := context.Background()
	require.GreaterOrEqual(t, len(shapeCases), 40)
	for _, tt := range shapeCases {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Run(ctx, tt.code)
			require.NoError(t, err, "Run(%q)", tt.code)
			assert.Equal(t, tt.want, string(res.Value), "Run(%q)", tt.code)
			assert.Equal(t, tt.want, result(t, e.Execute(ctx, Request{Code: tt.code})), "Execute(%q)", tt.code)
			// The bytecode cache serves the same value.
			res, err = e.Run(ctx, tt.code)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(res.Value), "Run(%q), cached", tt.code)
		})
	}
}

// TestInputShapePositions: errors point at the model's own lines and
// columns through every shape (the wrapping a shape needs is inserted,
// and mapped back).
func TestInputShapePositions(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	ctx := context.Background()
	tests := []struct {
		name, code string
		run, exec  string // Run's message, and Execute's (file program.js)
	}{
		{"statements", "const a = 1;\nnull.x",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:2:6)", ""},
		{"last expression", "const a = 1\n  a.b.c",
			"TypeError: cannot read property 'c' of undefined\n    at <anonymous> (script.js:2:7)", ""},
		{"arrow", "async () => {\n  null.x\n}",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:2:8)", ""},
		{"declaration", "async function main() {\n  null.x\n}",
			"TypeError: cannot read property 'x' of null\n    at main (script.js:2:8)", ""},
		{"export default", "export default async () => {\n  null.x\n}",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:2:8)", ""},
		{"anonymous function", "function () {\n  null.x\n}",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:2:8)", ""},
		{"fence with prose", "Here:\n```js\nconst a = 1\nnull.x\n```\nDone.",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:4:6)", ""},
		{"thrown in a fence", "```ts\nasync () => {\n  throw new Error('boom')\n}\n```",
			"Error: boom\n    at <anonymous> (script.js:3:13)", ""},
		{"syntax error in a fence", "Sure:\n```js\nconst x = ;\n```",
			"SyntaxError: unexpected token in expression: ';'\n    at script.js:3:11", ""},
		{"syntax error after export default", "export default async () => {\n  const = 1\n}",
			"SyntaxError: variable name expected\n    at script.js:2:9", ""},
		{"syntax error in a body", "let x = 1;\nlet y = ;",
			"SyntaxError: unexpected token in expression: ';'\n    at script.js:2:9", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Run(ctx, tt.code)
			var ee *ExecError
			require.ErrorAs(t, err, &ee, "Run(%q)", tt.code)
			assert.Equal(t, tt.run, ee.Message, "Run(%q)", tt.code)
			exec := tt.exec
			if exec == "" {
				exec = programMessage(tt.run)
			}
			assert.Equal(t, exec, e.Execute(ctx, Request{Code: tt.code}).Error, "Execute(%q)", tt.code)
		})
	}
}

// programMessage is Run's message as Execute words it: the file is
// program.js.
func programMessage(run string) string { return strings.ReplaceAll(run, "script.js", "program.js") }
