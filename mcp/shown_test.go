package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

// What the model and an MCP client are shown (issue 27, found running
// `codemode mcp` over the npm reference servers).

// serve serves code mode over routes in memory and returns a client
// session to it.
func serve(t testing.TB, opts cmcp.ServerOptions, routes ...cmcp.Route) *mcp.ClientSession {
	t.Helper()
	return serveTo(t, opts, &mcp.ClientOptions{}, routes...)
}

// serveTo is serve with the client's options.
func serveTo(t testing.TB, opts cmcp.ServerOptions, copts *mcp.ClientOptions, routes ...cmcp.Route) *mcp.ClientSession {
	t.Helper()
	return serveWith(t, newExec(t), opts, copts, routes...)
}

// serveWith is serveTo with the executor given.
func serveWith(t testing.TB, e *codemode.Executor, opts cmcp.ServerOptions, copts *mcp.ClientOptions, routes ...cmcp.Route) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	r, err := cmcp.NewRouter(routes...)
	require.NoError(t, err)
	srv, err := cmcp.NewServer(e, r, opts)
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, copts).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// fsServer has a tool without input (server-memory's read_graph, with the
// TypeScript SDK's schema of one) and one with an array default
// (server-filesystem's excludePatterns); read_graph answers the arguments
// it got.
func fsServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fs", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "read_graph", Description: "Read the whole graph.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "search_files", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},` +
		`"excludePatterns":{"type":"array","items":{"type":"string"},"default":[]}},"required":["path"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	return s
}

// text is a result's first block's text.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "the first block is text")
	return tc.Text
}

func runJS(t *testing.T, cs *mcp.ClientSession, tool, code string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"code": code}})
	require.NoError(t, err)
	return res
}

// TestShownNoInputAndDefaults: a tool without input is declared without a
// parameter and called without an argument (its server gets {}); an array
// default is its literal, not `@default unknown`; the example calls a tool
// that takes arguments.
func TestShownNoInputAndDefaults(t *testing.T) {
	ctx := context.Background()
	up, err := cmcp.NewUpstream(ctx, "fs", connect(t, fsServer()))
	require.NoError(t, err)
	cs := serve(t, cmcp.ServerOptions{}, up)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	want := `APIs (TypeScript):
type FsSearchFilesInput = {
  /** @default [] */
  excludePatterns?: string[];
  path: string;
};
declare const fs: {
  /** Read the whole graph. */
  read_graph(): Promise<unknown>;
  search_files(args: FsSearchFilesInput): Promise<unknown>;
};

Example:
const r = await fs.search_files({path: "…"});
return r;`
	desc := tools.Tools[0].Description
	assert.True(t, strings.HasSuffix(desc, "\n\n"+want), "Description = %s\nwant it to end in\n%s", desc, want)

	res := runJS(t, cs, "run_js", "return await fs.read_graph()")
	assert.Equal(t, `{"result":{},"logs":[]}`, text(t, res))
}

// noToolRan is the ledger of a failed program that called no tool, as
// the text block shows it.
const noToolRan = `,"effects":{"summary":"no tool ran","started":0,"completed":0}`

// msRE matches a ledger's elapsed times.
var msRE = regexp.MustCompile(`"ms":[0-9.e-]+`)

// TestShownText: text blocks are JSON without HTML escaping, and errors
// carry the tool's name as the client knows it (not "execute").
func TestShownText(t *testing.T) {
	ctx := context.Background()
	cs := codeClient(t, cmcp.ServerOptions{ToolName: "exec_js"}, nil, nil)
	tests := []struct{ code, want string }{
		{`return "<anonymous> & co"`, `{"result":"<anonymous> & co","logs":[]}`},
		{`console.log("<b>"); return {b: 1, a: "&"}`, `{"result":{"b":1,"a":"&"},"logs":["<b>"]}`},
		{`throw new Error("<x>")`, `{"error":{"kind":"js","name":"exec_js","message":"Error: <x>\n    at <anonymous> (program.js:1:11)","line":1,"column":11},"logs":[]` + noToolRan + `}`},
		{`return await shapes.fails()`, `{"error":{"kind":"capability","name":"exec_js","capability":"shapes.fails","message":"the thing\nis broken","line":1,"column":21},"logs":[],` +
			`"effects":{"summary":"shapes.fails failed (it may have written first)","started":1,"completed":1,"calls":[{"seq":0,"tool":"shapes.fails","effect":"write","outcome":"error","ms":0}]}}`},
	}
	for _, tt := range tests {
		res := runJS(t, cs, "exec_js", tt.code)
		assert.Equal(t, tt.want, msRE.ReplaceAllString(text(t, res), `"ms":0`), "Run(%q)", tt.code)
		assert.Equal(t, strings.HasPrefix(tt.want, `{"error"`), res.IsError, tt.code)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_js", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, `{"error":{"kind":"invalid_args","name":"exec_js","reason":"the arguments are {\"code\": string}"},"logs":[]`+noToolRan+`}`, text(t, res))

	// An internal error's message names the tool too.
	r, err := cmcp.NewRouter()
	require.NoError(t, err)
	e := newExec(t)
	srv, err := cmcp.NewServer(e, r, cmcp.ServerOptions{ToolName: "exec_js"})
	require.NoError(t, err)
	e.Close()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	closed, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer closed.Close()
	res = runJS(t, closed, "exec_js", "return 1")
	assert.Equal(t, `{"error":{"kind":"internal","message":"codemode: exec_js: codemode: executor closed"},"logs":[]`+noToolRan+`}`, text(t, res))
}

// TestShownMedia: an image or audio value at the top of the result is an
// MCP image or audio block, with a placeholder naming it in the text and
// the structured content; other binary is a placeholder; key order holds.
func TestShownMedia(t *testing.T) {
	cs := codeClient(t, cmcp.ServerOptions{}, nil, nil)
	png := []byte{0x89, 'P', 'N', 'G'}
	tests := []struct {
		code, want string
		blocks     []mcp.Content
	}{
		{"return await shapes.image()", `{"result":"[image/png, 4 bytes: content 2]","logs":[]}`,
			[]mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}},
		{"const i = await shapes.image(); return {z: 1, pic: i, again: {mimeType: 'image/gif', data: i.data.buffer}, raw: new Uint8Array([1, 2, 3]), deep: [[i]]}",
			`{"result":{"z":1,"pic":"[image/png, 4 bytes: content 2]","again":"[image/gif, 4 bytes: content 3]","raw":"[Uint8Array, 3 bytes: not shown]",` +
				`"deep":[[{"data":"[Uint8Array, 4 bytes: not shown]","mimeType":"image/png","type":"image"}]]},"logs":[]}`,
			[]mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}, &mcp.ImageContent{Data: png, MIMEType: "image/gif"}}},
		{"return await shapes.mixed()",
			`{"result":["see","[audio/wav, 2 bytes: content 2]",{"mimeType":"text/plain","name":"a.txt","size":12,"type":"resource_link","uri":"file:///a.txt"},` +
				`{"mimeType":"text/plain","text":"bee","type":"resource","uri":"mem://b"}],"logs":[]}`,
			[]mcp.Content{&mcp.AudioContent{Data: []byte{1, 2}, MIMEType: "audio/wav"}}},
		{"return {type: 'resource', mimeType: 'image/png', data: new ArrayBuffer(2)}",
			`{"result":{"type":"resource","mimeType":"image/png","data":"[ArrayBuffer, 2 bytes: not shown]"},"logs":[]}`, nil},
	}
	for _, tt := range tests {
		res := runJS(t, cs, "run_js", tt.code)
		require.False(t, res.IsError, text(t, res))
		assert.Equal(t, tt.want, msRE.ReplaceAllString(text(t, res), `"ms":0`), "Run(%q)", tt.code)
		blocks := res.Content[1:]
		if len(blocks) == 0 {
			blocks = nil
		}
		assert.Equal(t, tt.blocks, blocks, tt.code)
		b, _ := json.Marshal(res.StructuredContent)
		assert.JSONEq(t, tt.want, string(b), "the structured content is the text's")
	}
	// The walk is bounded in depth: past 512 levels binary stays as the
	// codec wrote it, and nothing overflows.
	res := runJS(t, cs, "run_js", "let d = new Uint8Array([2]); for (let i = 0; i < 600; i++) d = [d]; return [new Uint8Array([1]), d]")
	require.False(t, res.IsError, text(t, res))
	got := text(t, res)
	assert.True(t, json.Valid([]byte(got)))
	assert.Equal(t, 1, strings.Count(got, "[Uint8Array, 1 byte: not shown]"), "within the bound")
	assert.Equal(t, 1, strings.Count(got, `{"__executor_binary_v1__":"Uint8Array","data":"Ag=="}`), "past it")
}

// TestShownSearch: codemode.search_tools takes a string or {query,
// limit?} in the sandbox, below the budget too, and so does the
// search_tools MCP tool; answers keep to the token budget in whole
// declarations and name those left out.
func TestShownSearch(t *testing.T) {
	ctx := context.Background()
	image := "declare const shapes: {\n  /** Returns an image. */\n  image(): Promise<unknown>;\n};\n"
	cs := codeClient(t, cmcp.ServerOptions{}, nil, nil)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1, "below the budget: no search_tools MCP tool")
	for _, tt := range []struct{ code, want string }{
		{"return await codemode.search_tools('image')", image},
		{"return await codemode.search_tools({query: 'IMAGE'})", image},
		{"return await codemode.search_tools({query: 'returns', limit: 1})", "declare const shapes: {\n  /** Returns plain text. */\n  get_text(): Promise<unknown>;\n};\n" +
			"// 4 more matching tools left out (limit 1): shapes.get_json, shapes.image, shapes.mixed, shapes.structured\n"},
		{"try { await codemode.search_tools(5) } catch (e) { return e.message }", "search_tools takes a string or {query: string, limit?: number}"},
		{"try { await codemode.search_tools({query: 'x', limit: 0}) } catch (e) { return e.message }", "search_tools takes a string or {query: string, limit?: number}"},
	} {
		res := runJS(t, cs, "run_js", tt.code)
		require.False(t, res.IsError, text(t, res))
		assert.Equal(t, `{"result":`+quote(tt.want)+`,"logs":[]}`, text(t, res), "Run(%q)", tt.code)
	}

	// Past a budget of 50 tokens (200 bytes).
	cs = codeClient(t, cmcp.ServerOptions{TokenBudget: 50}, nil, nil)
	cut := "declare const shapes: {\n  /** Returns plain text. */\n  get_text(): Promise<unknown>;\n};\n" +
		"// 4 more matching tools left out (the 50-token budget): shapes.get_json, shapes.image, shapes.mixed, …\n"
	for _, args := range []any{"returns", map[string]any{"query": "returns"}, map[string]any{"query": "returns", "limit": 3}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: args})
		require.NoError(t, err)
		require.False(t, res.IsError, text(t, res))
		assert.Equal(t, cut, text(t, res), "search_tools(%v)", args)
		assert.LessOrEqual(t, len(text(t, res)), 200)
	}
	res := runJS(t, cs, "run_js", "return await codemode.search_tools('returns')")
	assert.Equal(t, `{"result":`+quote(cut)+`,"logs":[]}`, text(t, res))
	// Many tools, a 500-token budget (5,863 characters came back under
	// one): whole declarations within 2,000 bytes, the rest counted.
	var many codemode.Provider
	many.Name, many.ObjectArgs = "big", true
	for i := range 60 {
		name := fmt.Sprintf("tool_%02d", i)
		many.Tools = append(many.Tools, name)
		many.APIs = append(many.APIs, codemode.ProviderTool{Name: name, Description: "Does a thing with entities. " + strings.Repeat("More words. ", 5),
			Params: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the entity"}},"required":["id"]}`)})
	}
	big := serve(t, cmcp.ServerOptions{TokenBudget: 500}, cmcp.GoProvider{P: many, D: func(context.Context, string, string, string) (string, error) { return `{"result":1}`, nil }})
	res, err = big.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: "entities"})
	require.NoError(t, err)
	got := text(t, res)
	assert.LessOrEqual(t, len(got), 2000)
	decls, note, ok := strings.Cut(got, "};\n// ")
	require.True(t, ok, got)
	shown := strings.Count(decls, "(args: ")
	assert.Greater(t, shown, 5)
	assert.True(t, strings.HasPrefix(note, fmt.Sprintf("%d more matching tools left out (the 500-token budget): big.tool_%02d, ", 60-shown, shown)), note)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"q": "x"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "search_tools takes a string or {query: string, limit?: number}", text(t, res))
}

// quote is s as a JSON string, without HTML escaping.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// contentNote is the description's paragraph on MCP results.
const contentNote = "MCP results arrive as: structuredContent when present; else all-text content as its text " +
	"(blocks joined by \"\\n\"), parsed if it is JSON; else one value per block (text: a string; image, audio: " +
	"{type, mimeType, data: Uint8Array}; resource_link: {type, uri, name, title?, description?, mimeType?, size?}; " +
	"resource: {type, uri, mimeType?, text or data: Uint8Array}), one block as itself, several as an array, none as null. " +
	"isError throws an Error with the text. An image or audio value returned as it came (or in the returned array or " +
	"object) reaches the client as an image or audio."

// TestShownContentNote: with an upstream MCP server, the description says
// how its results arrive (in both descriptions); with none, it does not.
func TestShownContentNote(t *testing.T) {
	ctx := context.Background()
	for _, budget := range []int{0, 50} {
		cs := codeClient(t, cmcp.ServerOptions{TokenBudget: budget}, nil, nil)
		tools, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		assert.Contains(t, tools.Tools[0].Description, ". There is no network and no filesystem: only these tools.\n\n"+contentNote+"\n\n")
	}
	local := cmcp.GoProvider{P: codemode.Provider{Name: "local", Tools: []string{"ping"}}, D: func(context.Context, string, string, string) (string, error) {
		return `{"result":"pong"}`, nil
	}}
	cs := serve(t, cmcp.ServerOptions{}, local)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.NotContains(t, tools.Tools[0].Description, "MCP results")
}

// TestEffectsAndShaping: a failed program's output says which upstream
// tools ran before it ended; an output past the budget is shaped and says
// so.
func TestEffectsAndShaping(t *testing.T) {
	up, err := cmcp.NewUpstream(context.Background(), "shapes", connect(t, upstreamServer(nil)))
	require.NoError(t, err)
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: 500 * time.Millisecond}))
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	cs := serveWith(t, e, cmcp.ServerOptions{OutputBudget: 4096}, nil, up)
	res := runJS(t, cs, "run_js", `await shapes.get_json({n: 1}); await shapes.get_text(); for (;;) {}`)
	require.True(t, res.IsError)
	var out struct {
		Error   map[string]any `json:"error"`
		Effects struct {
			Summary string `json:"summary"`
			Started int    `json:"started"`
			Calls   []struct {
				Tool, Outcome string
			} `json:"calls"`
		} `json:"effects"`
	}
	require.NoError(t, json.Unmarshal([]byte(text(t, res)), &out))
	assert.Equal(t, "timeout", out.Error["kind"])
	assert.Equal(t, "shapes.get_json and shapes.get_text completed before the timeout", out.Effects.Summary)
	assert.Equal(t, 2, out.Effects.Started)

	res = runJS(t, cs, "run_js", `for (let i = 0; i < 5000; i++) console.log("line " + i); return "x".repeat(100000)`)
	require.False(t, res.IsError)
	txt := text(t, res)
	assert.Less(t, len(txt), 4096+1024)
	var ok struct {
		Result string   `json:"result"`
		Logs   []string `json:"logs"`
		Shaped string   `json:"shaped"`
	}
	require.NoError(t, json.Unmarshal([]byte(txt), &ok))
	assert.True(t, strings.HasSuffix(ok.Result, "… [100000 characters in all]"))
	assert.Equal(t, "line 0", ok.Logs[0])
	assert.Equal(t, "line 4999", ok.Logs[len(ok.Logs)-1])
	assert.Contains(t, ok.Shaped, "the result was ")
	assert.Contains(t, ok.Shaped, "the log was ")
}

// TestReadOnlyHint: an upstream tool whose annotations say readOnlyHint is
// a read in the router's effects; the others are left to the host.
func TestReadOnlyHint(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "kv", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	answer := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "1"}}}, nil
	}
	s.AddTool(&mcp.Tool{Name: "get", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, answer)
	s.AddTool(&mcp.Tool{Name: "put", InputSchema: obj}, answer)
	up, err := cmcp.NewUpstream(context.Background(), "kv", connect(t, s))
	require.NoError(t, err)
	r, err := cmcp.NewRouter(up)
	require.NoError(t, err)
	assert.Equal(t, map[string]codemode.Effect{"kv.get": codemode.EffectRead}, r.Effects())

	tools := map[string]codemode.ToolPolicy{}
	for name, e := range r.Effects() {
		tools[name] = codemode.ToolPolicy{Effect: e}
	}
	e, err := codemode.New(codemode.WithGovernance(codemode.Governance{Tools: tools}))
	require.NoError(t, err)
	defer e.Close()
	res := e.Execute(context.Background(), codemode.Request{Code: `async () => { await kv.get({}); await kv.put({}); throw new Error("x") }`,
		Providers: r.Providers(), Dispatch: r.Dispatch})
	require.NotNil(t, res.Err)
	assert.Equal(t, "kv.put completed", res.Effects.Summary())
	res = e.Execute(context.Background(), codemode.Request{Code: `async () => { await kv.get({}); throw new Error("x") }`,
		Providers: r.Providers(), Dispatch: r.Dispatch})
	assert.Equal(t, "only reads ran", res.Effects.Summary())
}
