package typescript_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/hostile"
	"github.com/codemode-go/codemode/typescript"
)

func executor(t testing.TB, opts ...codemode.Option) *codemode.Executor {
	t.Helper()
	e, err := codemode.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// TestTypeScript: what models write in TypeScript runs through Run and
// Execute with the value a reader expects.
func TestTypeScript(t *testing.T) {
	t.Parallel()
	e := executor(t)
	ctx := context.Background()
	tests := []struct{ name, code, want string }{
		{"annotated constant", "const value: number = 7;\nvalue", "7"},
		{"interface", "interface User { name: string; age?: number }\nconst u: User = { name: 'a' };\nreturn u.name", `"a"`},
		{"type alias and generics", "type Pair<T> = [T, T];\nfunction swap<T>(p: Pair<T>): Pair<T> { return [p[1], p[0]] }\nswap<number>([1, 2])", "[2,1]"},
		{"as and satisfies", "const x = (JSON.parse('3') as number) + 1;\nconst cfg = { a: 1 } satisfies Record<string, number>;\nx + cfg.a", "5"},
		{"non-null", "const m = new Map<string, number>([['k', 4]]);\nreturn m.get('k')! * 2", "8"},
		{"declare", "declare const host: unknown;\n1", "1"},
		{"optional parameters", "function f(a: number, b?: number): number { return a + (b ?? 10) }\nf(1)", "11"},
		{"access modifiers", "class P { constructor(private readonly x: number, public y = 2) {} sum(): number { return this.x + this.y } }\nnew P(1).sum()", "3"},
		{"import type", "import type { Foo } from './foo';\nconst n: Foo | number = 6;\nn", "6"},
		{"enum", "enum Color { Red, Green = 5 }\nreturn [Color.Red, Color.Green, Color[5]]", `[0,5,"Green"]`},
		{"namespace", "namespace NS { export const k = 9 }\nNS.k", "9"},
		{"typed arrow", "async (): Promise<number> => { const r: number[] = [1, 2]; return r.length }", "2"},
		{"typed main", "async function main(): Promise<string> { return 'ok' }", `"ok"`},
		{"export default typed arrow", "export default async (): Promise<number> => 1", "1"},
		{"ts fence with prose", "Here you go:\n```ts\nconst total: number = [1, 2, 3].reduce((a: number, b: number) => a + b, 0);\ntotal\n```\nIt sums them.", "6"},
		{"top-level await", "const v: number = await Promise.resolve(41);\nreturn v + 1", "42"},
		// Type-only imports and exports are erased, and the program runs
		// as the script it is (top-level return and all).
		{"import type and return", "import type { Foo } from \"./foo\"\nconst x: Foo = 1\nreturn x", "1"},
		{"import type default, star, multiline", "import type Foo from './foo';\nimport type * as NS from \"./ns\" with { type: \"json\" };\n" +
			"import type {\n  A, // the first\n  B as C,\n} from './ab'\nconst n: Foo | A | C | NS.T = 2;\nreturn n", "2"},
		{"import of types only", "import { type A, type B as BB } from './ab'\nconst a: A | BB = 3\nreturn a", "3"},
		{"export type and interface", "export type Row = { id: number }\nexport interface Page { rows: Row[] }\n" +
			"export type { Row as R2 };\nconst p: Page = { rows: [{ id: 4 }] };\nreturn p.rows[0].id", "4"},
		{"import type and await", "import type { Foo } from './foo'\nconst v: Foo = await Promise.resolve(5);\nreturn v", "5"},
		{"import type after code", "const a: number = 1\nimport type { Foo } from './foo'\nreturn a + 5", "6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Run(ctx, tt.code)
			require.NoError(t, err, "Run(%q)", tt.code)
			assert.Equal(t, tt.want, string(res.Value), "Run(%q)", tt.code)
			x := e.Execute(ctx, codemode.Request{Code: tt.code})
			assert.Empty(t, x.Error, "Execute(%q)", tt.code)
			assert.Equal(t, tt.want, string(x.Result), "Execute(%q)", tt.code)
		})
	}
}

// TestTypeScriptPositions: errors point at the TypeScript source: where
// its JavaScript (the same code without the types, on the same lines)
// reports them, at the expression that threw in the TypeScript's own
// columns, or where the TypeScript parser stopped.
func TestTypeScriptPositions(t *testing.T) {
	t.Parallel()
	e := executor(t)
	ctx := context.Background()
	tests := []struct{ name, code, js, want string }{
		{"a syntax error after a type", "const a: number = 1;\nconst x: number = ;", "",
			"SyntaxError: Unexpected \";\"\n    at script.js:2:19"},
		{"a syntax error in a fence", "```ts\nlet s: string = 'a'\nif (s ==) {}\n```", "",
			"SyntaxError: Unexpected \")\"\n    at script.js:3:9"},
		{"a thrown error", "interface A { x: number }\nconst a: A = { x: 1 };\nthrow new Error('at ' + a.x)",
			"\nconst a = { x: 1 };\nthrow new Error('at ' + a.x)", ""},
		{"a type error in a function", "function f(o: { x: number } | null): number {\n  return o!.x\n}\nf(null)", "",
			"TypeError: cannot read property 'x' of null\n    at f (script.js:2:13)\n    at <anonymous> (script.js:4:1)"},
		{"after top-level await", "const v: number = await Promise.resolve(1);\nreturn (null as any).x", "",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:2:22)"},
		{"after an erased import", "import type { Ü, \"😀\" as E } from './foo'; const u: Ü = 1; return (null as any).x", "",
			"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:1:80)"},
		{"a syntax error after an erased import", "import type { A } from './a'; const a: number = ;\nreturn 1", "",
			"SyntaxError: Unexpected \";\"\n    at script.js:1:49"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if tt.js != "" {
				_, err := e.Run(ctx, tt.js)
				var je *codemode.ExecError
				require.ErrorAs(t, err, &je, "Run(%q)", tt.js)
				want = je.Message
			}
			_, err := e.Run(ctx, tt.code)
			var ee *codemode.ExecError
			require.ErrorAs(t, err, &ee, "Run(%q)", tt.code)
			assert.Equal(t, want, ee.Message, "Run(%q)", tt.code)
		})
	}
}

// TestValueImportsRefused: an import that is not type-only is not
// erased: the program is a script, with no module to load.
func TestValueImportsRefused(t *testing.T) {
	t.Parallel()
	e := executor(t)
	for _, code := range []string{
		"import { readFile } from 'fs'\nconst s: string = readFile('x')\nreturn s",
		"import { type A, b } from './ab'\nconst a: A = b\nreturn a",
		"import type from './t'\nconst a: number = 1\nreturn a",
		"import * as fs from 'fs'\nconst a: number = 1\nreturn a",
	} {
		_, err := e.Run(context.Background(), code)
		var ee *codemode.ExecError
		require.ErrorAs(t, err, &ee, "Run(%q)", code)
		assert.Equal(t, codemode.KindJS, ee.Kind, "Run(%q): %s", code, ee.LLMJSON())
	}
}

// TestJavaScriptUntouched: JavaScript never reaches the stripper, and an
// executor with TypeScript off refuses TypeScript.
func TestJavaScriptUntouched(t *testing.T) {
	t.Parallel()
	counting := &countingStripper{}
	e := executor(t, codemode.WithTypeScript(counting))
	ctx := context.Background()
	for _, js := range []string{"return 1", "1 + 2", "async () => 3", "```js\nconst a = 1\na\n```"} {
		_, err := e.Run(ctx, js)
		require.NoError(t, err)
	}
	assert.Zero(t, counting.n, "JavaScript is never stripped")
	res, err := e.Run(ctx, "const n: number = 2; n")
	require.NoError(t, err)
	assert.Equal(t, "2", string(res.Value))
	assert.Equal(t, 1, counting.n)

	off := executor(t, codemode.WithTypeScript(nil))
	_, err = off.Run(ctx, "const n: number = 2; n")
	var ee *codemode.ExecError
	require.ErrorAs(t, err, &ee)
	assert.True(t, strings.HasPrefix(ee.Message, "SyntaxError: "), ee.Message)
}

type countingStripper struct {
	typescript.Stripper
	n int
}

func (c *countingStripper) Strip(src string) (string, func(int, int) (int, int), error) {
	c.n++
	return c.Stripper.Strip(src)
}

// tsScript is a 50-line TypeScript script, made new per call by a comment.
func tsScript(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// run %d\ninterface Item { id: number; name: string; tags?: string[] }\n", n)
	b.WriteString("type Summary = { count: number; names: string[] };\n")
	for i := range 44 {
		fmt.Fprintf(&b, "const v%d: number = %d as number;\n", i, i)
	}
	b.WriteString("const items: Item[] = [{ id: 1, name: 'a' }, { id: 2, name: 'b', tags: ['x'] }];\n")
	b.WriteString("const s: Summary = { count: items.length, names: items.map((i: Item): string => i.name) };\n")
	b.WriteString("s\n")
	return b.String()
}

// BenchmarkTypeScript: a 50-line TypeScript script, cold (a new source
// each time: esbuild, then the compile) and cached (its bytecode).
func BenchmarkTypeScript(b *testing.B) {
	e := executor(b)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			if _, err := e.Run(ctx, tsScript(n)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		src := tsScript(-1)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Run(ctx, src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strip", func(b *testing.B) {
		src := tsScript(-1)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := (typescript.Stripper{}).Strip(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCodeModeTool: the tool takes TypeScript, and says so.
func TestCodeModeTool(t *testing.T) {
	t.Parallel()
	tool, err := codemode.NewCodeModeTool(nil, codemode.Limits{})
	require.NoError(t, err)
	defer tool.Close()
	assert.Contains(t, tool.Description(), "JavaScript or TypeScript")
	out, err := tool.Call(context.Background(), []byte(`{"code":"const n: number = 2;\nn * 21"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"result":42}`, string(out))

	off, err := codemode.NewCodeModeTool(nil, codemode.Limits{}, codemode.WithTypeScript(nil))
	require.NoError(t, err)
	defer off.Close()
	assert.NotContains(t, off.Description(), "TypeScript")
}

// TestHostileSources: the sources that once overflowed esbuild's parser
// (200,000 nested `[`: a Go stack overflow, which ended `codemode run` and
// `codemode serve`) or held it for seconds (conditional arrows, whose
// backtracking doubles per nesting) come back with an outcome of their own
// through an executor, and Strip itself refuses them, saying which bound.
func TestHostileSources(t *testing.T) {
	t.Parallel()
	e := executor(t, codemode.WithLimits(codemode.Limits{Deadline: 10 * time.Second}))
	for name, src := range hostile.Sources() {
		_, err := e.Run(context.Background(), src)
		if err != nil {
			var ee *codemode.ExecError
			require.ErrorAs(t, err, &ee, name)
			assert.Contains(t, []codemode.ErrorKind{codemode.KindJS, codemode.KindMemoryExceeded}, ee.Kind, "%s: %s", name, ee.LLMJSON())
		}
	}
	for _, name := range []string{"ts brackets", "ts arrows", "ts generics", "ts fn types"} {
		_, _, err := typescript.Stripper{}.Strip(hostile.Sources()[name])
		var te *codemode.TypeScriptError
		require.ErrorAs(t, err, &te, name)
		assert.Contains(t, te.Message, "codemode did not strip the source as TypeScript: ", name)
	}
	// Within the bounds, conditional arrows strip.
	js, _, err := typescript.Stripper{}.Strip("let f = a ? (b): number => b : c;")
	require.NoError(t, err)
	assert.Contains(t, js, "=>")
}
