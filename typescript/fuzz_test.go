package typescript_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/fuzzcheck"
	_ "github.com/codemode-go/codemode/typescript"
)

// FuzzDeclarations: whatever a tool's name, description and schemas (an
// MCP server's or a model's), Declarations and ProviderDeclarations are
// deterministic and their output parses as TypeScript (esbuild's parser;
// the tsc check of the declarations tests needs npm).
func FuzzDeclarations(f *testing.F) {
	for _, s := range []struct{ name, desc, params, returns string }{
		{"search", "Finds documents.", `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`, `{"type":"array","items":{"type":"string"}}`},
		{"get-weather", "*/ evil(); /*", `{"type":"object","properties":{"*/":{"type":"string"},"a b":{"enum":["x","\u2028",1,null]}}}`, ``},
		{"class", "", `{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`, `{"anyOf":[{"type":"string"},{"type":"null"}]}`},
		{"x", "line\nbreak", `{"type":"object","additionalProperties":{"type":"number"}}`, `{"const":"a\"b"}`},
		{"", "", `[]`, `true`},
		{"1abc", "", `{"type":["string","integer"],"oneOf":[{},{"not":{}}]}`, `{"type":"object","properties":{"constructor":{},"__proto__":{}}}`},
	} {
		f.Add(s.name, s.desc, s.params, s.returns, true)
	}
	f.Fuzz(func(t *testing.T, name, desc, params, returns string, async bool) {
		apis := []codemode.ToolAPI{{JSName: codemode.JSIdentifier(name), Description: desc, Parameters: json.RawMessage(params),
			Returns: json.RawMessage(returns), Async: async}}
		decl := codemode.Declarations(apis)
		if again := codemode.Declarations(apis); again != decl {
			t.Fatalf("Declarations differ between calls:\n%s\n---\n%s", decl, again)
		}
		parses(t, decl)
		providers := []codemode.Provider{{Name: "p", Tools: []string{name}, APIs: []codemode.ProviderTool{{Name: name, Description: desc,
			Params: json.RawMessage(params), Returns: json.RawMessage(returns)}}}}
		pdecl := codemode.ProviderDeclarations(providers)
		if again := codemode.ProviderDeclarations(providers); again != pdecl {
			t.Fatalf("ProviderDeclarations differ between calls")
		}
		parses(t, pdecl)
	})
}

func parses(t *testing.T, decl string) {
	r := api.Transform(decl, api.TransformOptions{Loader: api.LoaderTS})
	if len(r.Errors) > 0 {
		t.Fatalf("not TypeScript (%s):\n%s", r.Errors[0].Text, decl)
	}
}

// FuzzShapes: with the stripper registered, the shapes models write — a
// body, the body fenced, the body as an arrow — come to the same result,
// TypeScript bodies included (fuzzcheck.Shapes).
func FuzzShapes(f *testing.F) {
	for _, s := range []string{"return 1", "const x: number = 10; return x * 2", "interface P { n: number }\nconst p: P = {n: 2}; return p.n",
		"enum C { A, B }\nreturn C.B", "const f = <T,>(x: T): T => x; return f(3)", "return (1 as unknown as number) + 1",
		"const xs: Array<string> = ['a']; xs.length", "function g(this: void, n?: number) { return n ?? 0 }\nreturn g()",
		"return await Promise.resolve<number>(4)", "type T = {a: string}; ({a: 'x'} satisfies T).a", "namespace N { export const v = 1 }\nreturn N.v"} {
		f.Add(s)
	}
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Memory: 8 << 20, Deadline: 100 * time.Millisecond}))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	f.Fuzz(func(t *testing.T, body string) {
		if strings.ContainsRune(body, 0) {
			return
		}
		fuzzcheck.Shapes(t, e, body)
	})
}
