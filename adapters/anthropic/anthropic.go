// Package anthropic puts code mode into the Anthropic Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2, the SDK's current major): the
// run_js tool as a ToolParam for the Messages API, the tool_result blocks
// answering the model's tool_use blocks of it (a failed program's result
// has is_error set and the model-readable error JSON with the logs as its
// content), and the tool as the SDK's BetaTool for its tool runner. Other
// tool uses — an agent's stop tools, a hand-off — are left to the caller's
// loop, so it can still end.
//
// The other direction: [FromBetaTool] wraps a tool-runner tool the agent
// already has as a [codemode.Tool], and [CodeMode] turns an agent's whole
// tool set into the code tool over it, with the tools named plain (the
// stop tools) kept beside it unchanged.
//
// Anthropic's own programmatic tool calling (allowed_callers on a tool,
// naming its server-side code execution) is a different sandbox; the
// returned ToolParam leaves AllowedCallers unset, so run_js is called
// directly, and a caller may set it.
//
// State across a conversation's calls: build the code tool with
// codemode.WithSessions and give the agent loop's context
// codemode.WithConversation(ctx, conversationID); every call made with it
// runs in that conversation's session.
package anthropic

import (
	"context"
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/adapt"
)

// schema is run_js's input schema as the SDK takes it.
func schema() (props any, required []string) {
	var s struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	json.Unmarshal(codemode.RunJSParameters(), &s)
	return s.Properties, s.Required
}

// Tool is the code tool as a Messages API tool.
func Tool(cm *codemode.CodeModeTool) anthropic.ToolUnionParam {
	props, req := schema()
	t := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: props, Required: req}, codemode.RunJSToolName)
	t.OfTool.Description = anthropic.String(cm.Description())
	return t
}

// Answers runs the message's tool_use blocks of the code tool and returns
// their tool_result blocks (for the next user message), with the other
// tool uses for the caller to answer.
func Answers(ctx context.Context, cm *codemode.CodeModeTool, msg *anthropic.Message) (results []anthropic.ContentBlockParamUnion, rest []anthropic.ToolUseBlock, err error) {
	for _, block := range msg.Content {
		if block.Type != "tool_use" {
			continue
		}
		use := block.AsToolUse()
		if use.Name != codemode.RunJSToolName {
			rest = append(rest, use)
			continue
		}
		r, err := cm.Invoke(ctx, use.Input)
		if err != nil {
			return nil, nil, err
		}
		results = append(results, anthropic.NewToolResultBlock(use.ID, string(r.Output), r.IsError))
	}
	return results, rest, nil
}

// BetaTool is the code tool for the SDK's tool runner
// (Client.Beta.Messages.NewToolRunner).
func BetaTool(cm *codemode.CodeModeTool) anthropic.BetaTool { return betaTool{cm} }

type betaTool struct{ cm *codemode.CodeModeTool }

func (betaTool) Name() string          { return codemode.RunJSToolName }
func (t betaTool) Description() string { return t.cm.Description() }

func (betaTool) InputSchema() anthropic.BetaToolInputSchemaParam {
	props, req := schema()
	return anthropic.BetaToolInputSchemaParam{Properties: props, Required: req}
}

// Execute runs the program; a failed one is an error whose text is the
// error JSON with the logs (the runner reports it with is_error).
func (t betaTool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	r, err := t.cm.Invoke(ctx, input)
	if err != nil {
		return nil, err
	}
	if r.IsError {
		return nil, programError(r.Output)
	}
	return []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: string(r.Output)}}}, nil
}

// programError is a failed program's error JSON as a Go error.
type programError json.RawMessage

func (e programError) Error() string { return string(e) }

// FromBetaTool wraps a tool-runner tool as a [codemode.Tool]: its name,
// description and input schema are its definition; its result reaches the
// script as the text of a single text block (parsed as JSON when it is
// JSON), or as the JSON of its blocks otherwise; its error is the tool's
// failure.
func FromBetaTool(t anthropic.BetaTool) codemode.Tool {
	params, _ := json.Marshal(t.InputSchema())
	def := codemode.ToolDefinition{Name: t.Name(), Description: t.Description(), Parameters: params}
	return codemode.NewTool(def, func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		blocks, err := t.Execute(ctx, args)
		if err != nil {
			return nil, err
		}
		if len(blocks) == 1 && blocks[0].OfText != nil {
			return json.RawMessage(blocks[0].OfText.Text), nil
		}
		return json.Marshal(blocks)
	})
}

// CodeMode is an agent's tool set in code mode, for the tool runner: the
// tools not named in plain become the API of a new code tool (closed by
// the caller), and the runner's tools are that tool's [BetaTool] followed
// by the plain ones, unchanged. A name in plain that no tool has is an
// error.
func CodeMode(tools []anthropic.BetaTool, plain []string, limits codemode.Limits, opts ...codemode.Option) (*codemode.CodeModeTool, []anthropic.BetaTool, error) {
	cm, kept, err := adapt.CodeMode(tools, anthropic.BetaTool.Name, plain, func(api []anthropic.BetaTool) ([]codemode.Tool, error) {
		wrapped := make([]codemode.Tool, len(api))
		for i, t := range api {
			wrapped[i] = FromBetaTool(t)
		}
		return wrapped, nil
	}, limits, opts...)
	if err != nil {
		return nil, nil, err
	}
	return cm, append([]anthropic.BetaTool{BetaTool(cm)}, kept...), nil
}
