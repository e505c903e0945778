package eino_test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmeino "github.com/codemode-go/codemode/adapters/eino"
)

// finalAnswer is an agent's stop tool, kept plain beside the code tool.
type finalAnswer struct{}

func (finalAnswer) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "final_answer", Desc: "Ends the task."}, nil
}

func (finalAnswer) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return "done", nil
}

// TestToolsNode: Eino's own ToolsNode runs the model's calls: run_js's
// program (a failing one answered with the error JSON, a working one with
// its result) and the plain stop tool beside it.
func TestToolsNode(t *testing.T) {
	ctx := context.Background()
	cm, err := codemode.NewCodeModeTool(nil, codemode.Limits{Deadline: 10 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	info, err := cmeino.Tool(cm).Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, "run_js", info.Name)
	js, err := info.ParamsOneOf.ToJSONSchema()
	require.NoError(t, err)
	assert.Equal(t, []string{"code"}, js.Required)

	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{cmeino.Tool(cm), finalAnswer{}}})
	require.NoError(t, err)
	out, err := node.Invoke(ctx, &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{
		{ID: "c1", Function: schema.FunctionCall{Name: "run_js", Arguments: `{"code":"return nope()"}`}},
		{ID: "c2", Function: schema.FunctionCall{Name: "run_js", Arguments: `{"code":"console.log('hi'); return [1, 2].length"}`}},
		{ID: "c3", Function: schema.FunctionCall{Name: "final_answer", Arguments: `{}`}},
	}})
	require.NoError(t, err)
	require.Len(t, out, 3)
	byID := map[string]string{}
	for _, m := range out {
		byID[m.ToolCallID] = m.Content
	}
	assert.Contains(t, byID["c1"], `"kind":"js"`)
	assert.Contains(t, byID["c1"], "nope is not defined")
	assert.Equal(t, `{"result":2,"logs":["hi"]}`, byID["c2"])
	assert.Equal(t, "done", byID["c3"])
}
