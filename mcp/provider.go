// Package mcp connects Code Mode to the Model Context Protocol, through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): an MCP
// session's tools become a provider a sandboxed program calls ([Upstream]),
// a [Router] composes several providers into one dispatch that routes only
// the tools it was given, and [NewServer] serves code mode itself over MCP:
// one tool whose program may call every upstream tool.
//
// The sandbox has no network: a program reaches only the upstream tools
// configured here, through the host, and the upstreams' credentials stay
// in their own processes (or HTTP headers the host holds).
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
)

// Upstream is the tools of one MCP server as a provider: each tool a
// function of the program's namespace Name, under a JavaScript name
// (get-issue → get_issue), taking the tool's arguments object.
type Upstream struct {
	name  string
	tools []upstreamTool
	byJS  map[string]*upstreamTool

	mu      sync.Mutex
	session *mcp.ClientSession
	connect func(context.Context) (*mcp.ClientSession, error) // nil: no restart
	backoff time.Duration
	retry   time.Time
}

type upstreamTool struct {
	js   string // the program's name for it
	tool *mcp.Tool
}

// NewUpstream lists the session's tools (every page) and makes the
// provider name of them. Two tools whose names mangle to the same
// identifier are refused, naming both.
func NewUpstream(ctx context.Context, name string, session *mcp.ClientSession) (*Upstream, error) {
	u := &Upstream{name: name, session: session}
	if err := u.load(ctx, session); err != nil {
		return nil, err
	}
	return u, nil
}

// Reconnecting makes an upstream that connect (re)opens: when a call
// finds the session gone (the server died), the next call reconnects,
// after a backoff that doubles from 100 ms to 5 s while it keeps failing.
func Reconnecting(ctx context.Context, name string, connect func(context.Context) (*mcp.ClientSession, error)) (*Upstream, error) {
	s, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	u, err := NewUpstream(ctx, name, s)
	if err != nil {
		s.Close()
		return nil, err
	}
	u.connect = connect
	return u, nil
}

func (u *Upstream) load(ctx context.Context, s *mcp.ClientSession) error {
	var tools []upstreamTool
	byJS := map[string]*upstreamTool{}
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcp: listing the tools of %s: %w", u.name, err)
		}
		tools = append(tools, upstreamTool{js: codemode.JSIdentifier(mangle(t.Name)), tool: t})
	}
	for i := range tools {
		t := &tools[i]
		if other, ok := byJS[t.js]; ok {
			return fmt.Errorf("mcp: %s: tools %q and %q both become %s in JavaScript", u.name, other.tool.Name, t.tool.Name, t.js)
		}
		byJS[t.js] = t
	}
	u.tools, u.byJS = tools, byJS
	return nil
}

// mangle turns a tool name into identifier characters: every run of
// others becomes one underscore, and a leading digit gets one in front.
func mangle(name string) string {
	var b strings.Builder
	under := false
	for _, r := range name {
		ok := r == '_' || r == '$' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
		if !ok {
			if !under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		b.WriteRune(r)
		under = false
	}
	s := strings.TrimRight(b.String(), "_")
	if s == "" || ('0' <= s[0] && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

// Name is the provider's name in the program.
func (u *Upstream) Name() string { return u.name }

// Provider is the namespace for [codemode.Request.Providers]: the tools'
// names, descriptions and schemas (for [codemode.ProviderDeclarations]),
// each taking one arguments object.
func (u *Upstream) Provider() codemode.Provider {
	p := codemode.Provider{Name: u.name, ObjectArgs: true}
	for _, t := range u.tools {
		p.Tools = append(p.Tools, t.js)
		p.APIs = append(p.APIs, codemode.ProviderTool{Name: t.js, Description: t.tool.Description,
			Params: schemaJSON(t.tool.InputSchema), Returns: schemaJSON(t.tool.OutputSchema)})
	}
	return p
}

func schemaJSON(s any) json.RawMessage {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// Dispatch calls the tool (by its JavaScript name) with the arguments
// object and answers the result envelope (see [Unwrap]). The context's end
// cancels the MCP request. A tool the upstream does not have is
// [codemode.ToolNotFoundError].
func (u *Upstream) Dispatch(ctx context.Context, provider, tool, argsJSON string) (string, error) {
	t, ok := u.byJS[tool]
	if !ok || provider != u.name {
		return "", codemode.ToolNotFoundError{Tool: tool}
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		return "", fmt.Errorf("%s.%s takes one arguments object: %v", provider, tool, err)
	}
	s, err := u.live(ctx)
	if err != nil {
		return "", err
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: t.tool.Name, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if gone(err) {
			u.lost(s)
			return "", fmt.Errorf("the MCP server %s went away during the call (%v); it is restarted for later calls", u.name, err)
		}
		return "", fmt.Errorf("%s.%s: %v", provider, tool, err)
	}
	return Unwrap(res)
}

// gone reports an error that means the session is over: the server
// exited or closed the connection.
func gone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.HasSuffix(err.Error(), ": EOF")
}

// live returns the session, reconnecting a lost one after its backoff.
func (u *Upstream) live(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session != nil {
		return u.session, nil
	}
	if u.connect == nil {
		return nil, fmt.Errorf("the MCP server %s is gone", u.name)
	}
	if wait := time.Until(u.retry); wait > 0 {
		u.mu.Unlock()
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			u.mu.Lock()
			return nil, ctx.Err()
		}
		u.mu.Lock()
		if u.session != nil {
			return u.session, nil
		}
	}
	s, err := u.connect(ctx)
	if err != nil {
		u.failed()
		return nil, fmt.Errorf("the MCP server %s does not restart: %v", u.name, err)
	}
	u.session, u.backoff = s, 0
	return s, nil
}

// lost forgets a session that went away.
func (u *Upstream) lost(s *mcp.ClientSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session == s {
		u.session = nil
		s.Close()
		u.failed()
	}
}

// failed schedules the next connection attempt (u.mu held).
func (u *Upstream) failed() {
	u.backoff = min(max(2*u.backoff, 100*time.Millisecond), 5*time.Second)
	u.retry = time.Now().Add(u.backoff)
}

// Close ends the session.
func (u *Upstream) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.connect = nil
	if u.session == nil {
		return nil
	}
	err := u.session.Close()
	u.session = nil
	return err
}

// Unwrap turns a tool's result into the dispatch's envelope, in this order:
// isError gives {"error": the joined text}; structuredContent gives the
// value; content that is all text gives the text's JSON if it parses, else
// the text (several texts joined by newlines); otherwise each item becomes
// a value — text a string, an image or audio {type, mimeType, data} with
// data a binary envelope (a Uint8Array in the program), a resource link
// {type: "resource_link", uri, name, ...}, an embedded resource {type:
// "resource", uri, mimeType, text | data} — one item as itself, several as
// an array.
func Unwrap(res *mcp.CallToolResult) (string, error) {
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, t.Text)
			}
		}
		msg := strings.Join(texts, "\n")
		if msg == "" {
			msg = "the tool failed"
		}
		return envelope("error", msg)
	}
	if res.StructuredContent != nil {
		return envelope("result", res.StructuredContent)
	}
	allText := len(res.Content) > 0
	var texts []string
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok {
			allText = false
			break
		}
		texts = append(texts, t.Text)
	}
	if allText {
		text := strings.Join(texts, "\n")
		if json.Valid([]byte(text)) {
			return `{"result":` + text + `}`, nil
		}
		return envelope("result", text)
	}
	items := make([]any, 0, len(res.Content))
	for _, c := range res.Content {
		items = append(items, contentValue(c))
	}
	switch len(items) {
	case 0:
		return `{"result":null}`, nil
	case 1:
		return envelope("result", items[0])
	}
	return envelope("result", items)
}

// contentValue is one content item as the program sees it.
func contentValue(c mcp.Content) any {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return map[string]any{"type": "image", "mimeType": c.MIMEType, "data": c.Data}
	case *mcp.AudioContent:
		return map[string]any{"type": "audio", "mimeType": c.MIMEType, "data": c.Data}
	case *mcp.ResourceLink:
		v := map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name}
		for k, s := range map[string]string{"title": c.Title, "description": c.Description, "mimeType": c.MIMEType} {
			if s != "" {
				v[k] = s
			}
		}
		if c.Size != nil {
			v["size"] = *c.Size
		}
		return v
	case *mcp.EmbeddedResource:
		v := map[string]any{"type": "resource"}
		if r := c.Resource; r != nil {
			v["uri"] = r.URI
			if r.MIMEType != "" {
				v["mimeType"] = r.MIMEType
			}
			if r.Blob != nil {
				v["data"] = r.Blob
			} else {
				v["text"] = r.Text
			}
		}
		return v
	}
	b, _ := json.Marshal(c)
	return json.RawMessage(b)
}

// envelope is {"<key>": v} through the codec ([]byte as binary data).
func envelope(key string, v any) (string, error) {
	s, err := codemode.StringifyForDispatch(map[string]any{key: v})
	if err != nil {
		return "", fmt.Errorf("the tool's result does not encode: %v", err)
	}
	return s, nil
}
