package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

// ledger is an upstream MCP server with a read and a write, counting calls.
type ledger struct {
	mu     sync.Mutex
	reads  int
	writes []string
}

func (l *ledger) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ledger", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "read", Description: "Reads a record.", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		l.mu.Lock()
		l.reads++
		l.mu.Unlock()
		return &mcp.CallToolResult{StructuredContent: map[string]any{"total": 10}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "write", Description: "Writes a sum.", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		l.mu.Lock()
		l.writes = append(l.writes, string(req.Params.Arguments))
		l.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `"written"`}}}, nil
	})
	return s
}

// governedClient serves code mode over a ledger, its writes gated, to a
// client with copts.
func governedClient(t *testing.T, l *ledger, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: 10 * time.Second}),
		codemode.WithGovernance(codemode.Governance{
			Tools: map[string]codemode.ToolPolicy{"ledger.write": {RequiresApproval: true}},
			Key:   bytes.Repeat([]byte("k"), 32),
		}))
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	up, err := cmcp.NewUpstream(context.Background(), "ledger", connect(t, l.server()))
	require.NoError(t, err)
	r, err := cmcp.NewRouter(up)
	require.NoError(t, err)
	srv, err := cmcp.NewServer(e, r, cmcp.ServerOptions{Resume: true})
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, copts).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

const ledgerProgram = `let sum = 0
for (const id of [1, 2, 3]) sum += (await ledger.read({id})).total
try { return {sum, wrote: await ledger.write({sum})} } catch (e) { return {sum, refused: e.message} }`

func structured(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return string(b)
}

// TestElicitedApproval: a client that supports elicitation is asked (a
// multi round-trip request: the paused program's continuation is the
// request state), and its user's answer decides the call.
func TestElicitedApproval(t *testing.T) {
	l := &ledger{}
	var asked []string
	answer := map[string]any{"approve": true}
	cs := governedClient(t, l, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
	}})
	ctx := context.Background()
	call := func() string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": ledgerProgram}})
		require.NoError(t, err)
		require.False(t, res.IsError, res.Content)
		return structured(t, res)
	}
	assert.JSONEq(t, `{"result":{"sum":30,"wrote":"written"},"logs":[]}`, call())
	require.Len(t, asked, 1)
	assert.Equal(t, `A program wants to call ledger.write with {"sum":30}. Approve it?`, asked[0])

	answer = map[string]any{"approve": false, "reason": "not now"}
	assert.JSONEq(t, `{"result":{"sum":30,"refused":"tool \"ledger.write\" was rejected: not now"},"logs":[]}`, call())

	answer = map[string]any{"approve": true, "args": `{"sum":31}`}
	call()
	assert.Equal(t, []string{`{"sum":30}`, `{"sum":31}`}, l.writes, "the edited arguments reach the tool")
	assert.Equal(t, 9, l.reads, "three programs read three records each, none twice")
}

// TestPausedOverMCP: a client without elicitation gets the paused result;
// the resume tool goes on, running the write once and no read again.
func TestPausedOverMCP(t *testing.T) {
	l := &ledger{}
	cs := governedClient(t, l, nil)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": ledgerProgram}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	var out struct {
		Paused struct {
			Tool, Continuation, Expires string
			Args                        json.RawMessage
		}
	}
	require.NoError(t, json.Unmarshal([]byte(structured(t, res)), &out))
	assert.Equal(t, "ledger.write", out.Paused.Tool)
	assert.JSONEq(t, `{"sum":30}`, string(out.Paused.Args))
	assert.Equal(t, 3, l.reads)
	assert.Empty(t, l.writes)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "resume_js", Arguments: map[string]any{
		"continuation": out.Paused.Continuation, "approve": true}})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content)
	assert.JSONEq(t, `{"result":{"sum":30,"wrote":"written"},"logs":[]}`, structured(t, res))
	assert.Equal(t, 3, l.reads, "no read runs again")
	assert.Equal(t, []string{`{"sum":30}`}, l.writes)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "resume_js", Arguments: map[string]any{
		"continuation": out.Paused.Continuation[:20], "approve": true}})
	require.NoError(t, err)
	assert.True(t, res.IsError, "a truncated continuation is refused")
	assert.Len(t, l.writes, 1)
}
