package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
)

// A program whose executor governs its tool calls (codemode.WithGovernance
// with a Key and no Approver) pauses at a call that requires approval.
// The code tool then asks the client's user, if the client supports form
// elicitation, as a multi round-trip request (SEP-2322): its result is an
// input request, an elicitation named approvalInput, and its request state
// the continuation (authenticated, and sealed if the Governance says so);
// the client asks its user and calls again with the answer and the state,
// and the program resumes with the decision. The SDK does the same for a
// client on an older protocol by eliciting while the call is open. A
// client without elicitation (or an older one whose resumed program
// pauses again) gets the paused result instead, {"paused": {"tool",
// "args", "continuation", "expires"}, "logs"}, and the resume tool goes on
// (ServerOptions.Resume).
const approvalInput = "approval"

// canElicit reports whether the client behind a session supports form
// elicitation.
func canElicit(s *mcp.ServerSession) bool {
	if s == nil {
		return false
	}
	p := s.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // no mode named: form
}

// multiRoundTrip reports whether the client speaks the protocol version
// with multi round-trip requests (the SDK elicits for older ones, once).
func multiRoundTrip(s *mcp.ServerSession) bool {
	p := s.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// approvalSchema is what the elicitation asks for: approve, and optionally
// a reason and edited arguments.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "let the call run"},
		"reason":  map[string]any{"type": "string", "title": "Reason", "description": "why not (the program is told)"},
		"args":    map[string]any{"type": "string", "title": "Arguments", "description": "edited arguments, as JSON (empty: as called)"},
	},
	"required": []string{"approve"},
}

// askApproval is the input-required result of a paused program.
func askApproval(p *codemode.Paused) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
			Message:         fmt.Sprintf("A program wants to call %s with %s. Approve it?", p.Tool, p.Args),
			RequestedSchema: approvalSchema,
		}},
		RequestState: base64.StdEncoding.EncodeToString(p.Continuation),
	}
}

// approvalDecision reads the user's answer: approve runs the call (with
// the arguments the user edited, if any), not approving rejects it with
// the user's reason; declining or dismissing the form rejects it.
func approvalDecision(r mcp.InputResponse) (codemode.Decision, error) {
	res, ok := r.(*mcp.ElicitResult)
	if !ok || res == nil {
		return codemode.Decision{}, fmt.Errorf("the %q input is not an elicitation's answer", approvalInput)
	}
	switch res.Action {
	case "accept":
	case "decline":
		return codemode.Reject("the user declined"), nil
	default:
		return codemode.Reject("the user dismissed the request"), nil
	}
	approve, _ := res.Content["approve"].(bool)
	if !approve {
		reason, _ := res.Content["reason"].(string)
		if reason == "" {
			reason = "the user did not approve it"
		}
		return codemode.Reject(reason), nil
	}
	if edited, _ := res.Content["args"].(string); edited != "" {
		if !json.Valid([]byte(edited)) {
			return codemode.Reject("the user's edited arguments are not JSON"), nil
		}
		return codemode.ApproveWith(json.RawMessage(edited)), nil
	}
	return codemode.Approve(), nil
}

// pausedResult is the result of a paused program for a client that
// cannot be asked: the call, and the continuation the resume tool takes.
func pausedResult(p *codemode.Paused, logs []string) *mcp.CallToolResult {
	if logs == nil {
		logs = []string{}
	}
	out := pausedOutput{Paused: pausedCall{Tool: p.Tool, Args: p.Args,
		Continuation: base64.StdEncoding.EncodeToString(p.Continuation),
		Expires:      p.Expires.UTC().Format(time.RFC3339)}, Logs: logs}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: jsonText(out)}}, StructuredContent: out}
}

// pausedOutput is a paused program's structured content.
type pausedOutput struct {
	Paused pausedCall `json:"paused"`
	Logs   []string   `json:"logs"`
}

type pausedCall struct {
	Tool         string          `json:"tool"`
	Args         json.RawMessage `json:"args"`
	Continuation string          `json:"continuation"`
	Expires      string          `json:"expires"`
}
