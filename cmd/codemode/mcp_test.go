package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPServe drives `codemode mcp --config` (a real process on stdio,
// over a real stdio MCP server it starts) with the SDK's own client: the
// tool list, a program calling two upstream tools at once, a throwing
// program, a cancelled one, and an upstream killed mid-call and restarted.
func TestMCPServe(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil,
		`{"mcpServers": {"calc": {"command": %q}, "broken": {"command": "/nonexistent/server"}}}`, selfAs(t, "fakemcp")), 0o644))
	cmd := exec.Command(selfAs(t, "codemode"), "mcp", "--config", cfg, "--deadline", "20s")
	var stderr tail
	stderr.max = 4096
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 2, "run_js, and reset_js: --sessions is on by default")
	assert.Equal(t, "reset_js", tools.Tools[0].Name)
	assert.Equal(t, "run_js", tools.Tools[1].Name)
	assert.Contains(t, tools.Tools[1].Description, "Adds a and b.")
	assert.Contains(t, stderr.String(), `mcp server "broken"`)

	call := func(ctx context.Context, code string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": code}})
	}
	res, err := call(ctx, "const [s, e] = await Promise.all([calc.add({a: 2, b: 3}), calc.echo({x: [1, 'y']})]); return {sum: s.sum, echoed: e}")
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	b, _ := json.Marshal(res.StructuredContent)
	assert.JSONEq(t, `{"result":{"sum":5,"echoed":[1,"y"]},"logs":[]}`, string(b))

	res, err = call(ctx, "throw new TypeError('bad program')")
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "TypeError: bad program")

	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = call(cctx, "return await calc.block()")
	cancel()
	require.Error(t, err)

	res, err = call(ctx, "try { await calc.die() } catch (e) { return 'caught: ' + e.message }")
	require.NoError(t, err)
	require.False(t, res.IsError)
	b, _ = json.Marshal(res.StructuredContent)
	assert.Contains(t, string(b), "caught: calc.die: the MCP server calc went away during the call (")
	assert.Contains(t, string(b), "); it is restarted for later calls")

	// Restarted (after its backoff) for the next call.
	res, err = call(ctx, "return (await calc.add({a: 40, b: 2})).sum")
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	b, _ = json.Marshal(res.StructuredContent)
	assert.JSONEq(t, `{"result":42,"logs":[]}`, string(b))
}

// TestMCPGoverned drives `codemode mcp --policy --key-file` with the SDK's
// client: a gated call asks the client's user (elicitation), and a client
// without elicitation gets the paused result and resumes through
// resume_js.
func TestMCPGoverned(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"calc": {"command": %q}}}`, selfAs(t, "fakemcp")), 0o644))
	policy := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(policy, []byte(`{"tools": {"calc.echo": {"requires_approval": true}}}`), 0o644))
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	connect := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		cmd := exec.Command(selfAs(t, "codemode"), "mcp", "--config", cfg, "--deadline", "20s", "--policy", policy, "--key-file", key)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ctx := context.Background()
	code := map[string]any{"code": "const s = await calc.add({a: 2, b: 3}); return await calc.echo({x: s.sum})"}
	structured := func(res *mcp.CallToolResult) string {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}

	asked := 0
	cs := connect(&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: code})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content)
	assert.JSONEq(t, `{"result":5,"logs":[]}`, structured(res))
	assert.Equal(t, 1, asked)

	cs = connect(nil)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"run_js", "resume_js", "reset_js"}, names)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: code})
	require.NoError(t, err)
	var out struct {
		Paused struct{ Tool, Continuation string }
	}
	require.NoError(t, json.Unmarshal([]byte(structured(res)), &out))
	assert.Equal(t, "calc.echo", out.Paused.Tool)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "resume_js", Arguments: map[string]any{
		"continuation": out.Paused.Continuation, "approve": false, "reason": "no echoes today"}})
	require.NoError(t, err)
	assert.True(t, res.IsError, "an uncaught rejection fails the program")
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `tool \"calc.echo\" was rejected: no echoes today`)
}

// TestMCPTraces: `codemode mcp --trace-file` records each run_js call
// with its upstream calls as children, written when the server exits.
func TestMCPTraces(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"calc": {"command": %q}}}`, selfAs(t, "fakemcp")), 0o644))
	traces := filepath.Join(dir, "traces.jsonl")
	cmd := exec.Command(selfAs(t, "codemode"), "mcp", "--config", cfg, "--deadline", "20s", "--trace-file", traces)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": "return (await calc.add({a: 1, b: 2})).sum"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, cs.Close()) // the server exits, flushing its spans
	b, err := os.ReadFile(traces)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name":"codemode.execute"`)
	assert.Contains(t, string(b), `"name":"execute_tool calc.add"`)
}

// TestMCPTypecheck: codemode mcp --typecheck enforce refuses a program
// that calls a tool the server does not have, before it runs, with its
// position; its description says programs are checked.
func TestMCPTypecheck(t *testing.T) {
	if os.Getenv("CODEMODE_TSC") == "" && os.Getenv("CODEMODE_TSC_REQUIRED") == "" {
		t.Skip("no TypeScript 7 checker (CODEMODE_TSC)")
	}
	cfg := filepath.Join(t.TempDir(), "servers.json")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"calc": {"command": %q}}}`, selfAs(t, "fakemcp")), 0o644))
	cmd := exec.Command(selfAs(t, "codemode"), "mcp", "--config", cfg, "--typecheck", "enforce")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		if tool.Name == "run_js" {
			assert.Contains(t, tool.Description, "type-checked against these declarations")
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": "return await calc.ad({a: 1, b: 2})"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, `"kind":"type_error"`)
	assert.Contains(t, text, `"line":1,"column":19`)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": "return (await calc.add({a: 1, b: 2})).sum"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
}
