// Command genai is a complete agent loop over the Gemini API in code mode:
// the agent's function declarations (get_weather, population) become the
// JavaScript API of one run_js tool, and final_answer stays a plain
// declaration whose call ends the loop.
//
//	GEMINI_API_KEY=... go run ./genai
//
// GOOGLE_GEMINI_BASE_URL points it at another server (the tests' fake
// API); GEMINI_MODEL picks the model.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/genai"

	"github.com/codemode-go/codemode"
	cmgenai "github.com/codemode-go/codemode/adapters/genai"
)

func main() {
	if os.Getenv("GEMINI_API_KEY") == "" && os.Getenv("GOOGLE_API_KEY") == "" {
		fmt.Fprintln(os.Stderr, "set GEMINI_API_KEY")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

var cityParams = &genai.Schema{Type: genai.TypeObject, Required: []string{"city"},
	Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}}}

// The agent's declarations, as it had them before code mode.
var decls = []*genai.FunctionDeclaration{
	{Name: "get_weather", Description: "Current weather of a city: {city, celsius}.", Parameters: cityParams},
	{Name: "population", Description: "Population of a city: {population}.", Parameters: cityParams},
	{Name: "final_answer", Description: "Ends the task with the answer.", Parameters: &genai.Schema{Type: genai.TypeObject,
		Required: []string{"answer"}, Properties: map[string]*genai.Schema{"answer": {Type: genai.TypeString}}}},
}

// cities is the data the tools serve.
var cities = map[string]struct{ celsius, population int }{
	"Paris": {18, 2_100_000}, "Tokyo": {24, 14_000_000}, "Lima": {19, 10_000_000},
}

// handle is the agent's answer to its own FunctionCalls.
func handle(_ context.Context, name string, args map[string]any) (map[string]any, error) {
	city, _ := args["city"].(string)
	c, ok := cities[city]
	if !ok {
		return map[string]any{"error": fmt.Sprintf("unknown city %q", city)}, nil
	}
	switch name {
	case "get_weather":
		return map[string]any{"output": map[string]any{"city": city, "celsius": c.celsius}}, nil
	case "population":
		return map[string]any{"output": map[string]any{"population": c.population}}, nil
	}
	return nil, fmt.Errorf("no tool %q", name)
}

func run(ctx context.Context, w io.Writer) error {
	cm, tool, err := cmgenai.CodeMode(decls, handle, []string{"final_answer"}, codemode.Limits{Deadline: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cm.Close()
	model := os.Getenv("GEMINI_MODEL")
	if model == "" {
		model = "gemini-2.5-flash"
	}
	client, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendGeminiAPI})
	if err != nil {
		return err
	}
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{tool}}
	contents := genai.Text("Compare the weather and the population of Paris and Tokyo, then give the answer with final_answer.")
	for range 10 {
		resp, err := client.Models.GenerateContent(ctx, model, contents, cfg)
		if err != nil {
			return err
		}
		if len(resp.Candidates) == 0 || resp.Candidates[0].Content == nil {
			return errors.New("no candidate in the response")
		}
		parts, rest, err := cmgenai.Answers(ctx, cm, resp)
		if err != nil {
			return err
		}
		for _, call := range rest { // final_answer, the stop tool
			fmt.Fprintln(w, call.Args["answer"])
			return nil
		}
		if len(parts) == 0 {
			fmt.Fprintln(w, resp.Text())
			return nil
		}
		contents = append(contents, resp.Candidates[0].Content, genai.NewContentFromParts(parts, genai.RoleUser))
	}
	return errors.New("no answer after 10 turns")
}
