package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// childEnv makes the test binary an MCP server on stdio (childServer).
const childEnv = "CODEMODE_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		childServer()
		return
	}
	os.Exit(m.Run())
}

// childServer serves env (its environment), cwd, big (a 20 MiB reply)
// and ping over stdio until stdin closes.
func childServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "child", Version: "1"}, nil)
	add := func(name string, f func() any) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(f())
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	}
	add("env", func() any { return os.Environ() })
	add("cwd", func() any { d, _ := os.Getwd(); return d })
	add("big", func() any { return strings.Repeat("x", 20<<20) })
	add("ping", func() any { return "pong" })
	s.Run(context.Background(), &mcp.StdioTransport{})
}

// childEntry is the config entry running childServer.
func childEntry(t *testing.T) map[string]any {
	exe, err := os.Executable()
	require.NoError(t, err)
	return map[string]any{"command": exe, "env": map[string]string{childEnv: "1", "CONFIGURED": "yes"}}
}

// writeConfig writes a config file and reads it.
func writeConfig(t *testing.T, servers map[string]any) (*cmcp.Config, error) {
	b, err := json.Marshal(map[string]any{"mcpServers": servers, "globalShortcut": "Ctrl+Space"})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "servers.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return cmcp.ReadConfig(path)
}

// startConfig starts a config, and closes its upstreams when the test ends.
func startConfig(t *testing.T, c *cmcp.Config) ([]*cmcp.Upstream, []error) {
	ups, errs := c.Start(context.Background())
	t.Cleanup(func() {
		for _, u := range ups {
			u.Close()
		}
	})
	return ups, errs
}

// upstreamNames are the upstreams' names, in order.
func upstreamNames(ups []*cmcp.Upstream) []string {
	var ns []string
	for _, u := range ups {
		ns = append(ns, u.Name())
	}
	return ns
}

// TestStdioEnvironment: a stdio server sees our PATH and its own env and
// cwd, not the rest of our environment; a disabled server is not started.
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("SECRET_OF_PARENT", "hunter2")
	dir := t.TempDir()
	entry := childEntry(t)
	entry["cwd"] = dir
	c, err := writeConfig(t, map[string]any{"child": entry, "off": map[string]any{"command": "/nonexistent/server", "disabled": true}})
	require.NoError(t, err)
	ups, errs := startConfig(t, c)
	require.Empty(t, errs)
	require.Equal(t, []string{"child"}, upstreamNames(ups))
	ctx := context.Background()

	out, err := ups[0].Dispatch(ctx, "child", "env", `{}`)
	require.NoError(t, err)
	var env struct{ Result []string }
	require.NoError(t, json.Unmarshal([]byte(out), &env))
	assert.Contains(t, env.Result, "PATH="+os.Getenv("PATH"))
	assert.Contains(t, env.Result, "CONFIGURED=yes")
	for _, kv := range env.Result {
		assert.False(t, strings.HasPrefix(kv, "SECRET_OF_PARENT="), "Dispatch(env) = %s; want no SECRET_OF_PARENT", out)
	}

	out, err = ups[0].Dispatch(ctx, "child", "cwd", `{}`)
	require.NoError(t, err)
	var cwd struct{ Result string }
	require.NoError(t, json.Unmarshal([]byte(out), &cwd))
	want, _ := filepath.EvalSymlinks(dir)
	got, _ := filepath.EvalSymlinks(cwd.Result)
	assert.Equal(t, want, got)
}

// TestOversizedReply: a reply past 16 MiB fails its call saying so, and
// the restarting upstream serves the next call on a new session.
func TestOversizedReply(t *testing.T) {
	c, err := writeConfig(t, map[string]any{"child": childEntry(t)})
	require.NoError(t, err)
	ups, errs := startConfig(t, c)
	require.Empty(t, errs)
	ctx := context.Background()
	_, err = ups[0].Dispatch(ctx, "child", "big", `{}`)
	require.ErrorContains(t, err, "child.big: the reply was larger than 16 MiB")
	require.ErrorContains(t, err, "it is restarted for later calls")
	out, err := ups[0].Dispatch(ctx, "child", "ping", `{}`)
	require.NoError(t, err)
	assert.Equal(t, `{"result":"pong"}`, out)
}

// TestSessionEnds: a session whose server ended between calls is seen as
// gone: a Reconnecting upstream serves the next call on a new session;
// one of NewUpstream says the server is gone for good, never that it
// restarts.
func TestSessionEnds(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var servers []*mcp.ServerSession
	var clients []*mcp.ClientSession
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := upstreamServer(nil).Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		servers, clients = append(servers, ss), append(clients, cs)
		mu.Unlock()
		return cs, nil
	}
	// end closes the server's side of the latest session and waits until
	// the client's side has ended.
	end := func() {
		mu.Lock()
		ss, cs := servers[len(servers)-1], clients[len(clients)-1]
		mu.Unlock()
		ss.Close()
		cs.Wait()
	}

	up, err := cmcp.Reconnecting(ctx, "shapes", connect)
	require.NoError(t, err)
	defer up.Close()
	end()
	out, err := up.Dispatch(ctx, "shapes", "get_json", `{"n": 1}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":{"n":1}}`, out)

	cs, err := connect(ctx)
	require.NoError(t, err)
	defer cs.Close()
	fixed, err := cmcp.NewUpstream(ctx, "shapes", cs)
	require.NoError(t, err)
	end()
	for range 2 {
		_, err = fixed.Dispatch(ctx, "shapes", "get_json", `{"n": 1}`)
		require.Error(t, err)
		assert.Regexp(t, "gone for good|does not restart it", err.Error())
		assert.NotContains(t, err.Error(), "restarted")
	}
}

// listingServer is upstreamServer with list answering tools/list (nil:
// the server's own answer).
func listingServer(list func(ctx context.Context, cursor string) (*mcp.ListToolsResult, error)) *mcp.Server {
	s := upstreamServer(nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" || list == nil {
				return next(ctx, method, req)
			}
			return list(ctx, req.GetParams().(*mcp.ListToolsParams).Cursor)
		}
	})
	return s
}

// serveUpstreams serves each server at /<name> on 127.0.0.1 and returns the
// config of them.
func serveUpstreams(t *testing.T, servers map[string]*mcp.Server) *cmcp.Config {
	mux := http.NewServeMux()
	c := &cmcp.Config{Servers: map[string]cmcp.ServerConfig{}}
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	for name, s := range servers {
		mux.Handle("/"+name, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		c.Servers[name] = cmcp.ServerConfig{URL: hs.URL + "/" + name}
	}
	return c
}

// startWithin is Start, failing the test if it does not return within
// minutes (it returns within about 30 s, the bound on listing).
func startWithin(t *testing.T, c *cmcp.Config) ([]*cmcp.Upstream, []error) {
	type started struct {
		ups  []*cmcp.Upstream
		errs []error
	}
	done := make(chan started, 1)
	go func() {
		ups, errs := c.Start(context.Background())
		done <- started{ups, errs}
	}()
	select {
	case s := <-done:
		t.Cleanup(func() {
			for _, u := range s.ups {
				u.Close()
			}
		})
		return s.ups, s.errs
	case <-time.After(3 * time.Minute):
		t.Fatal("Start did not return")
		return nil, nil
	}
}

// TestStartBoundsListing: listing a server's tools is bounded in pages,
// tools and time; the servers past a bound are reported, naming it, and
// the others served.
func TestStartBoundsListing(t *testing.T) {
	t.Parallel()
	page := func(tools int) func(context.Context, string) (*mcp.ListToolsResult, error) {
		return func(_ context.Context, cursor string) (*mcp.ListToolsResult, error) {
			res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: cursor + "+"}
			for i := range tools {
				res.Tools = append(res.Tools, &mcp.Tool{Name: fmt.Sprintf("t%d_%d", len(cursor), i), InputSchema: map[string]any{"type": "object"}})
			}
			return res, nil
		}
	}
	release := make(chan struct{}) // the mute server's handler, which the SDK never cancels
	c := serveUpstreams(t, map[string]*mcp.Server{
		"endless": listingServer(page(0)),
		"crowd":   listingServer(page(1000)),
		"mute": listingServer(func(ctx context.Context, _ string) (*mcp.ListToolsResult, error) {
			select {
			case <-ctx.Done():
			case <-release:
			}
			return nil, errors.New("released")
		}),
		"good": listingServer(nil),
	})
	t.Cleanup(func() { close(release) })
	ups, errs := startWithin(t, c)
	assert.Equal(t, []string{"good"}, upstreamNames(ups))
	require.Len(t, errs, 3)
	assert.ErrorContains(t, errs[0], `mcp server "crowd": mcp: listing the tools of crowd: more than 5000 tools (the bound on tools)`)
	assert.ErrorContains(t, errs[1], `mcp server "endless": mcp: listing the tools of endless: more than 500 pages (the bound on pages`)
	assert.ErrorContains(t, errs[2], `mcp server "mute": mcp: listing the tools of mute took longer than 30s (the bound on listing)`)
}

// TestStartConcurrently: servers start at once: a server whose listing
// waits for another's does not hold it up.
func TestStartConcurrently(t *testing.T) {
	t.Parallel()
	listed, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c := serveUpstreams(t, map[string]*mcp.Server{
		"a": listingServer(func(ctx context.Context, _ string) (*mcp.ListToolsResult, error) {
			select {
			case <-listed:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
				return nil, errors.New("released")
			}
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "x", InputSchema: map[string]any{"type": "object"}}}}, nil
		}),
		"b": listingServer(func(context.Context, string) (*mcp.ListToolsResult, error) {
			once.Do(func() { close(listed) })
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "y", InputSchema: map[string]any{"type": "object"}}}}, nil
		}),
	})
	t.Cleanup(func() { close(release) })
	ups, errs := startWithin(t, c)
	require.Empty(t, errs)
	assert.Equal(t, []string{"a", "b"}, upstreamNames(ups))
}

// TestReadConfigKeys: the keys the desktop clients write are taken, any
// other is refused naming it and the server, and type must agree with
// command or url.
func TestReadConfigKeys(t *testing.T) {
	t.Parallel()
	c, err := writeConfig(t, map[string]any{
		"cline": map[string]any{"command": "x", "args": []string{"-y"}, "env": map[string]string{"K": "v"}, "cwd": "/tmp",
			"type": "stdio", "disabled": true, "autoApprove": []string{"t"}, "timeout": 60},
		"roo":    map[string]any{"url": "http://127.0.0.1:1/mcp", "type": "streamable-http", "alwaysAllow": []string{}, "headers": map[string]string{"A": "b"}},
		"cline2": map[string]any{"url": "http://127.0.0.1:1/mcp", "type": "streamableHttp"},
		"legacy": map[string]any{"url": "http://127.0.0.1:1/sse", "transportType": "sse"},
		"code":   map[string]any{"url": "http://127.0.0.1:1/mcp", "type": "http"},
	})
	require.NoError(t, err)
	assert.Equal(t, cmcp.ServerConfig{Type: "stdio", Command: "x", Args: []string{"-y"}, Env: map[string]string{"K": "v"}, Dir: "/tmp", Disabled: true}, c.Servers["cline"])
	assert.Equal(t, "sse", c.Servers["legacy"].Type)

	for _, tt := range []struct {
		entry map[string]any
		want  string
	}{
		{map[string]any{"command": "x", "envFile": ".env"}, `server "s": unknown key "envFile"`},
		{map[string]any{"comand": "x"}, `server "s": unknown key "comand"`},
		{map[string]any{"command": "x", "type": "sse"}, `server "s": type "sse" takes a url, not a command`},
		{map[string]any{"url": "http://x", "type": "stdio"}, `server "s": type "stdio" takes a command, not a url`},
		{map[string]any{"url": "http://x", "type": "websocket"}, `server "s": type "websocket" is none of`},
		{map[string]any{"url": "http://x", "cwd": "/"}, `server "s": cwd is for a command`},
		{map[string]any{"command": "x", "url": "http://x"}, `server "s": give exactly one of command and url`},
		{map[string]any{"command": "x", "disabled": "yes"}, `server "s": json: cannot unmarshal`},
	} {
		_, err := writeConfig(t, map[string]any{"s": tt.entry})
		assert.ErrorContains(t, err, tt.want, "%v", tt.entry)
	}
}

// TestReadVSCodeConfig: VS Code's .vscode/mcp.json ("servers", each with
// its "type"; "inputs" beside) is read as the desktop clients' file is; a
// value using VS Code's variables is refused, naming where, and a file
// with both shapes is refused.
func TestReadVSCodeConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(body string) (*cmcp.Config, error) {
		p := filepath.Join(dir, "mcp.json")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return cmcp.ReadConfig(p)
	}
	c, err := write(`{"inputs": [{"type": "promptString", "id": "token"}],
 "servers": {
  "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"K": "v"}},
  "docs": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}}}}`)
	require.NoError(t, err)
	assert.Equal(t, cmcp.ServerConfig{Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"},
		Env: map[string]string{"K": "v"}}, c.Servers["memory"])
	assert.Equal(t, cmcp.ServerConfig{Type: "http", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"A": "b"}}, c.Servers["docs"])

	_, err = write(`{"servers": {"gh": {"type": "stdio", "command": "gh-mcp", "env": {"TOKEN": "${input:token}"}}}}`)
	assert.ErrorContains(t, err, `server "gh": env.TOKEN uses a VS Code variable ("${input:token}"): give the value itself`)
	_, err = write(`{"servers": {"a": {"command": "x"}}, "mcpServers": {"b": {"command": "y"}}}`)
	assert.ErrorContains(t, err, `both "mcpServers" and "servers"`)
	_, err = write(`{"other": {}}`)
	assert.ErrorContains(t, err, `no "mcpServers" (or VS Code's "servers")`)
}

// TestSSEType: "type": "sse" reaches a server over the 2024 HTTP+SSE
// transport.
func TestSSEType(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return upstreamServer(nil) }, nil))
	t.Cleanup(hs.Close)
	c, err := writeConfig(t, map[string]any{"old": map[string]any{"url": hs.URL, "type": "sse"}})
	require.NoError(t, err)
	ups, errs := startConfig(t, c)
	require.Empty(t, errs)
	out, err := ups[0].Dispatch(context.Background(), "old", "get_json", `{"n": 2}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":{"n":2}}`, out)
}

// TestEveryDeclaredToolIsCallable: every tool declared to the model is a
// function the program can call by its declared name, whatever the MCP
// name: then (renamed then_, saying so), the names of Object.prototype,
// reserved words.
func TestEveryDeclaredToolIsCallable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mcpNames := []string{"then", "constructor", "__proto__", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf",
		"__defineGetter__", "toJSON", "prototype", "length", "name", "caller", "arguments", "delete", "Symbol.iterator"}
	s := mcp.NewServer(&mcp.Implementation{Name: "evil", Version: "1"}, nil)
	for _, n := range mcpNames {
		s.AddTool(&mcp.Tool{Name: n, Description: "Tool " + n + ".", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: n}, nil
			})
	}
	up, err := cmcp.NewUpstream(ctx, "evil", connect(t, s))
	require.NoError(t, err)
	p := up.Provider()
	require.Len(t, p.Tools, len(mcpNames))
	assert.Contains(t, p.Tools, "then_")
	decl := codemode.ProviderDeclarations([]codemode.Provider{p})
	assert.Contains(t, decl, `The MCP tool "then": then_ here`)

	r, err := cmcp.NewRouter(up)
	require.NoError(t, err)
	var calls []string
	for _, js := range p.Tools {
		assert.Contains(t, decl, js+"(")
		calls = append(calls, "evil."+js+"({})")
	}
	code := "async () => await Promise.all([" + strings.Join(calls, ", ") + "])"
	res := newExec(t).Execute(ctx, codemode.Request{Code: code, Providers: r.Providers(), Dispatch: r.Dispatch})
	require.Empty(t, res.Error, code)
	var got []string
	require.NoError(t, json.Unmarshal(res.Result, &got))
	assert.ElementsMatch(t, mcpNames, got)

	// then_ is taken: the two are refused, naming both.
	s.AddTool(&mcp.Tool{Name: "then_", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	_, err = cmcp.NewUpstream(ctx, "evil", connect(t, s))
	require.ErrorContains(t, err, `tools "then" and "then_" both become then_`)
}
