package codemode

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/declarations/*.d.ts from the current output")

type declCase struct {
	Name string
	APIs []ToolAPI
}

func declCases(t *testing.T) []declCase {
	raw, err := os.ReadFile("testdata/declarations/cases.json")
	require.NoError(t, err)
	var cases []declCase
	require.NoError(t, json.Unmarshal(raw, &cases))
	return cases
}

// TestDeclarationsGolden: the exact declarations of a table of schemas
// (Cloudflare's json-schema-types cases, GitHub, Stripe, Slack and MCP
// servers' tools, recursion, unions, tuples, odd names).
func TestDeclarationsGolden(t *testing.T) {
	t.Parallel()
	cases := declCases(t)
	require.GreaterOrEqual(t, len(cases), 20)
	for _, c := range cases {
		got := Declarations(c.APIs)
		assert.Equal(t, got, Declarations(c.APIs), "deterministic")
		path := filepath.Join("testdata", "declarations", c.Name+".d.ts")
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "go test -run TestDeclarationsGolden -update writes it")
		assert.Equal(t, string(want), got, c.Name)
	}
}

// tscPath finds a TypeScript checker: $CODEMODE_TSC, tsc on PATH, or the
// one .ci/run installs under ~/.cache/codemode-tsc.
func tscPath() string {
	if p := os.Getenv("CODEMODE_TSC"); p != "" {
		return p
	}
	if p, err := exec.LookPath("tsc"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "codemode-tsc", "node_modules", ".bin", "tsc")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// TestDeclarationsTypeCheck: every golden declaration compiles with a
// real TypeScript checker, strict, together with a call of each tool (so
// each declaration is usable, not only well-formed).
func TestDeclarationsTypeCheck(t *testing.T) {
	t.Parallel()
	tsc := tscPath()
	if tsc == "" {
		t.Skip("no TypeScript checker: set CODEMODE_TSC, or npm install typescript (.ci/run does)")
	}
	dir := t.TempDir()
	var files []string
	for _, c := range declCases(t) {
		src := Declarations(c.APIs)
		for _, api := range c.APIs {
			src += "void " + api.JSName + ";\n"
		}
		src += "export {};\n"
		f := filepath.Join(dir, c.Name+".ts")
		require.NoError(t, os.WriteFile(f, []byte(src), 0o644))
		files = append(files, f)
	}
	prov := ProviderDeclarations(providerCases) + "void store.findUser({id: 'x'}); void math.add(1);\nexport {};\n"
	f := filepath.Join(dir, "providers.ts")
	require.NoError(t, os.WriteFile(f, []byte(prov), 0o644))
	files = append(files, f)
	args := append([]string{"--noEmit", "--strict", "--target", "es2022", "--lib", "es2022", "--pretty", "false"}, files...)
	out, err := exec.Command(tsc, args...).CombinedOutput()
	require.NoError(t, err, "tsc: %s", strings.TrimSpace(string(out)))
}

// BenchmarkDeclarations renders 100 tools.
func BenchmarkDeclarations(b *testing.B) {
	var apis []ToolAPI
	raw, err := os.ReadFile("testdata/declarations/cases.json")
	require.NoError(b, err)
	var cases []declCase
	require.NoError(b, json.Unmarshal(raw, &cases))
	for len(apis) < 100 {
		for _, c := range cases {
			for _, a := range c.APIs {
				if len(apis) < 100 {
					a.JSName += "_" + string(rune('a'+len(apis)%26))
					apis = append(apis, a)
				}
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Declarations(apis)
	}
}

// providerCases are providers in both calling conventions.
var providerCases = []Provider{
	{Name: "store", ObjectArgs: true, Tools: []string{"findUser", "ping"}, APIs: []ProviderTool{
		{Name: "findUser", Description: "Find a user by id.", Params: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
			Returns: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
	}},
	{Name: "math", APIs: []ProviderTool{
		{Name: "add", Params: json.RawMessage(`{"type":"array","prefixItems":[{"type":"number","title":"a"},{"type":"number","title":"b"}],"minItems":1}`), Returns: json.RawMessage(`{"type":"number"}`)},
		{Name: "clamp-to", Description: "A name that is no identifier.", Params: json.RawMessage(`{"type":"array","prefixItems":[{"type":"number","title":"default"}]}`)},
	}},
}

// TestProviderDeclarations: providers declared in their own calling
// convention.
func TestProviderDeclarations(t *testing.T) {
	t.Parallel()
	want := "type StoreFindUserInput = {\n  id: string;\n};\ntype StoreFindUserOutput = {\n  name: string;\n};\n" +
		"declare const store: {\n  /** Find a user by id. */\n  findUser(args: StoreFindUserInput): Promise<StoreFindUserOutput>;\n" +
		"  ping(args?: Record<string, unknown>): Promise<unknown>;\n};\n\n" +
		"type MathAddOutput = number;\n" +
		"declare const math: {\n  add(a: number, b?: number): Promise<MathAddOutput>;\n" +
		"  /** A name that is no identifier. */\n  \"clamp-to\"(arg0: number): Promise<unknown>;\n};\n"
	assert.Equal(t, want, ProviderDeclarations(providerCases))
}

// TestDeclarationsHostile: a schema past the bounds, a $ref cycle, a $ref
// outside the schema or to nothing, renders and never hangs or overflows.
func TestDeclarationsHostile(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 200000) + `{}` + strings.Repeat(`}}`, 200000)
	got := Declarations([]ToolAPI{
		{JSName: "deep", Parameters: json.RawMessage(deep), Returns: json.RawMessage(deep)},
		{JSName: "cycle", Parameters: json.RawMessage(`{"$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}`)},
		{JSName: "away", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"https://evil.test/s.json"},"y":{"$ref":"#/nope/0"}}}`)},
		{JSName: "garbage", Parameters: json.RawMessage(`{"type":`)},
	})
	assert.Contains(t, got, "type DeepInput = {};")
	assert.Contains(t, got, "type DeepOutput = unknown;")
	assert.Contains(t, got, "type CycleInput = Record<string, unknown>;")
	assert.NotContains(t, got, "type CycleA")
	assert.Contains(t, got, "x?: unknown;")
	assert.Contains(t, got, "y?: unknown;")
	assert.Contains(t, got, "declare function garbage(args: GarbageInput): unknown;")
}

// TestProviderToolNamesInTypeNames: a provider tool's name may be any
// text; its type names take only its letters and digits (a tool named " "
// made `type P Input`, found by FuzzDeclarations).
func TestProviderToolNamesInTypeNames(t *testing.T) {
	got := ProviderDeclarations([]Provider{{Name: "p", ObjectArgs: true, APIs: []ProviderTool{
		{Name: " ", Params: json.RawMessage(`{"properties":[]}`)},
		{Name: "get user.v2", Params: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`)}}}})
	want := `type PInput = Record<string, unknown>;
type PGetUserV2Input = {
  id?: number;
};
declare const p: {
  " "(args: PInput): Promise<unknown>;
  "get user.v2"(args: PGetUserV2Input): Promise<unknown>;
};
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestDeclarationsDefaults: a default is its JSON literal, arrays and
// objects too (server-filesystem's excludePatterns printed `@default
// unknown`), keys in schema order and without HTML escaping; one past
// 100 bytes is left out, never cut.
func TestDeclarationsDefaults(t *testing.T) {
	t.Parallel()
	long := `"` + strings.Repeat("x", 100) + `"`
	got := Declarations([]ToolAPI{{JSName: "search_files", Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"excludePatterns":{"type":"array","items":{"type":"string"},"default":[]},` +
		`"opts":{"type":"object","default":{"z":1,"a":[true,null,"<b>"]}},` +
		`"tag":{"type":"string","default":"<a&b>"},` +
		`"huge":{"type":"string","default":` + long + `}}}`)}})
	want := `type SearchFilesInput = {
  /** @default [] */
  excludePatterns?: string[];
  /** @default {"z":1,"a":[true,null,"<b>"]} */
  opts?: Record<string, unknown>;
  /** @default "<a&b>" */
  tag?: string;
  huge?: string;
};
declare function search_files(args: SearchFilesInput): unknown;
`
	assert.Equal(t, want, got)
}

// TestDeclarationsNoInput: a tool that takes no input — the MCP SDKs'
// {"type":"object","properties":{}} (server-memory's read_graph), `{}`,
// {"type":"object"}, additionalProperties false, annotations — is declared
// with no parameter, as a function and as a provider's method; a schema
// that admits any property keeps its parameter. Called without an
// argument, such a tool gets {} and its check passes.
func TestDeclarationsNoInput(t *testing.T) {
	t.Parallel()
	none := []string{`{"type":"object","properties":{}}`, `{}`, `{"type":"object"}`,
		`{"type":"object","properties":{},"required":[],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#","description":"Nothing."}`}
	for _, s := range none {
		got := Declarations([]ToolAPI{{JSName: "read_graph", Description: "Read the graph.", Parameters: json.RawMessage(s)}})
		assert.Equal(t, "/** Read the graph. */\ndeclare function read_graph(): unknown;\n", got, s)
		got = ProviderDeclarations([]Provider{{Name: "memory", ObjectArgs: true, APIs: []ProviderTool{{Name: "read_graph", Params: json.RawMessage(s)}}}})
		assert.Equal(t, "declare const memory: {\n  read_graph(): Promise<unknown>;\n};\n", got, s)
	}
	for _, s := range []string{`{"type":"object","additionalProperties":true}`, `{"type":"object","patternProperties":{"^x":{}}}`,
		`{"type":"object","required":["a"]}`, `{"anyOf":[{"type":"object"}]}`} {
		got := Declarations([]ToolAPI{{JSName: "f", Parameters: json.RawMessage(s)}})
		assert.Contains(t, got, "declare function f(args: FInput): unknown;", s)
	}

	e, err := New(WithCapability(Capability{Name: "read_graph", Params: json.RawMessage(none[3]),
		Func: func(_ context.Context, args json.RawMessage) (any, error) { return json.RawMessage(args), nil }}))
	require.NoError(t, err)
	defer e.Close()
	res, err := e.Run(context.Background(), "return read_graph()")
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(res.Value))
}
