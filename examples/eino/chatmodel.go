package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// chatModel is an Eino tool-calling chat model over OpenAI's Chat
// Completions: just what the example's agent needs (no streaming).
type chatModel struct {
	client openai.Client
	model  string
	tools  []openai.ChatCompletionToolUnionParam
}

func newChatModel(name string) *chatModel {
	if name == "" {
		name = openai.ChatModelGPT5_1
	}
	return &chatModel{client: openai.NewClient(), model: name}
}

// WithTools returns the model with tools bound.
func (m *chatModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.tools = nil
	for _, t := range tools {
		params := shared.FunctionParameters{"type": "object"}
		if t.ParamsOneOf != nil {
			s, err := t.ParamsOneOf.ToJSONSchema()
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			if err := json.Unmarshal(b, &params); err != nil {
				return nil, err
			}
		}
		c.tools = append(c.tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Desc), Parameters: params}))
	}
	return &c, nil
}

// Generate sends the conversation and returns the model's message.
func (m *chatModel) Generate(ctx context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	params := openai.ChatCompletionNewParams{Model: m.model, Tools: m.tools}
	for _, msg := range in {
		switch msg.Role {
		case schema.System:
			params.Messages = append(params.Messages, openai.SystemMessage(msg.Content))
		case schema.User:
			params.Messages = append(params.Messages, openai.UserMessage(msg.Content))
		case schema.Tool:
			params.Messages = append(params.Messages, openai.ToolMessage(msg.Content, msg.ToolCallID))
		case schema.Assistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" {
				a.Content.OfString = openai.String(msg.Content)
			}
			for _, call := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: call.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: call.Function.Name, Arguments: call.Function.Arguments}}})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	resp, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, errors.New("no choice in the response")
	}
	choice := resp.Choices[0].Message
	var calls []schema.ToolCall
	for _, call := range choice.ToolCalls {
		calls = append(calls, schema.ToolCall{ID: call.ID, Type: "function",
			Function: schema.FunctionCall{Name: call.Function.Name, Arguments: call.Function.Arguments}})
	}
	return schema.AssistantMessage(choice.Content, calls), nil
}

// Stream is not needed by the example.
func (m *chatModel) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, errors.New("chatModel does not stream")
}
