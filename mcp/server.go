package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
)

// ServerOptions configure [NewServer].
type ServerOptions struct {
	// Name and Version are the server's implementation (default
	// "codemode", "dev").
	Name, Version string
	// ToolName is the code tool's name (default "run_js").
	ToolName string
	// Description replaces the generated description of the code tool.
	Description string
	// TokenBudget bounds the description, in tokens (estimated as four
	// bytes each; default 8,000). Past it the server discovers
	// progressively: the description lists the servers and how many tools
	// each has, and the program (or the client, through a search_tools
	// MCP tool) looks declarations up by keyword with
	// `await codemode.search_tools("word")`. It bounds every search's
	// answer as well.
	TokenBudget int
	// Progress is how often a running program reports progress to a
	// client that asked for it (default 1 s); every upstream call also
	// reports.
	Progress time.Duration
	// Resume lists a second tool, ResumeToolName, that goes on with a
	// program that paused at a call needing approval (the executor's
	// codemode.Governance) for a client that cannot be asked through
	// elicitation: it takes {continuation, approve, reason?, args?}. Its
	// decision is whoever calls it — the client's model, unless the client
	// has its user confirm tool calls — so list it for such clients, and
	// seal the continuations (Governance.Encrypt: the model reads the
	// paused result) and make them single-use (Governance.Redeem).
	Resume bool
	// ResumeToolName is the resume tool's name (default "resume_js").
	ResumeToolName string
	// Sessions keeps one codemode.Session per MCP session: consecutive
	// programs of a client see what the earlier ones declared at their
	// top level and put on globalThis, a program that fails changes
	// nothing, and a second tool, ResetToolName, starts the state afresh.
	// The descriptions say so. A client's session ends with its MCP
	// session (or the executor's WithSessionTTL).
	Sessions bool
	// ResetToolName is the reset tool's name (default "reset_js").
	ResetToolName string
	// TypeChecked says the executor checks programs before they run
	// (codemode.WithTypeCheck): the description tells the model.
	TypeChecked bool
	// OutputBudget bounds, in bytes, the result (or error) and logs a
	// program gives the model: past it they are shaped to fit
	// (codemode.ShapeOutput: an array keeps its first items, a string its
	// start, logs their first and last lines), and the output says what
	// was cut under "shaped". 0 is codemode.DefaultOutputBudget; a
	// negative budget turns shaping off.
	OutputBudget int
	// Tasks serves the MCP Tasks extension (io.modelcontextprotocol/tasks,
	// 2026-07-28) when the server runs on a TasksTransport: the server
	// declares it, and a code tool call whose client declares it returns a
	// task at once, which the client polls (tasks/get) for the program's
	// result or cancels (tasks/cancel: the program ends as a cancellation,
	// its effects ledger in the task's statusMessage and result). A client
	// that does not declare it gets the result on its request, kept alive
	// by progress notifications.
	Tasks bool
}

// DefaultTokenBudget is ServerOptions.TokenBudget's default.
const DefaultTokenBudget = 8000

// searchProvider is the namespace of progressive discovery.
const searchProvider = "codemode"

// NewServer returns an MCP server exposing code mode over the router's
// providers: one tool, named ServerOptions.ToolName, taking {code} that
// runs the program with exec (every upstream tool in its scope) and
// returns {result, logs} as structured content with a text rendering; a
// program that fails sets isError, its text the model-readable error JSON
// (its name the tool's, as the client knows it) with the logs and the
// effects ledger (which tools ran). Outputs past ServerOptions.OutputBudget
// are shaped to fit, saying so under "shaped". The
// request's cancellation stops the program; a client's progress token
// gets progress notifications while it runs. It refuses a provider named
// codemode, the server's own namespace.
//
// What the client is shown:
//
//   - Text blocks are JSON as a model reads it: no HTML escaping
//     ("<anonymous>", never "\u003canonymous\u003e"), keys in order.
//   - An image or audio value — an object {mimeType: "image/…" or
//     "audio/…", data: a typed array or ArrayBuffer}, with type "image",
//     "audio" or none, as an upstream tool's image arrives in the program
//     — returned as the result, as an item of the returned array or as a
//     property of the returned object, becomes an MCP image (or audio)
//     content block after the text block, and in the text and structured
//     content a placeholder naming the block: "[image/png, 4 bytes:
//     content 2]". Any other binary value, anywhere, is the placeholder
//     "[Uint8Array, 12 bytes: not shown]": a model reads no bytes, and an
//     embedded resource would need a URI this server does not have; a
//     program that wants them read returns them encoded (btoa).
//   - The description says how upstream MCP results arrive in the
//     program (the rules of [Unwrap]) whenever an upstream is routed.
//   - `codemode.search_tools` exists in every program, past the budget or
//     not; it and the search_tools MCP tool (listed only past the budget)
//     take a query string or {query, limit?}, and answer whole
//     declarations within TokenBudget, then a comment naming those left
//     out.
//   - Tools that take no input are declared without a parameter (see
//     [codemode.Declarations]); called without an argument they get {}.
func NewServer(exec *codemode.Executor, router *Router, opts ServerOptions) (*mcp.Server, error) {
	if opts.Name == "" {
		opts.Name = "codemode"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.ToolName == "" {
		opts.ToolName = "run_js"
	}
	if opts.TokenBudget <= 0 {
		opts.TokenBudget = DefaultTokenBudget
	}
	if opts.Progress <= 0 {
		opts.Progress = time.Second
	}
	if opts.ResumeToolName == "" {
		opts.ResumeToolName = "resume_js"
	}
	if opts.ResetToolName == "" {
		opts.ResetToolName = "reset_js"
	}
	for _, p := range router.Providers() {
		if p.Name == searchProvider {
			return nil, fmt.Errorf("mcp: the provider name %q is the server's own (progressive discovery)", searchProvider)
		}
	}
	h := &handler{exec: exec, router: router, opts: opts, sessions: map[*mcp.ServerSession]*codemode.Session{}}
	upstream := false
	for _, rt := range router.routes {
		if u, ok := rt.(*Upstream); ok && len(u.tools) > 0 {
			upstream = true
		}
	}
	full := description(router.Providers(), upstream)
	h.progressive = len(full)/4 > opts.TokenBudget
	desc := opts.Description
	if desc == "" {
		desc = full
		if h.progressive {
			desc = progressiveDescription(router.Providers(), upstream)
		}
		if opts.Sessions {
			desc += "\n\n" + sessionNote(opts.ResetToolName)
		}
		if opts.TypeChecked {
			desc += "\n\nPrograms are type-checked against these declarations before they run (TypeScript's checker): each problem " +
				"that would fail a program (a tool or a name that does not exist, a property a declared result does not have, an " +
				"argument object the declaration does not take) comes back with its line and column."
		}
	}
	var sopts *mcp.ServerOptions
	if opts.Tasks {
		caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
		caps.AddExtension(TasksExtension, nil)
		sopts = &mcp.ServerOptions{Capabilities: caps}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, sopts)
	s.AddTool(&mcp.Tool{
		Name:        opts.ToolName,
		Description: desc,
		InputSchema: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"code": map[string]any{"type": "string", "description": "the program: JavaScript or TypeScript, the body of an async function"}},
			"required":             []string{"code"},
			"additionalProperties": false,
		},
		OutputSchema: map[string]any{
			"type":       "object",
			"properties": outputProperties,
		},
	}, h.run)
	if opts.Resume {
		s.AddTool(&mcp.Tool{
			Name: opts.ResumeToolName,
			Description: "Goes on with a " + opts.ToolName + " program that paused at a tool call needing approval (its result was {paused: {tool, args, continuation}}): " +
				"approve runs the call (with args in place of its arguments, when given), otherwise the program is told the reason. " +
				"Answers as " + opts.ToolName + " does.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"continuation": map[string]any{"type": "string", "description": "the paused result's continuation"},
					"approve":      map[string]any{"type": "boolean"},
					"reason":       map[string]any{"type": "string", "description": "why not, when not approved"},
					"args":         map[string]any{"description": "the call's arguments to use instead (approved only)"},
				},
				"required":             []string{"continuation", "approve"},
				"additionalProperties": false,
			},
			OutputSchema: map[string]any{"type": "object", "properties": outputProperties},
		}, h.resume)
	}
	if opts.Sessions {
		s.AddTool(&mcp.Tool{
			Name: opts.ResetToolName,
			Description: "Clears the state " + opts.ToolName + " programs keep between calls (what they declared at their top level and put on globalThis): " +
				"the next program starts afresh. Takes no arguments.",
			InputSchema: map[string]any{"type": "object", "additionalProperties": false},
		}, h.reset)
	}
	if h.progressive {
		s.AddTool(&mcp.Tool{
			Name: "search_tools",
			Description: "Finds the APIs " + opts.ToolName + " programs may call: the TypeScript declarations of every tool whose name or description holds a word of the query " +
				"(at most limit, within the token budget; a closing comment names those left out).",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query": map[string]any{"type": "string"},
					"limit": map[string]any{"type": "integer", "minimum": 1, "description": "the most declarations to return"},
				},
				"required": []string{"query"},
			},
		}, h.search)
	}
	return s, nil
}

// outputProperties are the code tool's (and the resume tool's) results.
var outputProperties = map[string]any{
	"result": map[string]any{"description": "the program's value"},
	"logs":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	"error":  map[string]any{"type": "object", "description": "the failure, when the program failed"},
	"paused": map[string]any{"type": "object", "description": "the tool call waiting for approval, and the continuation that goes on"},
}

type handler struct {
	exec        *codemode.Executor
	router      *Router
	opts        ServerOptions
	progressive bool

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*codemode.Session // ServerOptions.Sessions: each client's
}

// sessionNote is what the code tool's description says of sessions.
func sessionNote(reset string) string {
	return "State persists between calls in this session: what a program declares at its top level (const, let, function, class) " +
		"and puts on globalThis is there in the next program (declaring the same const or let again is an error: assign it instead); " +
		"a program that fails changes nothing. " + reset + " clears the state."
}

// session is the codemode session of the client's MCP session, made on
// its first program and closed when the MCP session ends; nil without
// ServerOptions.Sessions (or a session to key it by).
func (h *handler) session(ss *mcp.ServerSession) (*codemode.Session, error) {
	if !h.opts.Sessions || ss == nil {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[ss]; s != nil {
		return s, nil
	}
	s, err := h.exec.NewSession()
	if err != nil {
		return nil, err
	}
	if _, watched := h.sessions[ss]; !watched {
		go func() {
			ss.Wait()
			h.mu.Lock()
			s := h.sessions[ss]
			delete(h.sessions, ss)
			h.mu.Unlock()
			if s != nil {
				s.Close()
			}
		}()
	}
	h.sessions[ss] = s
	return s, nil
}

// reset serves the reset tool: the client's session is closed, and its
// next program gets a new one.
func (h *handler) reset(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	s := h.sessions[req.Session]
	if s != nil {
		h.sessions[req.Session] = nil // still watched: its end forgets it
	}
	h.mu.Unlock()
	if s != nil {
		s.Close()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"reset":true}`}}}, nil
}

// execute runs a request in the client's session, or afresh.
func (h *handler) execute(ctx context.Context, ss *mcp.ServerSession, req codemode.Request) codemode.ExecuteResult {
	s, err := h.session(ss)
	if err != nil {
		return codemode.ExecuteResult{Logs: []string{}, Error: err.Error(), Err: &codemode.ExecError{Kind: codemode.KindInternal, Message: err.Error()}}
	}
	if s == nil {
		return h.exec.Execute(ctx, req)
	}
	res := s.Execute(ctx, req)
	if res.Err != nil && errors.Is(res.Err, codemode.ErrSessionExpired) {
		h.mu.Lock()
		if h.sessions[ss] == s {
			h.sessions[ss] = nil
		}
		h.mu.Unlock()
		if s, err = h.session(ss); err == nil {
			res = s.Execute(ctx, req)
		}
	}
	return res
}

// resumeIn resumes a paused program in the client's session, or in the
// executor.
func (h *handler) resumeIn(ctx context.Context, ss *mcp.ServerSession, cont []byte, d codemode.Decision,
	dispatch codemode.DispatchFunc) codemode.ExecuteResult {
	if s, err := h.session(ss); err == nil && s != nil {
		return s.Resume(ctx, cont, d, dispatch)
	}
	return h.exec.Resume(ctx, cont, d, dispatch)
}

// run serves the code tool.
func (h *handler) run(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Code == nil {
		return h.failure(h.invalidArgs(`the arguments are {"code": string}`), nil, nil), nil
	}
	if req.Params.RequestState != "" { // the user's answer to a paused program's approval
		cont, err := base64.StdEncoding.DecodeString(req.Params.RequestState)
		if err != nil {
			return h.failure(h.invalidArgs("the request state is not a continuation"), nil, nil), nil
		}
		d, err := approvalDecision(req.Params.InputResponses[approvalInput])
		if err != nil {
			return h.failure(h.invalidArgs(err.Error()), nil, nil), nil
		}
		return h.serve(ctx, req, func(ctx context.Context, _ []codemode.Provider, dispatch codemode.DispatchFunc) codemode.ExecuteResult {
			return h.resumeIn(ctx, req.Session, cont, d, dispatch)
		})
	}
	exec := func(ctx context.Context, providers []codemode.Provider, dispatch codemode.DispatchFunc) codemode.ExecuteResult {
		return h.execute(ctx, req.Session, codemode.Request{Code: *in.Code, Providers: providers, Dispatch: dispatch})
	}
	if id, ok := req.Params.Meta[taskMarkMeta].(string); ok && h.opts.Tasks {
		if tk, tctx := tasks.claim(ctx, id); tk != nil {
			// A task: the program runs on, past this request; no progress
			// (the client polls) and no elicitation (nobody waits on it).
			treq := *req
			params := *req.Params
			params.Meta = nil
			treq.Params = &params
			go func() {
				res, err := h.serveTask(tctx, &treq, exec)
				if err != nil {
					res = h.failure(jsonText(codemode.InternalError(h.opts.ToolName, err)), nil, nil)
				}
				tasks.finish(tk, res, time.Now())
			}()
			return &mcp.CallToolResult{Meta: mcp.Meta{taskCreatedMeta: id}, Content: []mcp.Content{},
				StructuredContent: runOutput{Result: json.RawMessage("null"), Logs: []string{}}}, nil
		}
	}
	return h.serve(ctx, req, exec)
}

// resume serves the resume tool.
func (h *handler) resume(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Continuation *string         `json:"continuation"`
		Approve      *bool           `json:"approve"`
		Reason       string          `json:"reason"`
		Args         json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Continuation == nil || in.Approve == nil {
		return h.failure(h.invalidArgs(`the arguments are {"continuation": string, "approve": boolean, "reason"?: string, "args"?: any}`), nil, nil), nil
	}
	cont, err := base64.StdEncoding.DecodeString(*in.Continuation)
	if err != nil {
		return h.failure(h.invalidArgs("the continuation is not base64"), nil, nil), nil
	}
	d := codemode.Reject(in.Reason)
	if *in.Approve {
		d = codemode.Approve()
		if len(in.Args) > 0 && string(in.Args) != "null" {
			d = codemode.ApproveWith(in.Args)
		}
	}
	return h.serve(ctx, req, func(ctx context.Context, _ []codemode.Provider, dispatch codemode.DispatchFunc) codemode.ExecuteResult {
		return h.resumeIn(ctx, req.Session, cont, d, dispatch)
	})
}

// serve runs a program (exec) with the router's providers and the
// server's own, reporting progress to a client that asked, and turns its
// outcome into the tool's result.
func (h *handler) serve(ctx context.Context, req *mcp.CallToolRequest,
	exec func(context.Context, []codemode.Provider, codemode.DispatchFunc) codemode.ExecuteResult) (*mcp.CallToolResult, error) {
	providers := append(h.router.Providers(), codemode.Provider{Name: searchProvider, Tools: []string{"search_tools"}})
	dispatch := func(ctx context.Context, provider, tool, args string) (string, error) {
		if provider == searchProvider && tool == "search_tools" {
			var list []json.RawMessage
			if err := json.Unmarshal([]byte(args), &list); err != nil || len(list) != 1 {
				return "", errSearchArgs
			}
			q, err := searchArgs(list[0])
			if err != nil {
				return "", err
			}
			return envelope("result", h.find(q))
		}
		return h.router.Dispatch(ctx, provider, tool, args)
	}
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		var calls atomic.Int64
		notify := func(msg string) {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(calls.Load()), Message: msg})
		}
		inner := dispatch
		dispatch = func(ctx context.Context, provider, tool, args string) (string, error) {
			out, err := inner(ctx, provider, tool, args)
			calls.Add(1)
			notify(fmt.Sprintf("%s.%s returned", provider, tool))
			return out, err
		}
		done := make(chan struct{})
		defer close(done)
		go func() {
			start := time.Now()
			t := time.NewTicker(h.opts.Progress)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					notify(fmt.Sprintf("running for %v", time.Since(start).Round(time.Second)))
				case <-done:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	res := exec(ctx, providers, dispatch)
	if res.Paused != nil {
		// Ask the user through the client, unless it cannot be asked (or,
		// on an older protocol, was asked for this call already).
		if ctx.Value(taskKey{}) == nil && canElicit(req.Session) && (req.Params.RequestState == "" || multiRoundTrip(req.Session)) {
			return askApproval(res.Paused), nil
		}
		return pausedResult(res.Paused, res.Logs), nil
	}
	if res.Error != "" {
		if res.Err == nil {
			return h.failure(h.invalidArgs(res.Error), res.Logs, res.Effects), nil
		}
		// Execute attributes its errors to "execute"; the client knows
		// this tool by its own name.
		e := *res.Err
		e.Name = h.opts.ToolName
		if rest, ok := strings.CutPrefix(e.Message, "codemode: "+codemode.ExecuteName+": "); ok && e.Kind == codemode.KindInternal {
			e.Message = "codemode: " + h.opts.ToolName + ": " + rest
		}
		return h.failure(e.LLMJSON(), res.Logs, res.Effects), nil
	}
	result := res.Result
	if result == nil {
		result = json.RawMessage("null")
	}
	result, media := splitMedia(result)
	logs := res.Logs
	if logs == nil {
		logs = []string{}
	}
	result, logs, shaped := codemode.ShapeOutput(result, logs, h.budget(), "result")
	out := runOutput{Result: result, Logs: logs, Diagnostics: res.Diagnostics, Shaped: shaped}
	content := append([]mcp.Content{&mcp.TextContent{Text: jsonText(out)}}, media...)
	return &mcp.CallToolResult{Content: content, StructuredContent: out}, nil
}

// invalidArgs is the error JSON of a request refused before it ran.
func (h *handler) invalidArgs(reason string) string {
	return jsonText(struct {
		Kind   codemode.ErrorKind `json:"kind"`
		Name   string             `json:"name"`
		Reason string             `json:"reason"`
	}{codemode.KindInvalidArgs, h.opts.ToolName, reason})
}

// runOutput is a program's structured content and, as JSON, its text.
type runOutput struct {
	Result json.RawMessage `json:"result"`
	Logs   []string        `json:"logs"`
	// Diagnostics are what a type check in warn mode found.
	Diagnostics []codemode.TypeDiagnostic `json:"diagnostics,omitempty"`
	// Shaped says what was cut to fit the output budget.
	Shaped string `json:"shaped,omitempty"`
}

// failOutput is a failed program's: its error, its logs, and its effects
// ledger (which tools ran: whether a retry can repeat a write).
type failOutput struct {
	Error   json.RawMessage   `json:"error"`
	Logs    []string          `json:"logs"`
	Effects *codemode.Effects `json:"effects"`
	Shaped  string            `json:"shaped,omitempty"`
}

// budget is the output budget in bytes; 0: none.
func (h *handler) budget() int {
	switch b := h.opts.OutputBudget; {
	case b < 0:
		return 0
	case b == 0:
		return codemode.DefaultOutputBudget
	default:
		return b
	}
}

// jsonText is v as compact JSON without HTML escaping: the text a model
// reads ("<anonymous>", not "\u003canonymous\u003e").
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return `{"error":{"kind":"internal","message":"the result does not encode"}}`
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// failure is an isError result: the error JSON with the logs and the
// effects ledger, shaped to the output budget, as text and structured
// content.
func (h *handler) failure(errJSON string, logs []string, eff *codemode.Effects) *mcp.CallToolResult {
	if logs == nil {
		logs = []string{}
	}
	if eff == nil {
		eff = &codemode.Effects{} // no tool ran
	}
	shapedErr, logs, shaped := codemode.ShapeOutput(json.RawMessage(errJSON), logs, h.budget(), "error")
	out := failOutput{Error: shapedErr, Logs: logs, Effects: eff, Shaped: shaped}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: jsonText(out)}}, StructuredContent: out}
}

// search serves the search_tools MCP tool.
func (h *handler) search(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	q, err := searchArgs(req.Params.Arguments)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: h.find(q)}}}, nil
}

// query is a search: its words, and the most declarations to return (0:
// no limit but the budget).
type query struct {
	text  string
	limit int
}

var errSearchArgs = errors.New(`search_tools takes a string or {query: string, limit?: number}`)

// searchArgs reads both shapes of a search: "words" or {query, limit?}.
func searchArgs(raw json.RawMessage) (query, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return query{text: text}, nil
	}
	var in struct {
		Query *string  `json:"query"`
		Limit *float64 `json:"limit"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.Query == nil {
		return query{}, errSearchArgs
	}
	q := query{text: *in.Query}
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit != math.Trunc(*in.Limit) {
			return query{}, errSearchArgs
		}
		q.limit = int(min(*in.Limit, math.MaxInt32))
	}
	return q, nil
}

// find answers a search within the token budget.
func (h *handler) find(q query) string {
	return search(h.router.Providers(), q, 4*h.opts.TokenBudget)
}

// hit is one tool a search found.
type hit struct {
	provider int // index into the providers
	api      codemode.ProviderTool
}

// search returns the declarations of the tools matching a word of the
// query in their name or description: whole declarations, in the
// providers' order, at most q.limit of them and at most budget bytes in
// all, then a comment naming the matches left out.
func search(providers []codemode.Provider, q query, budget int) string {
	words := strings.Fields(strings.ToLower(q.text))
	var hits []hit
	for i, p := range providers {
		for _, api := range p.APIs {
			hay := strings.ToLower(api.Name + " " + strings.ReplaceAll(api.Name, "_", " ") + " " + api.Description)
			for _, w := range words {
				if strings.Contains(hay, w) {
					hits = append(hits, hit{i, api})
					break
				}
			}
		}
	}
	if len(hits) == 0 {
		return fmt.Sprintf("No tool matches %q.", q.text)
	}
	render := func(hs []hit) string {
		var ps []codemode.Provider
		for _, h := range hs {
			if len(ps) == 0 || ps[len(ps)-1].Name != providers[h.provider].Name {
				p := providers[h.provider]
				p.Tools, p.APIs = nil, nil
				ps = append(ps, p)
			}
			p := &ps[len(ps)-1]
			p.Tools = append(p.Tools, h.api.Name)
			p.APIs = append(p.APIs, h.api)
		}
		return codemode.ProviderDeclarations(ps)
	}
	n := len(hits)
	if q.limit > 0 && q.limit < n {
		n = q.limit
	}
	reason := fmt.Sprintf("the %d-token budget", budget/4)
	note := func(k int) string { // the comment after k declarations
		if k == len(hits) {
			return ""
		}
		why := reason
		if k == n && n < len(hits) {
			why = fmt.Sprintf("limit %d", n)
		}
		tools := "tools"
		if len(hits)-k == 1 {
			tools = "tool"
		}
		return fmt.Sprintf("// %d more matching %s left out (%s):", len(hits)-k, tools, why)
	}
	if n == len(hits) { // all of them, with no note, if they fit
		if all := render(hits); len(all) <= budget {
			return all
		}
	}
	// The most that fit with the note after them: the rendering grows
	// with each declaration, so a binary search finds it.
	reserve := len(note(0)) + len(" (limit 2147483647) x.y, …\n")
	k := max(sort.Search(n+1, func(k int) bool { return len(render(hits[:k]))+reserve > budget })-1, 0)
	decls := render(hits[:k])
	// The note: how many, why, and as many of their names as fit.
	var b strings.Builder
	b.WriteString(decls)
	b.WriteString(note(k))
	room := budget - b.Len() - len(" …\n")
	for i, h := range hits[k:] {
		name := " " + providers[h.provider].Name + "." + h.api.Name
		if i < len(hits[k:])-1 {
			name += ","
		}
		if len(name) > room {
			b.WriteString(" …")
			break
		}
		b.WriteString(name)
		room -= len(name)
	}
	b.WriteString("\n")
	return b.String()
}

const contract = "Run JavaScript or TypeScript to do the task in one step. `code` is the body of an async function " +
	"(an arrow or a named function is called; without a return, the last expression is the result). " +
	"The tools below are methods of their server's namespace, each taking one arguments object and returning a Promise: " +
	"use await freely (Promise.all runs calls at once), and return one JSON-serializable value. " +
	"A failed call throws an Error you can catch. console.log output comes back with the result. " +
	"There is no network and no filesystem: only these tools."

// contentNote says how an upstream MCP tool's result arrives in the
// program: exactly [Unwrap]'s rules, and what returning media does.
const contentNote = "MCP results arrive as: structuredContent when present; else all-text content as its text " +
	"(blocks joined by \"\\n\"), parsed if it is JSON; else one value per block (text: a string; image, audio: " +
	"{type, mimeType, data: Uint8Array}; resource_link: {type, uri, name, title?, description?, mimeType?, size?}; " +
	"resource: {type, uri, mimeType?, text or data: Uint8Array}), one block as itself, several as an array, none as null. " +
	"isError throws an Error with the text. An image or audio value returned as it came (or in the returned array or " +
	"object) reaches the client as an image or audio."

// head is the contract, with the content note when an upstream is routed.
func head(upstream bool) string {
	if upstream {
		return contract + "\n\n" + contentNote
	}
	return contract
}

// description is the code tool's full description.
func description(providers []codemode.Provider, upstream bool) string {
	d := head(upstream) + "\n\nAPIs (TypeScript):\n" + codemode.ProviderDeclarations(providers)
	if ex := codemode.ProviderExample(providers); ex != "" {
		d += "\n" + ex
	}
	return d
}

// progressiveDescription names the servers and their tool counts only.
func progressiveDescription(providers []codemode.Provider, upstream bool) string {
	var b strings.Builder
	b.WriteString(head(upstream))
	b.WriteString("\n\nThe servers (namespaces) and how many tools each has:\n")
	for _, p := range providers {
		fmt.Fprintf(&b, "- %s: %d tools\n", p.Name, len(p.Tools))
	}
	b.WriteString("\nThere are too many to list here: look them up first with `await " + searchProvider +
		".search_tools(\"word\")` (or {query, limit}), which returns the TypeScript declarations of every tool whose name or description holds a word of the query " +
		"(or call the search_tools MCP tool before writing the program).")
	if ex := codemode.ProviderExample(providers); ex != "" {
		b.WriteString("\n\n" + ex)
	}
	return b.String()
}

// maxMediaDepth bounds the walk of a result for binary values: deeper
// ones stay as the codec wrote them.
const maxMediaDepth = 512

// jnode is a decoded JSON value whose objects keep their key order.
type jnode struct {
	raw      json.RawMessage // a scalar's JSON, or a value past maxMediaDepth
	obj, arr bool
	keys     []string // an object's
	vals     []*jnode // an object's values, an array's items
}

// splitMedia takes the binary values out of a program's result (see
// [NewServer]): the result with placeholders, and the image and audio
// content blocks, numbered from 2 (the text block is the first). A
// result without binary, or one that does not decode, is returned as it
// is.
func splitMedia(result json.RawMessage) (json.RawMessage, []mcp.Content) {
	if !bytes.Contains(result, []byte(codemode.BinaryTag)) {
		return result, nil
	}
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	root, err := decodeNode(dec, 0)
	if err != nil {
		return result, nil
	}
	var blocks []mcp.Content
	take := func(n *jnode) *jnode {
		kind, mime, data, ok := media(n)
		if !ok {
			return n
		}
		if kind == "image" {
			blocks = append(blocks, &mcp.ImageContent{Data: data, MIMEType: mime})
		} else {
			blocks = append(blocks, &mcp.AudioContent{Data: data, MIMEType: mime})
		}
		return stringNode(fmt.Sprintf("[%s, %s: content %d]", mime, byteCount(len(data)), len(blocks)+1))
	}
	root = take(root)
	if root.obj || root.arr {
		for i, v := range root.vals {
			root.vals[i] = take(v)
		}
	}
	var b strings.Builder
	writeNode(&b, placeholders(root))
	return json.RawMessage(b.String()), blocks
}

// decodeNode reads one value.
func decodeNode(dec *json.Decoder, depth int) (*jnode, error) {
	if depth >= maxMediaDepth {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		return &jnode{raw: raw}, err
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &jnode{obj: t == '{', arr: t == '['}
		for dec.More() {
			if n.obj {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				n.keys = append(n.keys, key)
			}
			v, err := decodeNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return stringNode(t), nil
	case json.Number:
		return &jnode{raw: json.RawMessage(t)}, nil
	case bool:
		return &jnode{raw: json.RawMessage(strconv.FormatBool(t))}, nil
	}
	return &jnode{raw: json.RawMessage("null")}, nil
}

func stringNode(s string) *jnode { return &jnode{raw: json.RawMessage(jsonText(s))} }

// get is an object's value of key, or nil.
func (n *jnode) get(key string) *jnode {
	if n == nil || !n.obj {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// str is a string's value; false for anything else.
func (n *jnode) str() (string, bool) {
	if n == nil || len(n.raw) == 0 || n.raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(n.raw, &s) == nil
}

// binary is a binary envelope's type and bytes.
func binary(n *jnode) (typ string, data []byte, ok bool) {
	typ, ok = n.get(codemode.BinaryTag).str()
	if !ok || typ == "" {
		return "", nil, false
	}
	enc, ok := n.get("data").str()
	if !ok {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	return typ, data, err == nil
}

// media reads an image or audio value: {type?: "image" | "audio",
// mimeType: "image/…" | "audio/…", data: binary}.
func media(n *jnode) (kind, mime string, data []byte, ok bool) {
	mime, ok = n.get("mimeType").str()
	if !ok {
		return "", "", nil, false
	}
	kind, sub, _ := strings.Cut(mime, "/")
	if (kind != "image" && kind != "audio") || sub == "" {
		return "", "", nil, false
	}
	if t := n.get("type"); t != nil {
		if s, _ := t.str(); s != "image" && s != "audio" {
			return "", "", nil, false
		}
	}
	if _, data, ok = binary(n.get("data")); !ok {
		return "", "", nil, false
	}
	return kind, mime, data, true
}

// placeholders replaces every binary value left in n.
func placeholders(n *jnode) *jnode {
	if typ, data, ok := binary(n); ok {
		return stringNode(fmt.Sprintf("[%s, %s: not shown]", typ, byteCount(len(data))))
	}
	for i, v := range n.vals {
		n.vals[i] = placeholders(v)
	}
	return n
}

func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.Itoa(n) + " bytes"
}

// writeNode writes n as compact JSON.
func writeNode(b *strings.Builder, n *jnode) {
	switch {
	case n.obj:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonText(k))
			b.WriteByte(':')
			writeNode(b, n.vals[i])
		}
		b.WriteByte('}')
	case n.arr:
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			writeNode(b, v)
		}
		b.WriteByte(']')
	default:
		b.Write(n.raw)
	}
}
