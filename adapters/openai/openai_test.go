package openai_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
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
	msg := `{"role":"assistant","content":` + content + `}`
	if toolCalls != "" {
		msg = `{"role":"assistant","content":null,"tool_calls":` + toolCalls + `}`
	}
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":` + msg + `}]}`
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
