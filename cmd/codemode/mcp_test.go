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
	require.Len(t, tools.Tools, 1)
	assert.Equal(t, "run_js", tools.Tools[0].Name)
	assert.Contains(t, tools.Tools[0].Description, "Adds a and b.")
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
