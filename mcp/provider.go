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
//
// # Upstreams
//
// An upstream server is someone else's code, and may be hostile or broken;
// one must never hold up the host or the other upstreams:
//
//   - Listing a server's tools stops at 500 pages, 5,000 tools and 30 s
//     (a cursor that never ends, a flood, a server that never answers),
//     failing with an error naming the bound. No real server comes near.
//   - [Config.Start] starts every server at once, each within 30 s to
//     connect and 30 s to list, and serves those that started, reporting
//     the others.
//   - One message of a stdio server is at most 16 MiB (the SDK's own bound
//     on a line and on an HTTP event). The stdio transport is our copy of
//     the SDK's, so that the bound is an error we recognize and stopping a
//     server closes its stdout too (a server blocked writing the rest ends).
//     A larger reply fails its call, saying so, and ends the session, as any
//     transport failure does: an upstream watches its session, and one that
//     [Reconnecting] made opens a new session for the next call; one that
//     [NewUpstream] made says the server is gone for good. A call that finds
//     its session already ended (the SDK sent nothing) goes once more on a
//     new session; a call the server may have received is never sent twice.
//   - A stdio server gets only its configured environment over a small
//     default (HOME, LOGNAME, PATH, SHELL, TERM, USER), as the official
//     SDKs give one, never the host's secrets.
//
// Tool names become JavaScript names: every run of characters an
// identifier cannot hold becomes one underscore (get-issue → get_issue),
// reserved words get a suffix ([codemode.JSIdentifier]), and `then`
// becomes `then_` (a namespace's then is never a tool: awaiting a
// namespace must not call one), its description saying so. Every other
// name is a property a program can call, Object.prototype's (constructor,
// toString, valueOf, ...) included. Two tools that become one name fail
// the upstream, naming both.
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
// (get-issue → get_issue), taking the tool's arguments object. Its
// methods are safe for concurrent use.
type Upstream struct {
	name  string
	tools []upstreamTool
	byJS  map[string]*upstreamTool

	mu      sync.Mutex
	session *mcp.ClientSession
	why     error                                             // why session is nil
	connect func(context.Context) (*mcp.ClientSession, error) // nil: no restart
	backoff time.Duration
	retry   time.Time
}

type upstreamTool struct {
	js   string // the program's name for it
	tool *mcp.Tool
}

// Bounds on listing one server's tools.
const (
	maxPages    = 500
	maxTools    = 5000
	listTimeout = 30 * time.Second
)

// NewUpstream lists the session's tools (every page, within the bounds of
// the package documentation) and makes the provider name of them. Two
// tools whose names mangle to the same identifier are refused, naming
// both. The upstream watches the session (a goroutine until it ends);
// once it ends, calls fail saying the server is gone: NewUpstream never
// reconnects (see [Reconnecting]). The caller keeps the session and
// closes it, or closes the upstream.
func NewUpstream(ctx context.Context, name string, session *mcp.ClientSession) (*Upstream, error) {
	u := &Upstream{name: name, session: session}
	if err := u.load(ctx, session); err != nil {
		return nil, err
	}
	go u.watch(session)
	return u, nil
}

// Reconnecting makes an upstream that connect (re)opens: when a session
// ends (the server died, or closed the session), the next call
// reconnects, after a backoff that doubles from 100 ms to 5 s while it
// keeps failing. The tools are listed once, on the first session.
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
	u.mu.Lock()
	u.connect = connect
	u.mu.Unlock()
	return u, nil
}

func (u *Upstream) load(ctx context.Context, s *mcp.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var tools []upstreamTool
	byJS := map[string]*upstreamTool{}
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("mcp: listing the tools of %s: more than %d pages (the bound on pages; does its cursor never end?)", u.name, maxPages)
		}
		res, err := s.ListTools(lctx, params)
		if err != nil {
			if lctx.Err() != nil && ctx.Err() == nil {
				return fmt.Errorf("mcp: listing the tools of %s took longer than %v (the bound on listing)", u.name, listTimeout)
			}
			return fmt.Errorf("mcp: listing the tools of %s: %w", u.name, err)
		}
		if len(tools)+len(res.Tools) > maxTools {
			return fmt.Errorf("mcp: listing the tools of %s: more than %d tools (the bound on tools)", u.name, maxTools)
		}
		for _, t := range res.Tools {
			js := codemode.JSIdentifier(mangle(t.Name))
			if js == "then" {
				js = "then_"
				t = ptr(*t)
				t.Description = strings.TrimSpace(t.Description + "\n\n(The MCP tool \"then\": then_ here, as a namespace's then is never a tool.)")
			}
			tools = append(tools, upstreamTool{js: js, tool: t})
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
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

func ptr[T any](v T) *T { return &v }

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

// Effects are the effects its server declares of its tools: a tool whose
// annotations say readOnlyHint is EffectRead, by its policy name
// ("provider.tool"); the others are left to the host's policy (whose
// default is a write).
func (u *Upstream) Effects() map[string]codemode.Effect {
	out := map[string]codemode.Effect{}
	for _, t := range u.tools {
		if a := t.tool.Annotations; a != nil && a.ReadOnlyHint {
			out[u.name+"."+t.js] = codemode.EffectRead
		}
	}
	return out
}

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
// [codemode.ToolNotFoundError]. A call during which the session ends (the
// server exited, or sent a reply past 16 MiB) fails saying so, and
// whether the server is restarted for later calls; a call that finds the
// session already ended, and so sent nothing, goes once more on a new
// session of an upstream that restarts.
func (u *Upstream) Dispatch(ctx context.Context, provider, tool, argsJSON string) (string, error) {
	t, ok := u.byJS[tool]
	if !ok || provider != u.name {
		return "", codemode.ToolNotFoundError{Tool: tool}
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		return "", fmt.Errorf("%s.%s takes one arguments object: %v", provider, tool, err)
	}
	for retried := false; ; retried = true {
		s, err := u.live(ctx)
		if err != nil {
			return "", err
		}
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: t.tool.Name, Arguments: args})
		switch {
		case err == nil:
			return Unwrap(res)
		case ctx.Err() != nil:
			return "", ctx.Err()
		case !gone(err):
			return "", fmt.Errorf("%s.%s: %v", provider, tool, err)
		}
		restarts := u.lost(s, err)
		what := fmt.Sprintf("the MCP server %s went away during the call (%v)", u.name, err)
		switch {
		case errors.Is(err, errTooLarge):
			what = fmt.Sprintf("the reply was larger than %d MiB, the most one message may be, so the session with the MCP server %s closed", maxMessage>>20, u.name)
		case errors.Is(err, mcp.ErrConnectionClosed):
			// The SDK sent nothing: the session had ended before the call.
			if restarts && !retried {
				continue
			}
			what = fmt.Sprintf("the session with the MCP server %s had ended (%v)", u.name, err)
		}
		next := "it is restarted for later calls"
		if !restarts {
			next = "it is gone for good (this upstream does not restart it)"
		}
		return "", fmt.Errorf("%s.%s: %s; %s", provider, tool, what, next)
	}
}

// gone reports an error that means the session is over: the server
// exited or closed the connection, or sent a message past the bound.
func gone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, errTooLarge) || strings.HasSuffix(err.Error(), ": EOF")
}

// Ready returns once the upstream has a live session: at once while it
// has one, else after reconnecting a lost one (after its backoff), within
// ctx; the error says why it has none. A harness calls it before a job
// starts, so that a restart's wait is charged to no job's deadline
// (codemode batch does).
func (u *Upstream) Ready(ctx context.Context) error {
	_, err := u.live(ctx)
	return err
}

// live returns the session, reconnecting a lost one after its backoff.
func (u *Upstream) live(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session != nil {
		return u.session, nil
	}
	if u.connect == nil {
		return nil, fmt.Errorf("the MCP server %s is gone (%v); this upstream does not restart it", u.name, u.why)
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
		if u.connect == nil {
			return nil, fmt.Errorf("the MCP server %s is gone (%v)", u.name, u.why)
		}
	}
	s, err := u.connect(ctx)
	if err != nil {
		u.failed()
		return nil, fmt.Errorf("the MCP server %s does not restart: %v", u.name, err)
	}
	u.session, u.backoff = s, 0
	go u.watch(s)
	return s, nil
}

// watch forgets the session when it ends.
func (u *Upstream) watch(s *mcp.ClientSession) {
	err := s.Wait()
	if err == nil {
		err = errors.New("the session ended")
	}
	u.lost(s, err)
}

// lost forgets a session that went away (if it is still the current one)
// and reports whether the upstream restarts.
func (u *Upstream) lost(s *mcp.ClientSession, why error) (restarts bool) {
	u.mu.Lock()
	restarts = u.connect != nil
	if u.session != s {
		u.mu.Unlock()
		return restarts
	}
	u.session, u.why = nil, why
	u.failed()
	u.mu.Unlock()
	s.Close()
	return restarts
}

// failed schedules the next connection attempt (u.mu held).
func (u *Upstream) failed() {
	u.backoff = min(max(2*u.backoff, 100*time.Millisecond), 5*time.Second)
	u.retry = time.Now().Add(u.backoff)
}

// Close ends the session; later calls fail. It is idempotent.
func (u *Upstream) Close() error {
	u.mu.Lock()
	s := u.session
	u.connect, u.session, u.why = nil, nil, errors.New("the upstream was closed")
	u.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
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
