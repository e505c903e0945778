// Package genai puts code mode into Google's Gen AI Go SDK
// (google.golang.org/genai): the run_js tool as a FunctionDeclaration with
// its JSON schemas, and the FunctionResponse parts answering the model's
// FunctionCalls of it — the Response map carries "output" (the result and
// logs) or "error" (a failed program's error JSON with the logs), as that
// SDK documents. Other calls — an agent's stop tools — are left to the
// caller's loop.
//
// The other direction: the SDK has function declarations but no tool type
// that runs, so an agent's tools are its declarations plus the [Handler]
// its loop already answers FunctionCalls with. [FromDeclarations] wraps
// them as [codemode.Tool]s (a declaration's OpenAPI-style Parameters
// schema is turned into the JSON Schema the sandbox checks arguments
// against); [CodeMode] turns the whole set into the code tool over them,
// with the declarations named plain (the stop tools) kept beside it.
//
// State across a conversation's calls: build the code tool with
// codemode.WithSessions and give the agent loop's context
// codemode.WithConversation(ctx, conversationID); every call made with it
// runs in that conversation's session.
package genai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/adapt"
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

// Handler answers one of the agent's own FunctionCalls: its name and args,
// the FunctionResponse's Response back. As the SDK documents that map, an
// "output" key is the result the script receives, an "error" key (without
// "output") is the tool's failure, and any other map is the result whole.
type Handler func(ctx context.Context, name string, args map[string]any) (map[string]any, error)

// FromDeclarations wraps function declarations as codemode.Tools served by
// handle.
func FromDeclarations(decls []*genai.FunctionDeclaration, handle Handler) ([]codemode.Tool, error) {
	if handle == nil {
		return nil, errors.New("codemode: no Handler for the declarations")
	}
	out := make([]codemode.Tool, 0, len(decls))
	for _, d := range decls {
		params, err := parameters(d)
		if err != nil {
			return nil, fmt.Errorf("codemode: declaration %q: %w", d.Name, err)
		}
		name := d.Name
		def := codemode.ToolDefinition{Name: name, Description: d.Description, Parameters: params}
		out = append(out, codemode.NewTool(def, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			var args map[string]any
			if err := json.Unmarshal(raw, &args); err != nil {
				return nil, err
			}
			resp, err := handle(ctx, name, args)
			if err != nil {
				return nil, err
			}
			output, hasOutput := resp["output"]
			if e, ok := resp["error"]; ok && !hasOutput {
				if s, ok := e.(string); ok {
					return nil, errors.New(s)
				}
				b, _ := json.Marshal(e)
				return nil, errors.New(string(b))
			}
			if hasOutput {
				return json.Marshal(output)
			}
			return json.Marshal(resp)
		}))
	}
	return out, nil
}

// parameters is a declaration's arguments as JSON Schema.
func parameters(d *genai.FunctionDeclaration) (json.RawMessage, error) {
	switch {
	case d.ParametersJsonSchema != nil:
		return json.Marshal(d.ParametersJsonSchema)
	case d.Parameters != nil:
		b, err := json.Marshal(d.Parameters)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		return json.Marshal(jsonSchema(m))
	}
	return json.RawMessage(`{"type":"object"}`), nil
}

// jsonSchema rewrites a genai.Schema's JSON in place as JSON Schema: its
// types are upper case ("STRING") and nullability a flag of its own.
func jsonSchema(m map[string]any) map[string]any {
	if t, ok := m["type"].(string); ok {
		m["type"] = strings.ToLower(t)
		if m["nullable"] == true {
			m["type"] = []any{strings.ToLower(t), "null"}
		}
	}
	delete(m, "nullable")
	delete(m, "propertyOrdering")
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			if p, ok := p.(map[string]any); ok {
				jsonSchema(p)
			}
		}
	}
	if items, ok := m["items"].(map[string]any); ok {
		jsonSchema(items)
	}
	if anyOf, ok := m["anyOf"].([]any); ok {
		for _, s := range anyOf {
			if s, ok := s.(map[string]any); ok {
				jsonSchema(s)
			}
		}
	}
	return m
}

// CodeMode is an agent's function declarations in code mode: those not
// named in plain become the API of a new code tool (closed by the caller)
// served by handle, and the returned Tool declares run_js followed by the
// plain ones, unchanged ([Answers] returns their calls to the loop). A
// name in plain that no declaration has is an error.
func CodeMode(decls []*genai.FunctionDeclaration, handle Handler, plain []string, limits codemode.Limits, opts ...codemode.Option) (*codemode.CodeModeTool, *genai.Tool, error) {
	cm, kept, err := adapt.CodeMode(decls, func(d *genai.FunctionDeclaration) string { return d.Name }, plain,
		func(api []*genai.FunctionDeclaration) ([]codemode.Tool, error) { return FromDeclarations(api, handle) }, limits, opts...)
	if err != nil {
		return nil, nil, err
	}
	return cm, &genai.Tool{FunctionDeclarations: append([]*genai.FunctionDeclaration{Declaration(cm)}, kept...)}, nil
}
