package mcp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	cmcp "github.com/codemode-go/codemode/mcp"
)

// BenchmarkUpstreamCall is one upstream tool call over an in-memory
// transport: straight through the session, and through the provider's
// dispatch (argument parsing, the call, unwrapping into the envelope).
func BenchmarkUpstreamCall(b *testing.B) {
	ctx := context.Background()
	cs := connect(b, upstreamServer(nil))
	up, err := cmcp.NewUpstream(ctx, "shapes", cs)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get.json", Arguments: map[string]any{"n": 1}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("provider", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := up.Dispatch(ctx, "shapes", "get_json", `{"n":1}`); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTenCalls is what Code Mode saves a client: ten upstream calls
// made by the client one after another, against one code-mode call whose
// program makes the ten (all in memory: a real client also pays its model
// a round trip per call it makes).
func BenchmarkTenCalls(b *testing.B) {
	ctx := context.Background()
	direct := connect(b, upstreamServer(nil))
	code := codeClient(b, cmcp.ServerOptions{}, nil, nil)
	b.Run("ten-direct-calls", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range 10 {
				if _, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "get.json", Arguments: map[string]any{"n": i}}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("one-program", func(b *testing.B) {
		b.ReportAllocs()
		prog := "let s = 0; for (let i = 0; i < 10; i++) s += (await shapes.get_json({n: i})).n; return s"
		for b.Loop() {
			res, err := code.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": prog}})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("one-program-parallel-calls", func(b *testing.B) {
		b.ReportAllocs()
		prog := "return (await Promise.all(Array.from({length: 10}, (_, i) => shapes.get_json({n: i})))).length"
		for b.Loop() {
			res, err := code.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": prog}})
			if err != nil || res.IsError {
				b.Fatal(fmt.Sprint(err, res))
			}
		}
	})
}
