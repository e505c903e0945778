// Package eino puts code mode into CloudWeGo's Eino
// (github.com/cloudwego/eino): the run_js tool as an InvokableTool, for a
// ToolsNode or an agent beside an agent's other tools (its stop tools stay
// plain tools, so the loop can still end).
//
// The other direction: [FromTool] wraps an InvokableTool the agent
// already has as a [codemode.Tool], and [CodeMode] turns an agent's whole
// tool set into the code tool over it, with the tools named plain (the
// stop tools, which a react agent may also return directly) kept beside it
// unchanged.
//
// State across a conversation's calls: build the code tool with
// codemode.WithSessions and give the agent loop's context
// codemode.WithConversation(ctx, conversationID); every call made with it
// runs in that conversation's session.
package eino

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/adapt"
)

// Tool is the code tool as an Eino InvokableTool: its result is the
// program's {result, logs}, or a failed program's error JSON with the logs
// (for the model to repair), never a Go error for a script's mistake.
func Tool(cm *codemode.CodeModeTool) tool.InvokableTool { return einoTool{cm} }

type einoTool struct{ cm *codemode.CodeModeTool }

// Info describes run_js with its JSON Schema.
func (t einoTool) Info(context.Context) (*schema.ToolInfo, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(codemode.RunJSParameters(), &s); err != nil {
		return nil, err
	}
	return &schema.ToolInfo{Name: codemode.RunJSToolName, Desc: t.cm.Description(), ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&s)}, nil
}

// InvokableRun runs {"code": ...}.
func (t einoTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	out, err := t.cm.Call(ctx, json.RawMessage(argumentsInJSON))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// FromTool wraps an InvokableTool as a [codemode.Tool]: its Info is the
// definition (read once, now), InvokableRun serves the calls; its result
// reaches the script parsed as JSON when it is JSON (a string otherwise),
// its error is the tool's failure.
func FromTool(ctx context.Context, t tool.InvokableTool) (codemode.Tool, error) {
	info, err := t.Info(ctx)
	if err != nil {
		return nil, err
	}
	return fromInfo(info, t)
}

func fromInfo(info *schema.ToolInfo, t tool.InvokableTool) (codemode.Tool, error) {
	params := json.RawMessage(`{"type":"object"}`)
	if info.ParamsOneOf != nil {
		s, err := info.ParamsOneOf.ToJSONSchema()
		if err != nil {
			return nil, fmt.Errorf("codemode: tool %q: %w", info.Name, err)
		}
		if s != nil {
			if params, err = json.Marshal(s); err != nil {
				return nil, fmt.Errorf("codemode: tool %q: %w", info.Name, err)
			}
		}
	}
	def := codemode.ToolDefinition{Name: info.Name, Description: info.Desc, Parameters: params}
	return codemode.NewTool(def, func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		out, err := t.InvokableRun(ctx, string(args))
		return json.RawMessage(out), err
	}), nil
}

// CodeMode is an agent's tool set in code mode: the tools not named in
// plain become the API of a new code tool (closed by the caller), and the
// returned tools — for a ToolsNodeConfig or an agent — are that tool's
// [Tool] followed by the plain ones, unchanged. A name in plain that no
// tool has is an error, and so is a tool for the sandbox that is not
// invokable (a streaming-only tool).
func CodeMode(ctx context.Context, tools []tool.BaseTool, plain []string, limits codemode.Limits, opts ...codemode.Option) (*codemode.CodeModeTool, []tool.BaseTool, error) {
	type named struct {
		info *schema.ToolInfo
		tool tool.BaseTool
	}
	all := make([]named, len(tools))
	for i, t := range tools {
		info, err := t.Info(ctx)
		if err != nil {
			return nil, nil, err
		}
		all[i] = named{info, t}
	}
	cm, kept, err := adapt.CodeMode(all, func(n named) string { return n.info.Name }, plain, func(api []named) ([]codemode.Tool, error) {
		wrapped := make([]codemode.Tool, len(api))
		for i, n := range api {
			inv, ok := n.tool.(tool.InvokableTool)
			if !ok {
				return nil, fmt.Errorf("codemode: tool %q is not invokable", n.info.Name)
			}
			var err error
			if wrapped[i], err = fromInfo(n.info, inv); err != nil {
				return nil, err
			}
		}
		return wrapped, nil
	}, limits, opts...)
	if err != nil {
		return nil, nil, err
	}
	out := []tool.BaseTool{Tool(cm)}
	for _, n := range kept {
		out = append(out, n.tool)
	}
	return cm, out, nil
}
