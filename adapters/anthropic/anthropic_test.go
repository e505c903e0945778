package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmanthropic "github.com/codemode-go/codemode/adapters/anthropic"
	"github.com/codemode-go/codemode/internal/fakeapi"
)

func message(content string, stop string) string {
	return `{"id":"msg","type":"message","role":"assistant","model":"claude","stop_reason":"` + stop + `","content":` + content +
		`,"usage":{"input_tokens":1,"output_tokens":1}}`
}

// TestMessages: a program with a mistake (is_error with the error JSON on
// the wire), its repair, the result, the final text; a stop tool beside
// the code tool is left to the loop.
func TestMessages(t *testing.T) {
	f := fakeapi.New(
		message(`[{"type":"tool_use","id":"tu_1","name":"run_js","input":{"code":"return notDefined + 1"}}]`, "tool_use"),
		message(`[{"type":"text","text":"fixing"},{"type":"tool_use","id":"tu_2","name":"run_js","input":{"code":"console.log('x'); return [1, 2].map((n) => n * 10)"}},{"type":"tool_use","id":"tu_3","name":"final_answer","input":{}}]`, "tool_use"),
		message(`[{"type":"text","text":"10 and 20"}]`, "end_turn"),
	)
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	cm, err := codemode.NewCodeModeTool(nil, codemode.Limits{Deadline: 10 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	ctx := context.Background()
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 100, Tools: []anthropic.ToolUnionParam{cmanthropic.Tool(cm)},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("compute"))}}
	var stops []string
	var final string
	for range 5 {
		msg, err := c.Messages.New(ctx, params)
		require.NoError(t, err)
		if msg.StopReason != "tool_use" {
			final = msg.Content[0].Text
			break
		}
		results, rest, err := cmanthropic.Answers(ctx, cm, msg)
		require.NoError(t, err)
		for _, r := range rest {
			stops = append(stops, r.Name)
			results = append(results, anthropic.NewToolResultBlock(r.ID, "noted", false))
		}
		params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(results...))
	}
	assert.Equal(t, "10 and 20", final)
	assert.Equal(t, []string{"final_answer"}, stops)
	require.Len(t, f.Bodies(), 3)
	tool := f.Bodies()[0]["tools"].([]any)[0].(map[string]any)
	assert.Equal(t, "run_js", tool["name"])
	assert.Equal(t, []any{"code"}, tool["input_schema"].(map[string]any)["required"])
	lastUser := func(body map[string]any) []any {
		msgs := body["messages"].([]any)
		return msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	}
	bad := lastUser(f.Bodies()[1])[0].(map[string]any)
	assert.Equal(t, "tool_result", bad["type"])
	assert.Equal(t, "tu_1", bad["tool_use_id"])
	assert.Equal(t, true, bad["is_error"])
	text := bad["content"].([]any)[0].(map[string]any)["text"].(string)
	assert.Contains(t, text, `"kind":"js"`)
	assert.Contains(t, text, "notDefined is not defined")
	good := lastUser(f.Bodies()[2])[0].(map[string]any)
	assert.Equal(t, "tu_2", good["tool_use_id"])
	assert.Equal(t, false, good["is_error"])
	assert.Equal(t, `{"result":[10,20],"logs":["x"]}`, good["content"].([]any)[0].(map[string]any)["text"])
}

// TestBetaTool: the tool runner's interface runs the program; a failure
// is the error JSON.
func TestBetaTool(t *testing.T) {
	cm, err := codemode.NewCodeModeTool(nil, codemode.Limits{Deadline: 10 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	bt := cmanthropic.BetaTool(cm)
	assert.Equal(t, "run_js", bt.Name())
	out, err := bt.Execute(context.Background(), json.RawMessage(`{"code":"return 1 + 1"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"result":2}`, out[0].OfText.Text)
	_, err = bt.Execute(context.Background(), json.RawMessage(`{"code":"throw new Error('no')"}`))
	require.ErrorContains(t, err, `"kind":"js"`)
}
