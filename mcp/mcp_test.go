package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

// upstreamServer is a test MCP server with a tool of every result shape.
func upstreamServer(block <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "shapes", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	add := func(name, desc string, h func(args map[string]any) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			json.Unmarshal(req.Params.Arguments, &args)
			if name == "block" {
				select {
				case <-block:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return h(args), nil
		})
	}

	text := func(s ...string) *mcp.CallToolResult {
		r := &mcp.CallToolResult{}
		for _, t := range s {
			r.Content = append(r.Content, &mcp.TextContent{Text: t})
		}
		return r
	}
	add("get-text", "Returns plain text.", func(map[string]any) *mcp.CallToolResult { return text("hello", "world") })
	add("get.json", "Returns JSON as text.", func(a map[string]any) *mcp.CallToolResult { return text(fmt.Sprintf(`{"n": %v}`, a["n"])) })
	add("structured", "Returns structured content.", func(a map[string]any) *mcp.CallToolResult {
		r := text("ignored")
		r.StructuredContent = map[string]any{"sum": a["a"].(float64) + a["b"].(float64)}
		return r
	})
	add("fails", "Always fails.", func(map[string]any) *mcp.CallToolResult {
		r := text("the thing", "is broken")
		r.IsError = true
		return r
	})
	add("image", "Returns an image.", func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"}}}
	})
	add("mixed", "Returns text, audio, a link and a resource.", func(map[string]any) *mcp.CallToolResult {
		size := int64(12)
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "see"},
			&mcp.AudioContent{Data: []byte{1, 2}, MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain", Size: &size},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", MIMEType: "text/plain", Text: "bee"}},
		}}
	})
	add("block", "Waits until released or cancelled.", func(map[string]any) *mcp.CallToolResult { return text("released") })
	return s
}

// connect serves s in memory and returns a client session to it.
func connect(t testing.TB, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func newExec(t testing.TB) *codemode.Executor {
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: 10 * time.Second}))
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// TestUpstreamUnwrap: every unwrap rule, called from Execute.
func TestUpstreamUnwrap(t *testing.T) {
	ctx := context.Background()
	up, err := cmcp.NewUpstream(ctx, "shapes", connect(t, upstreamServer(nil)))
	require.NoError(t, err)
	p := up.Provider()
	assert.Equal(t, []string{"block", "fails", "get_text", "get_json", "image", "mixed", "structured"}, p.Tools) // the server lists them by name
	assert.Contains(t, codemode.ProviderDeclarations([]codemode.Provider{p}), "Returns JSON as text.")
	r, err := cmcp.NewRouter(up)
	require.NoError(t, err)
	e := newExec(t)
	tests := []struct{ name, code, want string }{
		{"all text, not JSON: the text", "return await shapes.get_text()", `"hello\nworld"`},
		{"text that is JSON: the value", "return await shapes.get_json({n: 5})", `{"n":5}`},
		{"structured content wins", "return await shapes.structured({a: 2, b: 3})", `{"sum":5}`},
		{"isError: a throw with the joined text", "try { await shapes.fails() } catch (e) { return e.message }", `"the thing\nis broken"`},
		{"an image: its bytes and type", "const r = await shapes.image(); return [r.type, r.mimeType, r.data instanceof Uint8Array, [...r.data]]", `["image","image/png",true,[137,80,78,71]]`},
		{"mixed: each item", `const [t, a, l, res] = await shapes.mixed();
			return [t, a.type, a.mimeType, [...a.data], l, res]`,
			`["see","audio","audio/wav",[1,2],{"mimeType":"text/plain","name":"a.txt","size":12,"type":"resource_link","uri":"file:///a.txt"},{"mimeType":"text/plain","text":"bee","type":"resource","uri":"mem://b"}]`},
		{"Promise.all", "return (await Promise.all([shapes.get_json({n: 1}), shapes.get_json({n: 2})])).map((x) => x.n)", `[1,2]`},
	}
	for _, tt := range tests {
		res := e.Execute(ctx, codemode.Request{Code: "async () => { " + tt.code + " }", Providers: r.Providers(), Dispatch: r.Dispatch})
		require.Empty(t, res.Error, tt.name)
		assert.Equal(t, tt.want, string(res.Result), tt.name)
	}
}

// TestUpstreamCancel: the dispatch's context ending cancels the MCP call.
func TestUpstreamCancel(t *testing.T) {
	ctx := context.Background()
	up, err := cmcp.NewUpstream(ctx, "shapes", connect(t, upstreamServer(make(chan struct{}))))
	require.NoError(t, err)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = up.Dispatch(cctx, "shapes", "block", `{}`)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestRouter: only the tools given are routed, each to its own provider.
func TestRouter(t *testing.T) {
	ctx := context.Background()
	a, err := cmcp.NewUpstream(ctx, "a", connect(t, upstreamServer(nil)))
	require.NoError(t, err)
	var goCalls []string
	var mu sync.Mutex
	local := cmcp.GoProvider{P: codemode.Provider{Name: "local", Tools: []string{"ping"}}, D: func(_ context.Context, p, tool, args string) (string, error) {
		mu.Lock()
		goCalls = append(goCalls, p+"."+tool)
		mu.Unlock()
		return `{"result":"pong"}`, nil
	}}
	r, err := cmcp.NewRouter(a, local)
	require.NoError(t, err)
	_, err = cmcp.NewRouter(a, a)
	require.ErrorContains(t, err, `two providers are named "a"`)
	e := newExec(t)
	run := func(code string) codemode.ExecuteResult {
		return e.Execute(ctx, codemode.Request{Code: code, Providers: r.Providers(), Dispatch: r.Dispatch})
	}
	res := run("async () => [await local.ping(), (await a.get_json({n: 3})).n]")
	require.Empty(t, res.Error)
	assert.Equal(t, `["pong",3]`, string(res.Result))
	for _, code := range []string{
		"async () => await a.undeclared()",
		"async () => await local.get_json({n: 1})", // a tool of another provider
		"async () => await a.ping()",
		"async () => __parseForDispatch(await __dispatch('nobody', 'steal', '{}'))",
		"async () => __parseForDispatch(await __dispatch('a', 'no_such', '{}'))",
	} {
		res := run(code)
		require.NotEmpty(t, res.Error, code)
		assert.Regexp(t, `Tool "(undeclared|get_json|ping|steal|no_such)" not found`, res.Error, code)
	}
	assert.Equal(t, []string{"local.ping"}, goCalls)
	// Names that mangle alike are refused.
	dup := mcp.NewServer(&mcp.Implementation{Name: "dup", Version: "1"}, nil)
	for _, n := range []string{"get-issue", "get.issue"} {
		dup.AddTool(&mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	_, err = cmcp.NewUpstream(ctx, "dup", connect(t, dup))
	require.ErrorContains(t, err, `tools "get-issue" and "get.issue" both become get_issue`)
}

// codeClient serves code mode over the upstream in memory and returns a
// client session to it.
func codeClient(t testing.TB, opts cmcp.ServerOptions, block chan struct{}, progress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	up, err := cmcp.NewUpstream(context.Background(), "shapes", connect(t, upstreamServer(block)))
	require.NoError(t, err)
	copts := &mcp.ClientOptions{}
	if progress != nil {
		copts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress(req.Params) }
	}
	return serveTo(t, opts, copts, up)
}

// TestServer: the code tool runs a program over the upstream tools; a
// failing program is isError with the error JSON and the logs; progress
// notifications come while it runs; cancelling stops it.
func TestServer(t *testing.T) {
	ctx := context.Background()
	block := make(chan struct{})
	var mu sync.Mutex
	var notes []string
	cs := codeClient(t, cmcp.ServerOptions{Progress: 20 * time.Millisecond}, block, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		notes = append(notes, p.Message)
		mu.Unlock()
	})
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	assert.Equal(t, "run_js", tools.Tools[0].Name)
	assert.Contains(t, tools.Tools[0].Description, "Returns structured content.")
	assert.Contains(t, tools.Tools[0].Description, "shapes: {")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{
		"code": "console.log('go'); const [a, b] = await Promise.all([shapes.structured({a: 1, b: 2}), shapes.get_json({n: 4})]); return a.sum + b.n"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	b, _ := json.Marshal(res.StructuredContent)
	assert.JSONEq(t, `{"result":7,"logs":["go"]}`, string(b))
	assert.JSONEq(t, `{"result":7,"logs":["go"]}`, res.Content[0].(*mcp.TextContent).Text)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": "console.log('x'); throw new Error('nope')"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, `"kind":"js"`)
	assert.Contains(t, text, `Error: nope`)
	assert.Contains(t, text, `"logs":["x"]`)

	// Progress while a program waits; then cancel it.
	cctx, cancel := context.WithCancel(ctx)
	params := &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": "return await shapes.block()"}}
	params.SetProgressToken("p1")
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, params)
		errc <- err
	}()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) >= 2
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.Error(t, <-errc)
	mu.Lock()
	assert.True(t, strings.HasPrefix(notes[0], "running for"), notes[0])
	mu.Unlock()
	// The server goes on.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": "return 1"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	close(block)
}

// TestProgressiveDiscovery: past the budget the description names the
// servers only, and search_tools finds a tool by a word of its
// description, inside the sandbox and as an MCP tool.
func TestProgressiveDiscovery(t *testing.T) {
	ctx := context.Background()
	cs := codeClient(t, cmcp.ServerOptions{TokenBudget: 50}, nil, nil)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 2)
	desc := tools.Tools[0].Description
	assert.Contains(t, desc, "- shapes: 7 tools")
	assert.NotContains(t, desc, "Returns structured content.")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{
		"code": "return await codemode.search_tools('image')"}})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	b, _ := json.Marshal(res.StructuredContent)
	assert.Contains(t, string(b), "Returns an image.")
	assert.NotContains(t, string(b), "Returns plain text.")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "structured"}})
	require.NoError(t, err)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "structured(")
	// A word only its description holds.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "PLAIN"}})
	require.NoError(t, err)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, "get_text(")
	assert.NotContains(t, text, "image(")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "zebra"}})
	require.NoError(t, err)
	assert.Equal(t, `No tool matches "zebra".`, res.Content[0].(*mcp.TextContent).Text)
}

// TestServerSessions: with ServerOptions.Sessions, each client's programs
// share a session (what one declares, the next sees), two clients do not
// see each other's, reset_js starts a client's state afresh, and a
// client's session ends with its MCP session. Through the official SDK's
// client.
func TestServerSessions(t *testing.T) {
	ctx := context.Background()
	up, err := cmcp.NewUpstream(ctx, "shapes", connect(t, upstreamServer(nil)))
	require.NoError(t, err)
	r, err := cmcp.NewRouter(up)
	require.NoError(t, err)
	srv, err := cmcp.NewServer(newExec(t), r, cmcp.ServerOptions{Sessions: true})
	require.NoError(t, err)
	a, b := connect(t, srv), connect(t, srv)
	tools, err := a.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "run_js" {
			assert.Contains(t, tool.Description, "State persists between calls in this session")
			assert.Contains(t, tool.Description, "reset_js clears the state")
		}
	}
	assert.ElementsMatch(t, []string{"run_js", "reset_js"}, names)

	assert.Equal(t, `{"result":3,"logs":[]}`, text(t, runJS(t, a, "run_js", "const n = (await shapes.get_json({n: 3})).n; n")))
	assert.Equal(t, `{"result":4,"logs":[]}`, text(t, runJS(t, a, "run_js", "n + 1")))
	assert.Contains(t, text(t, runJS(t, b, "run_js", "n")), "n is not defined")
	res := runJS(t, a, "run_js", "const n = 1")
	assert.True(t, res.IsError, "declaring n again is an error")
	assert.Equal(t, `{"result":3,"logs":[]}`, text(t, runJS(t, a, "run_js", "n")))
	_, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "reset_js", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, `{"result":"undefined","logs":[]}`, text(t, runJS(t, a, "run_js", "typeof n")))
}
