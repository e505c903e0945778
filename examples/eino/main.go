// Command eino is a complete agent loop in CloudWeGo Eino in code mode:
// Eino's react agent, whose tools went through codemode's adapter — the
// agent's tools (get_weather, population) became the JavaScript API of
// one run_js tool, and final_answer stayed a plain tool the agent returns
// directly, which ends the loop. The chat model is a small one over
// OpenAI's Chat Completions (openai-go), in chatmodel.go.
//
//	OPENAI_API_KEY=... go run ./eino
//
// OPENAI_BASE_URL points it at another server (the tests' fake API);
// OPENAI_MODEL picks the model.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/codemode-go/codemode"
	cmeino "github.com/codemode-go/codemode/adapters/eino"
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

type cityInput struct {
	City string `json:"city" jsonschema:"required"`
}

type weather struct {
	City    string `json:"city"`
	Celsius int    `json:"celsius"`
}

// cities is the data the tools serve.
var cities = map[string]struct{ celsius, population int }{
	"Paris": {18, 2_100_000}, "Tokyo": {24, 14_000_000}, "Lima": {19, 10_000_000},
}

// agentTools are the agent's tools, as it had them before code mode.
func agentTools() ([]tool.BaseTool, error) {
	w, err := utils.InferTool("get_weather", "Current weather of a city: {city, celsius}.", func(_ context.Context, in cityInput) (weather, error) {
		c, ok := cities[in.City]
		if !ok {
			return weather{}, fmt.Errorf("unknown city %q", in.City)
		}
		return weather{in.City, c.celsius}, nil
	})
	if err != nil {
		return nil, err
	}
	p, err := utils.InferTool("population", "Population of a city, a number.", func(_ context.Context, in cityInput) (int, error) {
		c, ok := cities[in.City]
		if !ok {
			return 0, fmt.Errorf("unknown city %q", in.City)
		}
		return c.population, nil
	})
	if err != nil {
		return nil, err
	}
	final, err := utils.InferTool("final_answer", "Ends the task with the answer.", func(_ context.Context, in struct {
		Answer string `json:"answer" jsonschema:"required"`
	}) (string, error) {
		return in.Answer, nil
	})
	return []tool.BaseTool{w, p, final}, err
}

func run(ctx context.Context, w io.Writer) error {
	tools, err := agentTools()
	if err != nil {
		return err
	}
	cm, agentTools, err := cmeino.CodeMode(ctx, tools, []string{"final_answer"}, codemode.Limits{Deadline: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cm.Close()
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel:   newChatModel(os.Getenv("OPENAI_MODEL")),
		ToolsConfig:        compose.ToolsNodeConfig{Tools: agentTools},
		ToolReturnDirectly: map[string]struct{}{"final_answer": {}},
		MaxStep:            20,
	})
	if err != nil {
		return err
	}
	out, err := agent.Generate(ctx, []*schema.Message{
		schema.UserMessage("Compare the weather and the population of Paris and Tokyo, then give the answer with final_answer."),
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, out.Content)
	return nil
}
