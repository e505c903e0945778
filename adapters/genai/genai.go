// Package genai puts code mode into Google's Gen AI Go SDK
// (google.golang.org/genai): the run_js tool as a FunctionDeclaration with
// its JSON schemas, and the FunctionResponse parts answering the model's
// FunctionCalls of it — the Response map carries "output" (the result and
// logs) or "error" (a failed program's error JSON with the logs), as that
// SDK documents. Other calls — an agent's stop tools — are left to the
// caller's loop.
package genai

import (
	"context"
	"encoding/json"

	"google.golang.org/genai"

	"github.com/codemode-go/codemode"
)

// Declaration is the code tool as a function declaration.
func Declaration(cm *codemode.CodeModeTool) *genai.FunctionDeclaration {
	var params any
	json.Unmarshal(codemode.RunJSParameters(), &params)
	return &genai.FunctionDeclaration{
		Name:                 codemode.RunJSToolName,
		Description:          cm.Description(),
		ParametersJsonSchema: params,
		ResponseJsonSchema: map[string]any{"type": "object", "properties": map[string]any{
			"output": map[string]any{"description": "the program's {result, logs}"},
			"error":  map[string]any{"description": "a failed program's error and logs"},
		}},
	}
}

// Tool is the declaration as a Tool for GenerateContentConfig.Tools.
func Tool(cm *codemode.CodeModeTool) *genai.Tool {
	return &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{Declaration(cm)}}
}

// Answers runs the response's calls of the code tool and returns their
// FunctionResponse parts (for the next user content), with the other calls
// for the caller to answer.
func Answers(ctx context.Context, cm *codemode.CodeModeTool, resp *genai.GenerateContentResponse) (parts []*genai.Part, rest []*genai.FunctionCall, err error) {
	for _, call := range resp.FunctionCalls() {
		if call.Name != codemode.RunJSToolName {
			rest = append(rest, call)
			continue
		}
		args, err := json.Marshal(call.Args)
		if err != nil {
			return nil, nil, err
		}
		r, err := cm.Invoke(ctx, args)
		if err != nil {
			return nil, nil, err
		}
		var v any
		json.Unmarshal(r.Output, &v)
		key := "output"
		if r.IsError {
			key = "error"
		}
		parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: call.ID, Name: call.Name,
			Response: map[string]any{key: v}}})
	}
	return parts, rest, nil
}
