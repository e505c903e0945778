package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzTaskMessages: whatever a client sends as a tools/call's or a
// tasks/* request's params, the transport's handling neither panics nor
// answers anything but a JSON-RPC response to that request.
func FuzzTaskMessages(f *testing.F) {
	f.Add("tasks/get", `{"taskId":"x"}`)
	f.Add("tasks/cancel", `{"taskId":null}`)
	f.Add("tools/call", `{"name":"run_js","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"codemode/task":1}}`)
	f.Add("tools/call", `{"_meta":[]}`)
	f.Fuzz(func(t *testing.T, method, params string) {
		id, _ := jsonrpc.MakeID(float64(7))
		req := &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}
		switch method {
		case "tools/call":
			c := &taskConn{offered: map[jsonrpc.ID]string{}}
			c.offer(req)
			for _, tid := range c.offered {
				tasks.drop(tid)
			}
		default:
			r := answerTask(req)
			if r.ID != id || (r.Error == nil) == (r.Result == nil) {
				t.Fatalf("answerTask(%q, %q) = %+v", method, params, r)
			}
		}
	})
}

// TestTaskBytesBounded: finished tasks' results are bounded in all; the
// oldest go first.
func TestTaskBytesBounded(t *testing.T) {
	tt := &taskTable{m: map[string]*task{}}
	big := strings.Repeat("x", 1<<20)
	now := time.Now()
	var ids []string
	for i := range 80 {
		tk := tt.create(now)
		tt.claim(context.Background(), tk.id)
		tt.finish(tk, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, now.Add(time.Duration(i)*time.Millisecond))
		ids = append(ids, tk.id)
	}
	if tt.bytes > MaxTaskBytes {
		t.Fatalf("the finished tasks keep %d bytes, past %d", tt.bytes, MaxTaskBytes)
	}
	if _, ok := tt.get(ids[0]); ok {
		t.Fatalf("the oldest task was kept")
	}
	if j, ok := tt.get(ids[79]); !ok || j.Status != "completed" || len(j.Result) < 1<<20 {
		t.Fatalf("the newest task: %v %s", ok, j.Status)
	}
}
