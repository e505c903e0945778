package openai_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmopenai "github.com/codemode-go/codemode/adapters/openai"
	"github.com/codemode-go/codemode/internal/fakeapi"
)

func client(t *testing.T, f *fakeapi.Server) openai.Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

func codeTool(t *testing.T) *codemode.CodeModeTool {
	cm, err := codemode.NewCodeModeTool(nil, codemode.Limits{Deadline: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { cm.Close() })
	return cm
}

func chatReply(toolCalls string, content string) string {
	if toolCalls != "" {
		return fakeapi.ChatToolCalls(toolCalls)
	}
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":` +
		content + `}}]}`
}

// TestChatCompletions: the model calls run_js with a program that throws,
// gets the error JSON, fixes it, gets the result, and answers; each tool
// message is checked as the SDK sent it.
func TestChatCompletions(t *testing.T) {
	f := fakeapi.New(
		chatReply(`[{"id":"call_1","type":"function","function":{"name":"run_js","arguments":"{\"code\":\"return undefinedThing * 2\"}"}}]`, ""),
		chatReply(`[{"id":"call_2","type":"function","function":{"name":"run_js","arguments":"{\"code\":\"console.log('ok'); return 6 * 7\"}"}}]`, ""),
		chatReply("", `"The answer is 42."`),
	)
	c := client(t, f)
	cm := codeTool(t)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "m", Tools: []openai.ChatCompletionToolUnionParam{cmopenai.ChatTool(cm)},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what is 6 times 7?")}}
	var final string
	for range 5 {
		resp, err := c.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			final = msg.Content
			break
		}
		answers, rest, err := cmopenai.ChatAnswers(ctx, cm, msg)
		require.NoError(t, err)
		require.Empty(t, rest)
		params.Messages = append(params.Messages, msg.ToParam())
		params.Messages = append(params.Messages, answers...)
	}
	assert.Equal(t, "The answer is 42.", final)
	require.Len(t, f.Bodies(), 3)
	tools := f.Bodies()[0]["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	assert.Equal(t, "run_js", fn["name"])
	assert.Contains(t, fn["description"], "Run JavaScript")
	last := func(body map[string]any) map[string]any {
		msgs := body["messages"].([]any)
		return msgs[len(msgs)-1].(map[string]any)
	}
	first := last(f.Bodies()[1])
	assert.Equal(t, "tool", first["role"])
	assert.Equal(t, "call_1", first["tool_call_id"])
	assert.Contains(t, first["content"], `"kind":"js"`)
	assert.Contains(t, first["content"], "undefinedThing is not defined")
	second := last(f.Bodies()[2])
	assert.Equal(t, "call_2", second["tool_call_id"])
	assert.Equal(t, `{"result":42,"logs":["ok"]}`, second["content"])
}

func responsesReply(output string) string {
	return `{"id":"r","object":"response","created_at":1,"model":"m","status":"completed","output":` + output + `}`
}

// TestResponsesCustomTool: the model sends raw JavaScript to the custom
// tool; the adapter answers with custom_tool_call_output.
func TestResponsesCustomTool(t *testing.T) {
	f := fakeapi.New(
		responsesReply(`[{"type":"custom_tool_call","id":"ct","call_id":"call_9","name":"run_js","input":"const xs = [1, 2, 3];\nreturn xs.map((x) => x * 2)"}]`),
		responsesReply(`[{"type":"message","id":"m","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}]`),
	)
	c := client(t, f)
	cm := codeTool(t)
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Tools: []responses.ToolUnionParam{cmopenai.ResponsesCustomTool(cm)},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("double 1, 2, 3")}})
	require.NoError(t, err)
	answers, rest, err := cmopenai.ResponsesAnswers(ctx, cm, resp)
	require.NoError(t, err)
	require.Empty(t, rest)
	require.Len(t, answers, 1)
	resp, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: answers}})
	require.NoError(t, err)
	assert.Equal(t, "done", resp.OutputText())
	tool := f.Bodies()[0]["tools"].([]any)[0].(map[string]any)
	assert.Equal(t, "custom", tool["type"])
	assert.Equal(t, "run_js", tool["name"])
	item := f.Bodies()[1]["input"].([]any)[0].(map[string]any)
	assert.Equal(t, "custom_tool_call_output", item["type"])
	assert.Equal(t, "call_9", item["call_id"])
	assert.Equal(t, `{"result":[2,4,6]}`, item["output"])
}

// TestResponsesFunctionTool: the function form answers with
// function_call_output.
func TestResponsesFunctionTool(t *testing.T) {
	f := fakeapi.New(
		responsesReply(`[{"type":"function_call","id":"fc","call_id":"call_3","name":"run_js","arguments":"{\"code\":\"return 'hi'\"}"}, {"type":"function_call","id":"fd","call_id":"call_4","name":"final_answer","arguments":"{}"}]`),
	)
	c := client(t, f)
	cm := codeTool(t)
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Tools: []responses.ToolUnionParam{cmopenai.ResponsesTool(cm)},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("say hi")}})
	require.NoError(t, err)
	answers, rest, err := cmopenai.ResponsesAnswers(ctx, cm, resp)
	require.NoError(t, err)
	require.Len(t, answers, 1)
	require.Len(t, rest, 1, "the stop tool is left to the loop")
	assert.Equal(t, "final_answer", rest[0].Name)
	b, err := json.Marshal(answers[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"function_call_output","call_id":"call_3","output":"{\"result\":\"hi\"}"}`, string(b))
	tool := f.Bodies()[0]["tools"].([]any)[0].(map[string]any)
	assert.Equal(t, "function", tool["type"])
	assert.Equal(t, "run_js", tool["name"])
}

// agentTools is an agent's existing tool set: two tools whose handler
// proves the program ran them at once, and a stop tool.
func agentTools(t *testing.T) (defs []shared.FunctionDefinitionParam, handle cmopenai.Handler, calls *[]string) {
	city := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}
	defs = []shared.FunctionDefinitionParam{
		{Name: "get_weather", Description: openai.String("Current weather of a city."), Parameters: city},
		{Name: "population", Description: openai.String("Population of a city."), Parameters: city},
		{Name: "final_answer", Description: openai.String("Ends the task."), Parameters: map[string]any{"type": "object"}},
	}
	overlap := fakeapi.Overlap(2)
	var mu sync.Mutex
	calls = new([]string)
	handle = func(_ context.Context, name, args string) (string, error) {
		mu.Lock()
		*calls = append(*calls, name+" "+args)
		mu.Unlock()
		if err := overlap(); err != nil {
			return "", err
		}
		if name == "get_weather" {
			return `{"celsius":21}`, nil
		}
		return "2100000", nil
	}
	return defs, handle, calls
}

const parallelProgram = `const [w, p] = await Promise.all([get_weather({city: "Paris"}), population({city: "Paris"})]);
return {celsius: w.celsius, population: p};`

// TestChatCodeMode: the agent's function tools become run_js's API, a
// program calls two of them at once with Promise.all, and the plain stop
// tool's call is left to the loop, which ends on it.
func TestChatCodeMode(t *testing.T) {
	defs, handle, calls := agentTools(t)
	var tools []openai.ChatCompletionToolUnionParam
	for _, d := range defs {
		tools = append(tools, openai.ChatCompletionFunctionTool(d))
	}
	_, _, err := cmopenai.ChatCodeMode(tools, handle, []string{"done"}, codemode.Limits{})
	require.EqualError(t, err, `codemode: plain tool "done" is not among the tools`)
	cm, reqTools, err := cmopenai.ChatCodeMode(tools, handle, []string{"final_answer"}, codemode.Limits{Deadline: 30 * time.Second})
	require.NoError(t, err)
	defer cm.Close()

	args, _ := json.Marshal(map[string]string{"code": parallelProgram})
	argsJSON, _ := json.Marshal(string(args))
	f := fakeapi.New(
		chatReply(`[{"id":"call_1","type":"function","function":{"name":"run_js","arguments":`+string(argsJSON)+`}}]`, ""),
		chatReply(`[{"id":"call_2","type":"function","function":{"name":"final_answer","arguments":"{\"answer\":\"21 °C\"}"}}]`, ""),
	)
	c := client(t, f)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "m", Tools: reqTools,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Paris?")}}
	var answer string
	for answer == "" {
		resp, err := c.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		msg := resp.Choices[0].Message
		answers, rest, err := cmopenai.ChatAnswers(ctx, cm, msg)
		require.NoError(t, err)
		for _, call := range rest {
			require.Equal(t, "final_answer", call.Function.Name)
			answer = call.Function.Arguments
		}
		params.Messages = append(params.Messages, msg.ToParam())
		params.Messages = append(params.Messages, answers...)
	}
	assert.Equal(t, `{"answer":"21 °C"}`, answer)
	assert.ElementsMatch(t, []string{`get_weather {"city":"Paris"}`, `population {"city":"Paris"}`}, *calls)
	bodies := f.Bodies()
	require.Len(t, bodies, 2)
	var names []any
	for _, tool := range bodies[0]["tools"].([]any) {
		names = append(names, tool.(map[string]any)["function"].(map[string]any)["name"])
	}
	assert.Equal(t, []any{"run_js", "final_answer"}, names)
	assert.Contains(t, bodies[0]["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["description"], "get_weather(")
	msgs := bodies[1]["messages"].([]any)
	toolMsg := msgs[len(msgs)-1].(map[string]any)
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_1",
		"content": `{"result":{"celsius":21,"population":2100000}}`}, toolMsg)
}

// TestResponsesCodeMode: the same through Responses: function tools
// wrapped, function_call_output on the wire, the stop tool's call left.
func TestResponsesCodeMode(t *testing.T) {
	defs, handle, _ := agentTools(t)
	var tools []responses.ToolUnionParam
	for _, d := range defs {
		tools = append(tools, responses.ToolParamOfFunction(d.Name, d.Parameters, false))
	}
	_, err := cmopenai.FromResponsesTools([]responses.ToolUnionParam{responses.ToolParamOfCustom("raw")}, handle)
	require.EqualError(t, err, `codemode: tool "raw" is not a function tool`)
	cm, reqTools, err := cmopenai.ResponsesCodeMode(tools, handle, []string{"final_answer"}, codemode.Limits{Deadline: 30 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	require.Len(t, reqTools, 2)
	args, _ := json.Marshal(map[string]string{"code": parallelProgram})
	argsJSON, _ := json.Marshal(string(args))
	f := fakeapi.New(
		responsesReply(`[{"type":"function_call","id":"fc","call_id":"call_5","name":"run_js","arguments":`+string(argsJSON)+`},{"type":"function_call","id":"fd","call_id":"call_6","name":"final_answer","arguments":"{}"}]`),
		responsesReply(`[{"type":"message","id":"m","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}]`),
	)
	c := client(t, f)
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Tools: reqTools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Paris?")}})
	require.NoError(t, err)
	answers, rest, err := cmopenai.ResponsesAnswers(ctx, cm, resp)
	require.NoError(t, err)
	require.Len(t, rest, 1)
	assert.Equal(t, "final_answer", rest[0].Name)
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: answers}})
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"type": "function_call_output", "call_id": "call_5",
		"output": `{"result":{"celsius":21,"population":2100000}}`}}, f.Bodies()[1]["input"])
}

func TestNoHandler(t *testing.T) {
	_, err := cmopenai.FromChatTools(nil, nil)
	assert.EqualError(t, err, "codemode: no Handler for the tools")
	_, _, err = cmopenai.ResponsesCodeMode(nil, nil, nil, codemode.Limits{})
	assert.EqualError(t, err, "codemode: no Handler for the tools")
}
