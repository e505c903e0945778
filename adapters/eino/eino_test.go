package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmeino "github.com/codemode-go/codemode/adapters/eino"
	"github.com/codemode-go/codemode/internal/fakeapi"
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

// scripted is a tool-calling chat model answering with its messages in
// turn, keeping what it was asked and the tools it was bound to.
type scripted struct {
	replies []*schema.Message
	inputs  *[][]*schema.Message
	bound   *[]string // the names of the tools it was last bound to
}

func (m *scripted) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	*m.inputs = append(*m.inputs, in)
	if len(*m.inputs) > len(m.replies) {
		return nil, errors.New("no reply left")
	}
	return m.replies[len(*m.inputs)-1], nil
}

func (m *scripted) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, errors.New("not streamed")
}

func (m *scripted) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	*m.bound = nil
	for _, t := range tools {
		*m.bound = append(*m.bound, t.Name)
	}
	c := *m
	return &c, nil
}

type cityInput struct {
	City string `json:"city" jsonschema:"required"`
}

// TestReactAgent: Eino's react agent runs an agent whose tools went
// through CodeMode: run_js over the two wrapped tools (called at once by a
// program with Promise.all) and the plain stop tool, returned directly.
func TestReactAgent(t *testing.T) {
	ctx := context.Background()
	overlap := fakeapi.Overlap(2)
	weather, err := utils.InferTool("get_weather", "Current weather of a city.", func(_ context.Context, in cityInput) (map[string]any, error) {
		return map[string]any{"city": in.City, "celsius": 21}, overlap()
	})
	require.NoError(t, err)
	population, err := utils.InferTool("population", "Population of a city.", func(_ context.Context, in cityInput) (int, error) {
		return 2100000, overlap()
	})
	require.NoError(t, err)
	final, err := utils.InferTool("final_answer", "Ends the task.", func(_ context.Context, in struct {
		Answer string `json:"answer"`
	}) (string, error) {
		return "answer: " + in.Answer, nil
	})
	require.NoError(t, err)

	_, _, err = cmeino.CodeMode(ctx, []tool.BaseTool{weather}, []string{"final"}, codemode.Limits{})
	require.EqualError(t, err, `codemode: plain tool "final" is not among the tools`)
	_, _, err = cmeino.CodeMode(ctx, []tool.BaseTool{infoOnly{}}, nil, codemode.Limits{})
	require.EqualError(t, err, `codemode: tool "streamer" is not invokable`)
	cm, tools, err := cmeino.CodeMode(ctx, []tool.BaseTool{weather, population, final}, []string{"final_answer"},
		codemode.Limits{Deadline: 30 * time.Second})
	require.NoError(t, err)
	defer cm.Close()

	program, _ := json.Marshal(map[string]string{"code": `const [w, p] = await Promise.all([get_weather({city: "Paris"}), population({city: "Paris"})]);
return {city: w.city, celsius: w.celsius, population: p};`})
	var inputs [][]*schema.Message
	m := &scripted{inputs: &inputs, bound: new([]string), replies: []*schema.Message{
		schema.AssistantMessage("", []schema.ToolCall{{ID: "c1", Function: schema.FunctionCall{Name: "run_js", Arguments: string(program)}}}),
		schema.AssistantMessage("", []schema.ToolCall{{ID: "c2", Function: schema.FunctionCall{Name: "final_answer", Arguments: `{"answer":"21 °C"}`}}}),
	}}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, ToolsConfig: compose.ToolsNodeConfig{Tools: tools},
		ToolReturnDirectly: map[string]struct{}{"final_answer": {}}, MaxStep: 10})
	require.NoError(t, err)
	out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("Paris?")})
	require.NoError(t, err)
	assert.Equal(t, "answer: 21 °C", out.Content)
	assert.Equal(t, []string{"run_js", "final_answer"}, *m.bound)
	require.Len(t, inputs, 2)
	seen := inputs[1][len(inputs[1])-1]
	assert.Equal(t, schema.Tool, seen.Role)
	assert.Equal(t, "c1", seen.ToolCallID)
	assert.Equal(t, `{"result":{"city":"Paris","celsius":21,"population":2100000}}`, seen.Content)
}

// infoOnly is a tool that is not invokable (a streaming-only one, say).
type infoOnly struct{}

func (infoOnly) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "streamer"}, nil
}

// TestToolsNodeConversation: a code tool built WithSessions, driven by
// Eino's ToolsNode in two turns of one conversation (its context carries
// the conversation's id): the second turn's program sees what the first
// declared; another conversation does not.
func TestToolsNodeConversation(t *testing.T) {
	cm, err := codemode.NewCodeModeTool(nil, codemode.Limits{Deadline: 10 * time.Second}, codemode.WithSessions())
	require.NoError(t, err)
	defer cm.Close()
	node, err := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{Tools: []tool.BaseTool{cmeino.Tool(cm)}})
	require.NoError(t, err)
	turn := func(ctx context.Context, code string) string {
		args, err := json.Marshal(map[string]string{"code": code})
		require.NoError(t, err)
		out, err := node.Invoke(ctx, &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{
			{ID: "c", Function: schema.FunctionCall{Name: "run_js", Arguments: string(args)}}}})
		require.NoError(t, err)
		require.Len(t, out, 1)
		return out[0].Content
	}
	conv := codemode.WithConversation(context.Background(), "conversation-1")
	assert.Equal(t, `{"result":3}`, turn(conv, "const items = [1, 2, 3]; items.length"))
	assert.Equal(t, `{"result":6}`, turn(conv, "items.reduce((a, b) => a + b, 0)"))
	assert.Contains(t, turn(codemode.WithConversation(context.Background(), "conversation-2"), "items.length"), "items is not defined")
}
