package codemode

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModules: host modules are importable by name, import each other,
// start fresh in every run, and nothing else loads.
func TestModules(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithModules(map[string]string{
		"helpers.js": `export function greet(name) { return 'hello, ' + name } export let count = 0; export function bump() { return ++count }`,
		"math.js":    `import { greet } from "helpers.js"; export const square = (x) => x * x; export const hi = greet('math')`,
		"lib/a.js":   `export { square } from "./b.js"`,
		"lib/b.js":   `export const square = (x) => x * x * 1`,
	}))
	ctx := context.Background()
	tests := []struct{ code, want string }{
		{`const { greet } = await import("helpers.js"); return greet("ada")`, `"hello, ada"`},
		{`const m = await import("math.js"); return [m.square(7), m.hi]`, `[49,"hello, math"]`},
		{`const h = await import("helpers.js"); return [h.bump(), h.bump()]`, `[1,2]`},
		{`const h = await import("helpers.js"); return h.bump()`, `1`}, // fresh in every run
		{`const { square } = await import("lib/a.js"); return square(3)`, `9`},
		{`try { await import("os") } catch (e) { return e.name + ': ' + e.message }`, `"ReferenceError: could not load module 'os'"`},
	}
	for _, tt := range tests {
		res, err := e.Run(ctx, tt.code)
		require.NoError(t, err, tt.code)
		assert.Equal(t, tt.want, string(res.Value), tt.code)
	}
	x := e.Execute(ctx, Request{Code: `async () => (await import("helpers.js")).greet("x")`})
	assert.Equal(t, `"hello, x"`, result(t, x))

	_, err := New(WithModules(map[string]string{"bad.js": "export const = 1"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `codemode: module "bad.js": SyntaxError`)
}
