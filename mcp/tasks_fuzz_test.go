package mcp

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
