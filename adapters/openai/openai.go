// Package openai puts code mode into the OpenAI Go SDK
// (github.com/openai/openai-go/v3): the run_js tool for Chat Completions
// and for Responses (as a function tool, or as a custom freeform tool the
// model sends raw JavaScript to, without escaping it into JSON), and the
// answers to the model's calls of it. Other tool calls — an agent's stop
// tools, a hand-off — are left to the caller's loop, so it can still end.
//
// The other direction: the SDK has tool definitions but no tool type that
// runs, so an agent's tools are its definitions plus the [Handler] its
// loop already dispatches calls with. [FromChatTools] and
// [FromResponsesTools] wrap them as [codemode.Tool]s; [ChatCodeMode] and
// [ResponsesCodeMode] turn the whole set into the code tool over them,
// with the tools named plain (the stop tools) kept beside it unchanged.
//
// State across a conversation's calls: build the code tool with
// codemode.WithSessions and give the agent loop's context
// codemode.WithConversation(ctx, conversationID); every call made with it
// runs in that conversation's session.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/adapt"
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

// Handler runs one of the agent's own tools: the function name and its
// JSON arguments as the model sent them, the tool message's content back.
// A wrapped tool's result reaches the script parsed as JSON when it is
// JSON (a string otherwise); its error is the tool's failure.
type Handler func(ctx context.Context, name, arguments string) (string, error)

// errNoHandler refuses a nil Handler at wrap time, not at the first call.
var errNoHandler = errors.New("codemode: no Handler for the tools")

// wrap is one function tool as a codemode.Tool served by handle.
func wrap(name, description string, params map[string]any, handle Handler) codemode.Tool {
	schema, _ := json.Marshal(params)
	if params == nil {
		schema = []byte(`{"type":"object"}`)
	}
	def := codemode.ToolDefinition{Name: name, Description: description, Parameters: schema}
	return codemode.NewTool(def, func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		out, err := handle(ctx, name, string(args))
		return json.RawMessage(out), err
	})
}

// FromChatTools wraps Chat Completions function tools as codemode.Tools
// served by handle. A custom tool is an error: it takes text, not JSON.
func FromChatTools(tools []openai.ChatCompletionToolUnionParam, handle Handler) ([]codemode.Tool, error) {
	if handle == nil {
		return nil, errNoHandler
	}
	out := make([]codemode.Tool, 0, len(tools))
	for _, t := range tools {
		if t.OfFunction == nil {
			return nil, fmt.Errorf("codemode: tool %q is not a function tool", chatName(t))
		}
		f := t.OfFunction.Function
		out = append(out, wrap(f.Name, f.Description.Value, f.Parameters, handle))
	}
	return out, nil
}

func chatName(t openai.ChatCompletionToolUnionParam) string {
	switch {
	case t.OfFunction != nil:
		return t.OfFunction.Function.Name
	case t.OfCustom != nil:
		return t.OfCustom.Custom.Name
	}
	return ""
}

// ChatCodeMode is an agent's Chat Completions tool set in code mode: the
// tools not named in plain become the API of a new code tool (closed by
// the caller) served by handle, and the request's tools are [ChatTool]
// followed by the plain ones, unchanged ([ChatAnswers] returns their calls
// to the loop). A name in plain that no tool has is an error.
func ChatCodeMode(tools []openai.ChatCompletionToolUnionParam, handle Handler, plain []string, limits codemode.Limits, opts ...codemode.Option) (*codemode.CodeModeTool, []openai.ChatCompletionToolUnionParam, error) {
	cm, kept, err := adapt.CodeMode(tools, chatName, plain, func(api []openai.ChatCompletionToolUnionParam) ([]codemode.Tool, error) {
		return FromChatTools(api, handle)
	}, limits, opts...)
	if err != nil {
		return nil, nil, err
	}
	return cm, append([]openai.ChatCompletionToolUnionParam{ChatTool(cm)}, kept...), nil
}

// FromResponsesTools wraps Responses function tools as codemode.Tools
// served by handle. Any other tool (custom, or one the API hosts) is an
// error.
func FromResponsesTools(tools []responses.ToolUnionParam, handle Handler) ([]codemode.Tool, error) {
	if handle == nil {
		return nil, errNoHandler
	}
	out := make([]codemode.Tool, 0, len(tools))
	for _, t := range tools {
		if t.OfFunction == nil {
			return nil, fmt.Errorf("codemode: tool %q is not a function tool", responsesName(t))
		}
		f := t.OfFunction
		out = append(out, wrap(f.Name, f.Description.Value, f.Parameters, handle))
	}
	return out, nil
}

func responsesName(t responses.ToolUnionParam) string {
	if n := t.GetName(); n != nil {
		return *n
	}
	return ""
}

// ResponsesCodeMode is [ChatCodeMode] for Responses: the request's tools
// are [ResponsesTool] followed by the plain ones (swap the first for
// [ResponsesCustomTool] to take raw JavaScript).
func ResponsesCodeMode(tools []responses.ToolUnionParam, handle Handler, plain []string, limits codemode.Limits, opts ...codemode.Option) (*codemode.CodeModeTool, []responses.ToolUnionParam, error) {
	cm, kept, err := adapt.CodeMode(tools, responsesName, plain, func(api []responses.ToolUnionParam) ([]codemode.Tool, error) {
		return FromResponsesTools(api, handle)
	}, limits, opts...)
	if err != nil {
		return nil, nil, err
	}
	return cm, append([]responses.ToolUnionParam{ResponsesTool(cm)}, kept...), nil
}
