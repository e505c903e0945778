package codemode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleCode is the code of a description's example.
func exampleCode(t *testing.T, desc string) string {
	t.Helper()
	_, code, ok := strings.Cut(desc, "Example:\n")
	require.True(t, ok, "no example in %s", desc)
	return code
}

// TestDescribeExampleRuns: the example Describe shows a model runs as
// written against tools that run as declared (issue 53): awaited when the
// API it calls returns a Promise (the first, whatever the others are), its
// placeholders passing the tool's schema (required keys, enums, keys that
// are no identifiers), nothing for a tool that takes no input.
func TestDescribeExampleRuns(t *testing.T) {
	t.Parallel()
	obj := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		name string
		apis []ToolAPI
	}{
		{"async", []ToolAPI{{JSName: "get_user", Async: true, Parameters: obj(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)}}},
		{"sync", []ToolAPI{{JSName: "get_user", Parameters: obj(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)}}},
		{"mixed, the first async", []ToolAPI{
			{JSName: "search", Async: true, Parameters: obj(`{"type":"object","properties":{"q":{"type":"string"},"kind":{"enum":["a","b"]}},"required":["q","kind"]}`)},
			{JSName: "now", Parameters: obj(`{"type":"object","properties":{}}`)}}},
		{"mixed, the first sync", []ToolAPI{
			{JSName: "now", Parameters: obj(`{"type":"object"}`)},
			{JSName: "search", Async: true, Parameters: obj(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}}},
		{"no input", []ToolAPI{{JSName: "ping", Async: true, Parameters: obj(`{"type":"object","properties":{}}`)}}},
		{"a key that is no identifier", []ToolAPI{{JSName: "lookup", Async: true, Parameters: obj(`{"type":"object","properties":{"user-id":{"type":"number"},"on":{"type":"boolean"}},"required":["user-id","on"]}`)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			for _, a := range c.apis {
				opts = append(opts, WithCapability(Capability{Name: a.JSName, Async: a.Async, Params: a.Parameters,
					Func: func(context.Context, json.RawMessage) (any, error) { return 7, nil }}))
			}
			e := newExecutor(t, opts...)
			desc := Describe(c.apis)
			res, err := e.Run(context.Background(), exampleCode(t, desc))
			require.NoError(t, err, "the example of\n%s", desc)
			assert.JSONEq(t, `{"r":7}`, string(res.Value), "the example of\n%s", desc)
		})
	}
}

// TestProviderExampleRuns: ProviderExample calls a tool as
// ProviderDeclarations declares it (one options object with ObjectArgs,
// positional parameters otherwise, none for a tool that takes no input),
// and runs as written; an ObjectArgs tool with no schema takes an optional
// options object, not positional arguments.
func TestProviderExampleRuns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		providers []Provider
		decl      string // a line the declarations hold
		call      string // the example's call
	}{
		{"object args", []Provider{{Name: "store", ObjectArgs: true, Tools: []string{"get"}, APIs: []ProviderTool{{Name: "get",
			Params: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)}}}},
			"  get(args: StoreGetInput): Promise<unknown>;", "store.get({id: 1})"},
		{"object args, no schema", []Provider{{Name: "store", ObjectArgs: true, Tools: []string{"list"}}},
			"  list(args?: Record<string, unknown>): Promise<unknown>;", "store.list()"},
		{"object args, no input", []Provider{{Name: "store", ObjectArgs: true, Tools: []string{"ping"}, APIs: []ProviderTool{{Name: "ping",
			Params: json.RawMessage(`{"type":"object","properties":{}}`)}}}},
			"  ping(): Promise<unknown>;", "store.ping()"},
		{"positional", []Provider{{Name: "math", Tools: []string{"add"}, APIs: []ProviderTool{{Name: "add",
			Params: json.RawMessage(`{"type":"array","prefixItems":[{"title":"a","type":"number"},{"title":"b","type":"number"},{"title":"c","type":"number"}],"minItems":2}`)}}}},
			"  add(a: number, b: number, c?: number): Promise<unknown>;", "math.add(1, 1)"},
		{"positional, no schema", []Provider{{Name: "kv", Tools: []string{"keys"}}},
			"  keys(...args: unknown[]): Promise<unknown>;", "kv.keys()"},
		{"a name that is no identifier, the first taking arguments", []Provider{{Name: "fs", ObjectArgs: true, Tools: []string{"stat", "read-file"},
			APIs: []ProviderTool{{Name: "stat", Params: json.RawMessage(`{"type":"object"}`)},
				{Name: "read-file", Params: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}}},
			`  "read-file"(args: FsReadFileInput): Promise<unknown>;`, `fs["read-file"]({path: "…"})`},
	}
	e := newExecutor(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Contains(t, ProviderDeclarations(c.providers), c.decl)
			ex := ProviderExample(c.providers)
			assert.Equal(t, "Example:\nconst r = await "+c.call+";\nreturn r;", ex)
			var got []string
			res := e.Execute(context.Background(), Request{Code: "async () => {\n" + exampleCode(t, ex) + "\n}", Providers: c.providers,
				Dispatch: func(_ context.Context, provider, tool, args string) (string, error) {
					got = append(got, provider+"."+tool+" "+args)
					return `{"result":7}`, nil
				}})
			require.Empty(t, res.Error, "the example %s", ex)
			assert.JSONEq(t, `7`, string(res.Result))
			assert.Len(t, got, 1)
		})
	}
	assert.Equal(t, "", ProviderExample(nil))
	// A provider that lists no tool: any tool of its namespace, no example.
	assert.Equal(t, "declare const kv: { [tool: string]: (...args: unknown[]) => Promise<unknown> };\n",
		ProviderDeclarations([]Provider{{Name: "kv"}}))
	assert.Equal(t, "", ProviderExample([]Provider{{Name: "kv"}}))
}

// TestDescribeProvidersExampleRuns: DescribeProviders' example runs as an
// Execute program against its providers.
func TestDescribeProvidersExampleRuns(t *testing.T) {
	t.Parallel()
	providers := []Provider{{Name: "store", ObjectArgs: true, Tools: []string{"get"}, APIs: []ProviderTool{{Name: "get",
		Params: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)}}}}
	desc := DescribeProviders(providers)
	assert.Contains(t, desc, "methods of their provider's namespace")
	assert.Contains(t, desc, "declare const store: {")
	e := newExecutor(t)
	res := e.Execute(context.Background(), Request{Code: "async () => {\n" + exampleCode(t, desc) + "\n}", Providers: providers,
		Dispatch: func(context.Context, string, string, string) (string, error) { return `{"result":7}`, nil }})
	require.Empty(t, res.Error)
	assert.JSONEq(t, `7`, string(res.Result))
	assert.NotContains(t, DescribeProviders(nil), "declare const")
}
