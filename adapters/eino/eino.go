// Package eino puts code mode into CloudWeGo's Eino
// (github.com/cloudwego/eino): the run_js tool as an InvokableTool, for a
// ToolsNode or an agent beside an agent's other tools (its stop tools stay
// plain tools, so the loop can still end).
package eino

import (
	"context"
	"encoding/json"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/codemode-go/codemode"
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
