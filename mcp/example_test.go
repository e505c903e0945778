package mcp_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

// ExampleNewUpstream hands an MCP server's tools to a program: here a
// server in the same process, over the SDK's in-memory transport.
func ExampleNewUpstream() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "get-forecast", Description: "The forecast for a city.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"high": 21, "sky": "clear"}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		panic(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer session.Close()

	weather, err := cmcp.NewUpstream(ctx, "weather", session)
	if err != nil {
		panic(err)
	}
	router, err := cmcp.NewRouter(weather)
	if err != nil {
		panic(err)
	}
	exec, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	res := exec.Execute(ctx, codemode.Request{
		Code:      `async () => { const f = await weather.get_forecast({city: "Oslo"}); return f.sky + ", " + f.high }`,
		Providers: router.Providers(),
		Dispatch:  router.Dispatch,
	})
	fmt.Println(string(res.Result), res.Error)
	// Output: "clear, 21"
}
