package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPHTTP: an upstream reached over streamable HTTP with the config's
// headers, and code mode served over streamable HTTP (--http), driven by
// the SDK's client; both listen on 127.0.0.1 and stop with the test.
func TestMCPHTTP(t *testing.T) {
	upstream := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	upstream.AddTool(&mcp.Tool{Name: "whoami", Description: "Says who called.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"token": req.Extra.Header.Get("X-Token")}}, nil
		})
	var seen atomic.Int64
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()

	cfg := filepath.Join(t.TempDir(), "servers.json")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"remote": {"url": %q, "headers": {"X-Token": "s3cret"}}}}`, ts.URL), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"mcp", "--config", cfg, "--http", "127.0.0.1:0"}, nil, io.Discard, pw)
		pw.Close()
	}()
	lines := logLines(pr)
	url := addressIn(t, lines, `serving streamable HTTP on (http://\S+)`)
	go func() {
		for range lines { // keep draining
		}
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": "return (await remote.whoami()).token"}})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	b, _ := json.Marshal(res.StructuredContent)
	assert.JSONEq(t, `{"result":"s3cret","logs":[]}`, string(b))
	assert.Positive(t, seen.Load())
	cs.Close()
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("codemode mcp --http did not stop with its context")
	}
}
