// Command anthropic is a complete agent loop over Anthropic's Messages API
// in code mode, driven by the SDK's own tool runner: the agent's tools
// (get_weather, population) become the JavaScript API of one run_js tool,
// and final_answer stays a plain tool whose call ends the loop.
//
//	ANTHROPIC_API_KEY=... go run ./anthropic
//
// ANTHROPIC_BASE_URL points it at another server (the tests' fake API);
// ANTHROPIC_MODEL picks the model.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"

	"github.com/codemode-go/codemode"
	cmanthropic "github.com/codemode-go/codemode/adapters/anthropic"
)

func main() {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		fmt.Fprintln(os.Stderr, "set ANTHROPIC_API_KEY")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type cityInput struct {
	City string `json:"city" jsonschema:"required,description=The city name"`
}

type answerInput struct {
	Answer string `json:"answer" jsonschema:"required"`
}

// cities is the data the tools serve.
var cities = map[string]struct{ celsius, population int }{
	"Paris": {18, 2_100_000}, "Tokyo": {24, 14_000_000}, "Lima": {19, 10_000_000},
}

func text(s string) anthropic.BetaToolResultBlockParamContentUnion {
	return anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: s}}
}

// agentTools are the agent's tools, as it had them before code mode.
func agentTools() ([]anthropic.BetaTool, error) {
	weather, err := toolrunner.NewBetaToolFromJSONSchema("get_weather", "Current weather of a city: {city, celsius}.",
		func(_ context.Context, in cityInput) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			c, ok := cities[in.City]
			if !ok {
				return text(""), fmt.Errorf("unknown city %q", in.City)
			}
			return text(fmt.Sprintf(`{"city":%q,"celsius":%d}`, in.City, c.celsius)), nil
		})
	if err != nil {
		return nil, err
	}
	population, err := toolrunner.NewBetaToolFromJSONSchema("population", "Population of a city, a number.",
		func(_ context.Context, in cityInput) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			c, ok := cities[in.City]
			if !ok {
				return text(""), fmt.Errorf("unknown city %q", in.City)
			}
			return text(fmt.Sprint(c.population)), nil
		})
	if err != nil {
		return nil, err
	}
	final, err := toolrunner.NewBetaToolFromJSONSchema("final_answer", "Ends the task with the answer.",
		func(context.Context, answerInput) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			return text("noted"), nil
		})
	return []anthropic.BetaTool{weather, population, final}, err
}

func run(ctx context.Context, w io.Writer) error {
	tools, err := agentTools()
	if err != nil {
		return err
	}
	cm, runnerTools, err := cmanthropic.CodeMode(tools, []string{"final_answer"}, codemode.Limits{Deadline: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cm.Close()
	model := anthropic.Model(os.Getenv("ANTHROPIC_MODEL"))
	if model == "" {
		model = anthropic.ModelClaudeSonnet4_5
	}
	client := anthropic.NewClient()
	runner := client.Beta.Messages.NewToolRunner(runnerTools, anthropic.BetaToolRunnerParams{
		DisableThread: true, MaxIterations: 10,
		BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: model, MaxTokens: 4096,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(
				"Compare the weather and the population of Paris and Tokyo, then give the answer with final_answer."))}},
	})
	for msg, err := range runner.All(ctx) {
		if err != nil {
			return err
		}
		for _, block := range msg.Content {
			if block.Type == "tool_use" && block.Name == "final_answer" { // the stop tool
				var in answerInput
				json.Unmarshal(block.Input, &in)
				fmt.Fprintln(w, in.Answer)
				return nil
			}
		}
		if msg.StopReason != "tool_use" {
			for _, block := range msg.Content {
				if block.Type == "text" {
					fmt.Fprintln(w, block.Text)
				}
			}
			return nil
		}
	}
	return errors.New("no answer after 10 turns")
}
