// Package openai puts code mode into the OpenAI Go SDK
// (github.com/openai/openai-go/v3): the run_js tool for Chat Completions
// and for Responses (as a function tool, or as a custom freeform tool the
// model sends raw JavaScript to, without escaping it into JSON), and the
// answers to the model's calls of it. Other tool calls — an agent's stop
// tools, a hand-off — are left to the caller's loop, so it can still end.
package openai

import (
	"context"
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/codemode-go/codemode"
)

// parameters is run_js's schema as the SDK takes it.
func parameters() map[string]any {
	var m map[string]any
	json.Unmarshal(codemode.RunJSParameters(), &m)
	return m
}

// ChatTool is the code tool as a Chat Completions function tool.
func ChatTool(cm *codemode.CodeModeTool) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        codemode.RunJSToolName,
		Description: openai.String(cm.Description()),
		Parameters:  parameters(),
	})
}

// ChatAnswers runs the message's calls of the code tool and returns their
// tool messages (a failed program's message is its error JSON with the
// logs, for the model to repair), with the calls of other tools for the
// caller to answer.
func ChatAnswers(ctx context.Context, cm *codemode.CodeModeTool, msg openai.ChatCompletionMessage) (answers []openai.ChatCompletionMessageParamUnion, rest []openai.ChatCompletionMessageToolCallUnion, err error) {
	for _, call := range msg.ToolCalls {
		if call.Type != "function" || call.Function.Name != codemode.RunJSToolName {
			rest = append(rest, call)
			continue
		}
		r, err := cm.Invoke(ctx, json.RawMessage(call.Function.Arguments))
		if err != nil {
			return nil, nil, err
		}
		answers = append(answers, openai.ToolMessage(string(r.Output), call.ID))
	}
	return answers, rest, nil
}

// ResponsesTool is the code tool as a Responses function tool.
func ResponsesTool(cm *codemode.CodeModeTool) responses.ToolUnionParam {
	t := responses.ToolParamOfFunction(codemode.RunJSToolName, parameters(), false)
	t.OfFunction.Description = openai.String(cm.Description())
	return t
}

// ResponsesCustomTool is the code tool as a Responses custom (freeform)
// tool: the model's input is the program itself.
func ResponsesCustomTool(cm *codemode.CodeModeTool) responses.ToolUnionParam {
	t := responses.ToolParamOfCustom(codemode.RunJSToolName)
	t.OfCustom.Description = openai.String(cm.Description() + "\n\nSend the program itself as the input, not JSON.")
	return t
}

// ResponsesAnswers runs the response's calls of the code tool (function
// or custom) and returns their output items, with the other output items
// that are calls for the caller to answer.
func ResponsesAnswers(ctx context.Context, cm *codemode.CodeModeTool, resp *responses.Response) (answers []responses.ResponseInputItemUnionParam, rest []responses.ResponseOutputItemUnion, err error) {
	for _, item := range resp.Output {
		switch {
		case item.Type == "function_call" && item.Name == codemode.RunJSToolName:
			r, err := cm.Invoke(ctx, json.RawMessage(item.AsFunctionCall().Arguments))
			if err != nil {
				return nil, nil, err
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput(string(r.Output))
			out.OfFunctionCallOutput.CallID = openai.String(item.CallID)
			answers = append(answers, out)
		case item.Type == "custom_tool_call" && item.Name == codemode.RunJSToolName:
			args, _ := json.Marshal(map[string]string{"code": item.Input})
			r, err := cm.Invoke(ctx, args)
			if err != nil {
				return nil, nil, err
			}
			answers = append(answers, responses.ResponseInputItemParamOfCustomToolCallOutput(item.CallID, string(r.Output)))
		case item.Type == "function_call" || item.Type == "custom_tool_call":
			rest = append(rest, item)
		}
	}
	return answers, rest, nil
}
