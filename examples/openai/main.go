// Command openai is a complete agent loop over OpenAI's Chat Completions
// API in code mode: the agent's tools (get_weather, population) become the
// JavaScript API of one run_js tool, and final_answer stays a plain tool
// that ends the loop.
//
//	OPENAI_API_KEY=... go run ./openai
//
// OPENAI_BASE_URL points it at another server (the tests' fake API);
// OPENAI_MODEL picks the model.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/codemode-go/codemode"
	cmopenai "github.com/codemode-go/codemode/adapters/openai"
)

func main() {
	if os.Getenv("OPENAI_API_KEY") == "" {
		fmt.Fprintln(os.Stderr, "set OPENAI_API_KEY")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// The agent's tools, as it had them before code mode.
var tools = []openai.ChatCompletionToolUnionParam{
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
		Description: openai.String("Current weather of a city: {city, celsius}."), Parameters: city}),
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "population",
		Description: openai.String("Population of a city, a number."), Parameters: city}),
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "final_answer",
		Description: openai.String("Ends the task with the answer."),
		Parameters: shared.FunctionParameters{"type": "object", "required": []string{"answer"},
			"properties": map[string]any{"answer": map[string]any{"type": "string"}}}}),
}

var city = shared.FunctionParameters{"type": "object", "required": []string{"city"},
	"properties": map[string]any{"city": map[string]any{"type": "string"}}}

// handle is the agent's dispatch of its own tools.
func handle(_ context.Context, name, arguments string) (string, error) {
	var in struct{ City string }
	if err := json.Unmarshal([]byte(arguments), &in); err != nil {
		return "", err
	}
	c, ok := cities[in.City]
	if !ok {
		return "", fmt.Errorf("unknown city %q", in.City)
	}
	switch name {
	case "get_weather":
		return fmt.Sprintf(`{"city":%q,"celsius":%d}`, in.City, c.celsius), nil
	case "population":
		return fmt.Sprint(c.population), nil
	}
	return "", fmt.Errorf("no tool %q", name)
}

// cities is the data the tools serve.
var cities = map[string]struct{ celsius, population int }{
	"Paris": {18, 2_100_000}, "Tokyo": {24, 14_000_000}, "Lima": {19, 10_000_000},
}

func run(ctx context.Context, w io.Writer) error {
	cm, reqTools, err := cmopenai.ChatCodeMode(tools, handle, []string{"final_answer"}, codemode.Limits{Deadline: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cm.Close()
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = openai.ChatModelGPT5_1
	}
	client := openai.NewClient()
	params := openai.ChatCompletionNewParams{Model: model, Tools: reqTools, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Compare the weather and the population of Paris and Tokyo, then give the answer with final_answer."),
	}}
	for range 10 {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return err
		}
		if len(resp.Choices) == 0 {
			return errors.New("no choice in the response")
		}
		msg := resp.Choices[0].Message
		answers, rest, err := cmopenai.ChatAnswers(ctx, cm, msg)
		if err != nil {
			return err
		}
		for _, call := range rest { // final_answer, the stop tool
			var in struct{ Answer string }
			json.Unmarshal([]byte(call.Function.Arguments), &in)
			fmt.Fprintln(w, in.Answer)
			return nil
		}
		if len(msg.ToolCalls) == 0 {
			fmt.Fprintln(w, msg.Content)
			return nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		params.Messages = append(params.Messages, answers...)
	}
	return errors.New("no answer after 10 turns")
}
