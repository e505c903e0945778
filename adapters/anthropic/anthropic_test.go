package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
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
	require.ErrorContains(t, err, `"effects":{"summary":"no tool ran"`, "the model reads what ran")
	// The default output budget: a result past 24 KiB reaches the model shaped.
	out, err = bt.Execute(context.Background(), json.RawMessage(`{"code":"return Array.from({length: 20000}, (_, i) => i)"}`))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out[0].OfText.Text), codemode.DefaultOutputBudget+1024)
	assert.Contains(t, out[0].OfText.Text, `more items (20000 in all)"]`)
	assert.Contains(t, out[0].OfText.Text, `"shaped":"the result was `)
}

type cityInput struct {
	City string `json:"city" jsonschema:"required,description=The city"`
}

// TestToolRunner: the agent's existing tool-runner tools become run_js's
// API (CodeMode), a program calls two of them at once with Promise.all,
// and the plain stop tool beside run_js ends the run — all through the
// SDK's own tool runner against the Messages API.
func TestToolRunner(t *testing.T) {
	overlap := fakeapi.Overlap(2)
	text := func(s string) anthropic.BetaToolResultBlockParamContentUnion {
		return anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: s}}
	}
	weather, err := toolrunner.NewBetaToolFromJSONSchema("get-weather", "Current weather of a city.",
		func(_ context.Context, in cityInput) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			return text(`{"city":"` + in.City + `","celsius":21}`), overlap()
		})
	require.NoError(t, err)
	population, err := toolrunner.NewBetaToolFromJSONSchema("population", "Population of a city.",
		func(_ context.Context, in cityInput) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			return text("2100000"), overlap()
		})
	require.NoError(t, err)
	var answered string
	final, err := toolrunner.NewBetaToolFromJSONSchema("final_answer", "Ends the task with the answer.",
		func(_ context.Context, in struct {
			Answer string `json:"answer" jsonschema:"required"`
		}) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			answered = in.Answer
			return text("ok"), nil
		})
	require.NoError(t, err)

	_, _, err = cmanthropic.CodeMode([]anthropic.BetaTool{weather, final}, []string{"final_anwser"}, codemode.Limits{})
	require.EqualError(t, err, `codemode: plain tool "final_anwser" is not among the tools`)
	cm, tools, err := cmanthropic.CodeMode([]anthropic.BetaTool{weather, population, final}, []string{"final_answer"},
		codemode.Limits{Deadline: 30 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	require.Len(t, tools, 2)
	assert.Equal(t, "run_js", tools[0].Name())
	assert.Equal(t, "final_answer", tools[1].Name())

	program := `const [w, p] = await Promise.all([get_weather({city: "Paris"}), population({city: "Paris"})]);
return {city: w.city, celsius: w.celsius, population: p};`
	input, _ := json.Marshal(map[string]string{"code": program})
	f := fakeapi.New(
		message(`[{"type":"tool_use","id":"tu_1","name":"run_js","input":`+string(input)+`}]`, "tool_use"),
		message(`[{"type":"tool_use","id":"tu_2","name":"final_answer","input":{"answer":"21 °C, 2.1 M people"}}]`, "tool_use"),
		message(`[{"type":"text","text":"done"}]`, "end_turn"),
	)
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	runner := c.Beta.Messages.NewToolRunner(tools, anthropic.BetaToolRunnerParams{DisableThread: true, MaxIterations: 5,
		BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: "claude", MaxTokens: 100,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Paris?"))}}})
	last, err := runner.RunToCompletion(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "done", last.Content[0].Text)
	assert.Equal(t, "21 °C, 2.1 M people", answered)

	bodies := f.Bodies()
	require.Len(t, bodies, 3)
	var names []any
	for _, tool := range bodies[0]["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"])
	}
	assert.Equal(t, []any{"run_js", "final_answer"}, names)
	desc := bodies[0]["tools"].([]any)[0].(map[string]any)["description"].(string)
	assert.Contains(t, desc, "get_weather(")
	assert.Contains(t, desc, "population(")
	msgs := bodies[1]["messages"].([]any)
	result := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	assert.Equal(t, "tu_1", result["tool_use_id"])
	assert.Nil(t, result["is_error"])
	assert.Equal(t, `{"result":{"city":"Paris","celsius":21,"population":2100000}}`, result["content"].([]any)[0].(map[string]any)["text"])
}

// TestFromBetaTool: what a wrapped tool's result blocks and error look
// like to the script.
func TestFromBetaTool(t *testing.T) {
	blocks := func(b ...anthropic.BetaToolResultBlockParamContentUnion) []anthropic.BetaToolResultBlockParamContentUnion {
		return b
	}
	text := func(s string) anthropic.BetaToolResultBlockParamContentUnion {
		return anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: s}}
	}
	cases := []struct {
		name   string
		result []anthropic.BetaToolResultBlockParamContentUnion
		err    error
		want   string
	}{
		{"json text", blocks(text(`{"a":1}`)), nil, `{"result":{"a":1}}`},
		{"plain text", blocks(text("sunny")), nil, `{"result":"sunny"}`},
		{"two blocks", blocks(text("a"), text("b")), nil, `{"result":[{"text":"a","type":"text"},{"text":"b","type":"text"}]}`},
		{"error", nil, errors.New("quota"), `{"result":"tool ` + "`lookup`" + ` failed: quota"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bt := toolrunner.NewBetaTool("lookup", "Looks up.", anthropic.BetaToolInputSchemaParam{},
				func(context.Context, map[string]any) (anthropic.BetaToolResultBlockParamContentUnion, error) {
					panic("unused")
				})
			wrapped := cmanthropic.FromBetaTool(fixed{bt, c.result, c.err})
			assert.Equal(t, "lookup", wrapped.Definition().Name)
			assert.JSONEq(t, `{"type":"object"}`, string(wrapped.Definition().Parameters))
			cm, err := codemode.NewCodeModeTool([]codemode.Tool{wrapped}, codemode.Limits{Deadline: 10 * time.Second})
			require.NoError(t, err)
			defer cm.Close()
			out, err := cm.Call(context.Background(), json.RawMessage(`{"code":"try { return await lookup({}) } catch (e) { return e.message }"}`))
			require.NoError(t, err)
			assert.Equal(t, c.want, string(out))
		})
	}
}

// fixed is a BetaTool answering with a fixed result.
type fixed struct {
	anthropic.BetaTool
	result []anthropic.BetaToolResultBlockParamContentUnion
	err    error
}

func (f fixed) Execute(context.Context, json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	return f.result, f.err
}
