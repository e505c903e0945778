package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

// FuzzUnwrap: any tools/call result an MCP server sends (as the SDK
// decodes it) unwraps to the dispatch's envelope — one JSON object with
// "result" or "error" (a string) — or to an error saying it does not
// encode; and the envelope reaches a program as a value or an Error it
// catches, never as the dispatch's defect (MsgOutsideEnvelope).
func FuzzUnwrap(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"{\"a\":1}"}]}`,
		`{"content":[{"type":"text","text":"plain"},{"type":"text","text":"two"}]}`,
		`{"content":[{"type":"text","text":"no"}],"isError":true}`,
		`{"content":[],"isError":true}`,
		`{"content":[],"structuredContent":{"n":[1,2]}}`,
		`{"content":[{"type":"image","data":"AQID","mimeType":"image/png"}]}`,
		`{"content":[{"type":"audio","data":"","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"mem://a","mimeType":"text/plain","text":"hi"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"mem://b","blob":"AAEC"}}]}`,
		`{"content":[{"type":"text","text":"[1, 2"}]}`,
		`{"content":[{"type":"text","text":"{\"__executor_handle_v1__\":1}"}]}`,
		`{"content":[{"type":"text","text":"\u2028"}],"structuredContent":null}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Memory: 16 << 20, Deadline: 5 * time.Second})) // the program cannot loop: a timeout would be the input's hang
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	const code = `async () => {
  try {
    const v = await u.t();
    return {ok: v === undefined ? null : v};
  } catch (e) {
    return {caught: String(e && e.message)};
  }
}`
	f.Fuzz(func(t *testing.T, data []byte) {
		var res mcp.CallToolResult
		if json.Unmarshal(data, &res) != nil {
			return
		}
		env, err := cmcp.Unwrap(&res)
		if err != nil {
			return // "the tool's result does not encode": the dispatch's error, caught by the program as such
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(env), &obj); err != nil || len(obj) != 1 {
			t.Fatalf("Unwrap(%s) = %q: not an envelope of one key", data, env)
		}
		if raw, ok := obj["error"]; ok {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				t.Fatalf("Unwrap(%s) = %q: the error is not a string", data, env)
			}
		} else if _, ok := obj["result"]; !ok {
			t.Fatalf("Unwrap(%s) = %q: neither result nor error", data, env)
		}
		if _, err := codemode.ParseForDispatch(env); err != nil {
			t.Fatalf("Unwrap(%s) = %q: the codec cannot read it: %v", data, env, err)
		}
		out := e.Execute(context.Background(), codemode.Request{Code: code, Providers: []codemode.Provider{{Name: "u", Tools: []string{"t"}}},
			Dispatch: func(context.Context, string, string, string) (string, error) { return env, nil }})
		if out.Error != "" {
			if out.Err != nil && out.Err.Kind == codemode.KindMemoryExceeded {
				return
			}
			t.Fatalf("envelope %q: the program did not finish: %s", env, out.Error)
		}
		var got struct {
			Caught *string `json:"caught"`
		}
		json.Unmarshal(out.Result, &got)
		if got.Caught != nil && *got.Caught == codemode.MsgOutsideEnvelope {
			t.Fatalf("envelope %q reached the program as the dispatch's defect", env)
		}
	})
}
