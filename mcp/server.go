package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	// `await codemode.search_tools("word")`.
	TokenBudget int
	// Progress is how often a running program reports progress to a
	// client that asked for it (default 1 s); every upstream call also
	// reports.
	Progress time.Duration
}

// DefaultTokenBudget is ServerOptions.TokenBudget's default.
const DefaultTokenBudget = 8000

// searchProvider is the namespace of progressive discovery.
const searchProvider = "codemode"

// NewServer returns an MCP server exposing code mode over the router's
// providers: one tool taking {code} that runs the program with exec
// (every upstream tool in its scope) and returns {result, logs} as
// structured content with a text rendering; a program that fails sets
// isError, its text the model-readable error JSON with the logs. The
// request's cancellation stops the program; a client's progress token
// gets progress notifications while it runs.
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
	for _, p := range router.Providers() {
		if p.Name == searchProvider {
			return nil, fmt.Errorf("mcp: the provider name %q is the server's own (progressive discovery)", searchProvider)
		}
	}
	h := &handler{exec: exec, router: router, opts: opts}
	full := description(router.Providers())
	h.progressive = len(full)/4 > opts.TokenBudget
	desc := opts.Description
	if desc == "" {
		desc = full
		if h.progressive {
			desc = progressiveDescription(router.Providers())
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, nil)
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
			"type": "object",
			"properties": map[string]any{
				"result": map[string]any{"description": "the program's value"},
				"logs":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"error":  map[string]any{"type": "object", "description": "the failure, when the program failed"},
			},
		},
	}, h.run)
	if h.progressive {
		s.AddTool(&mcp.Tool{
			Name:        "search_tools",
			Description: "Finds the APIs " + opts.ToolName + " programs may call: the TypeScript declarations of every tool whose name or description holds a word of the query.",
			InputSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"query": map[string]any{"type": "string"}},
				"required":   []string{"query"},
			},
		}, h.search)
	}
	return s, nil
}

type handler struct {
	exec        *codemode.Executor
	router      *Router
	opts        ServerOptions
	progressive bool
}

// run serves the code tool.
func (h *handler) run(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Code == nil {
		return failure(`{"kind":"invalid_args","name":"`+h.opts.ToolName+`","reason":"the arguments are {\"code\": string}"}`, nil), nil
	}
	providers := h.router.Providers()
	dispatch := h.router.Dispatch
	if h.progressive {
		providers = append(providers, codemode.Provider{Name: searchProvider, Tools: []string{"search_tools"}})
		inner := dispatch
		dispatch = func(ctx context.Context, provider, tool, args string) (string, error) {
			if provider == searchProvider && tool == "search_tools" {
				var q []string
				if err := json.Unmarshal([]byte(args), &q); err != nil || len(q) != 1 {
					return "", fmt.Errorf("search_tools takes one string")
				}
				return envelope("result", search(h.router.Providers(), q[0]))
			}
			return inner(ctx, provider, tool, args)
		}
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
	res := h.exec.Execute(ctx, codemode.Request{Code: *in.Code, Providers: providers, Dispatch: dispatch})
	if res.Error != "" {
		var ej json.RawMessage
		if res.Err != nil {
			ej = json.RawMessage(res.Err.LLMJSON())
		} else {
			b, _ := json.Marshal(map[string]string{"kind": "invalid_args", "name": h.opts.ToolName, "reason": res.Error})
			ej = b
		}
		return failure(string(ej), res.Logs), nil
	}
	result := res.Result
	if result == nil {
		result = json.RawMessage("null")
	}
	out := map[string]any{"result": result, "logs": res.Logs}
	text, _ := json.Marshal(out)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: out}, nil
}

// failure is an isError result: the error JSON with the logs, as text and
// structured content.
func failure(errJSON string, logs []string) *mcp.CallToolResult {
	if logs == nil {
		logs = []string{}
	}
	out := map[string]any{"error": json.RawMessage(errJSON), "logs": logs}
	text, _ := json.Marshal(out)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: out}
}

// search serves the search_tools MCP tool.
func (h *handler) search(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the arguments are {\"query\": string}"}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: search(h.router.Providers(), in.Query)}}}, nil
}

// search returns the declarations of the tools matching a word of query
// in their name or description.
func search(providers []codemode.Provider, query string) string {
	words := strings.Fields(strings.ToLower(query))
	var hits []codemode.Provider
	for _, p := range providers {
		q := p
		q.Tools, q.APIs = nil, nil
		for _, api := range p.APIs {
			hay := strings.ToLower(api.Name + " " + strings.ReplaceAll(api.Name, "_", " ") + " " + api.Description)
			for _, w := range words {
				if strings.Contains(hay, w) {
					q.Tools = append(q.Tools, api.Name)
					q.APIs = append(q.APIs, api)
					break
				}
			}
		}
		if len(q.APIs) > 0 {
			hits = append(hits, q)
		}
	}
	if len(hits) == 0 {
		return "No tool matches " + fmt.Sprintf("%q", query) + "."
	}
	return codemode.ProviderDeclarations(hits)
}

const contract = "Run JavaScript or TypeScript to do the task in one step. `code` is the body of an async function " +
	"(an arrow or a named function is called; without a return, the last expression is the result). " +
	"The tools below are methods of their server's namespace, each taking one arguments object and returning a Promise: " +
	"use await freely (Promise.all runs calls at once), and return one JSON-serializable value. " +
	"A failed call throws an Error you can catch. console.log output comes back with the result. " +
	"There is no network and no filesystem: only these tools."

// description is the code tool's full description.
func description(providers []codemode.Provider) string {
	return contract + "\n\nAPIs (TypeScript):\n" + codemode.ProviderDeclarations(providers) + example(providers)
}

// progressiveDescription names the servers and their tool counts only.
func progressiveDescription(providers []codemode.Provider) string {
	var b strings.Builder
	b.WriteString(contract)
	b.WriteString("\n\nThe servers (namespaces) and how many tools each has:\n")
	for _, p := range providers {
		fmt.Fprintf(&b, "- %s: %d tools\n", p.Name, len(p.Tools))
	}
	b.WriteString("\nThere are too many to list here: look them up first with `await " + searchProvider +
		".search_tools(\"word\")`, which returns the TypeScript declarations of every tool whose name or description holds a word of the query " +
		"(or call the search_tools MCP tool before writing the program).")
	b.WriteString(example(providers))
	return b.String()
}

func example(providers []codemode.Provider) string {
	for _, p := range providers {
		if len(p.Tools) > 0 {
			return "\n\nExample:\nconst r = await " + p.Name + "." + p.Tools[0] + "({ /* arguments */ });\nreturn r;"
		}
	}
	return ""
}
