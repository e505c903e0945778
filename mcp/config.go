package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
)

// Config is the `mcpServers` file the desktop clients use (or VS Code's
// .vscode/mcp.json, whose object is "servers", each with its "type"):
//
//	{"mcpServers": {
//	  "github": {"command": "github-mcp", "args": ["stdio"], "env": {"GITHUB_TOKEN": "..."}},
//	  "docs":   {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}},
//	  "old":    {"command": "old-mcp", "disabled": true}
//	}}
//
// [ReadConfig] takes the keys Claude Desktop, Cursor, Cline, Roo Code and
// Kilo Code write for a server, and refuses any other, naming it: a key we
// do not know may be one that matters (Cursor's "envFile" or "auth",
// VS Code's "dev"), and ignoring it would start a server other than the
// one configured. Honoured: "command", "args", "env", "cwd", "url",
// "headers", "disabled" (the server is neither started nor listed) and
// "type" ("stdio"; "http", "streamable-http" or "streamableHttp" for
// streamable HTTP; "sse" for the 2024 HTTP+SSE transport), or Cline's
// older "transportType" ("stdio", "http", "sse"). A url without a type
// is streamable HTTP (Cline takes it for HTTP+SSE: give such a server
// "type": "sse"). Accepted and ignored, being the clients' own approval
// and timeout settings: "autoApprove", "alwaysAllow", "timeout" (a
// program's calls end with its deadline). Other top-level keys of the
// file (a client's own settings) are ignored.
type Config struct {
	// Servers are the upstreams by name, each name the program's
	// namespace for the server's tools.
	Servers map[string]ServerConfig `json:"mcpServers"`
}

// ServerConfig is one upstream: a command to run (stdio) or a URL
// (streamable HTTP, or HTTP+SSE with Type "sse"). The zero Type follows
// from which of Command and URL is set.
type ServerConfig struct {
	// Type is the transport: "" or "stdio" with Command; "", "http",
	// "streamable-http" or "streamableHttp" (streamable HTTP) or "sse"
	// with URL.
	Type string `json:"type,omitempty"`
	// Command, Args, Env and Dir start a stdio server. Its environment is
	// Env over a small default taken from ours (HOME, LOGNAME, PATH,
	// SHELL, TERM, USER; on Windows the variables a process needs to
	// run), as the official SDKs give one: nothing else of ours.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Dir is the working directory (the clients' "cwd"); empty: ours.
	Dir string `json:"cwd,omitempty"`
	// URL and Headers reach an HTTP server.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Disabled servers are skipped by [Config.Start]: not started, not
	// among its upstreams or its errors.
	Disabled bool `json:"disabled,omitempty"`
}

// serverKeys are the keys ReadConfig takes in a server's entry: true for
// those it honours, false for those it ignores.
var serverKeys = map[string]bool{
	"type": true, "transportType": true, "command": true, "args": true, "env": true, "cwd": true,
	"url": true, "headers": true, "disabled": true,
	"autoApprove": false, "alwaysAllow": false, "timeout": false,
}

// ReadConfig reads an mcpServers file (see [Config] for the keys). Its
// errors name the file, the server and the key.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const want = `want {"mcpServers": {"name": {"command", "args", "env"} | {"url", "headers"}}} ` +
		`(or VS Code's {"servers": {"name": {"type": "stdio", "command", ...}}})`
	var raw struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
		Code    map[string]json.RawMessage `json:"servers"` // VS Code's .vscode/mcp.json
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %s: %v", path, want, err)
	}
	servers, vscode := raw.Servers, false
	switch {
	case raw.Servers != nil && raw.Code != nil:
		return nil, fmt.Errorf("%s: both \"mcpServers\" and \"servers\": give one", path)
	case raw.Servers == nil && raw.Code != nil:
		servers, vscode = raw.Code, true
	case raw.Servers == nil:
		return nil, fmt.Errorf("%s: no \"mcpServers\" (or VS Code's \"servers\"): %s", path, want)
	}
	c := &Config{Servers: map[string]ServerConfig{}}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s, err := readServer(servers[name])
		if err == nil && vscode {
			err = noVariables(s)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: server %q: %v", path, name, err)
		}
		c.Servers[name] = s
	}
	return c, nil
}

// noVariables refuses a VS Code server entry that uses its variables
// (${input:token}, ${env:HOME}, ${workspaceFolder}): VS Code resolves them
// as it starts the server, and a server started with the text itself would
// be another one than the one configured.
func noVariables(s ServerConfig) error {
	check := func(where, v string) error {
		if strings.Contains(v, "${") {
			return fmt.Errorf("%s uses a VS Code variable (%q): give the value itself", where, v)
		}
		return nil
	}
	values := []struct{ where, v string }{{"command", s.Command}, {"url", s.URL}, {"cwd", s.Dir}}
	for i, a := range s.Args {
		values = append(values, struct{ where, v string }{fmt.Sprintf("args[%d]", i), a})
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		values = append(values, struct{ where, v string }{"env." + k, s.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		values = append(values, struct{ where, v string }{"headers." + k, s.Headers[k]})
	}
	for _, x := range values {
		if err := check(x.where, x.v); err != nil {
			return err
		}
	}
	return nil
}

func readServer(data json.RawMessage) (ServerConfig, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil || keys == nil {
		return ServerConfig{}, errors.New("want an object")
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if _, ok := serverKeys[k]; !ok {
			return ServerConfig{}, fmt.Errorf("unknown key %q (the keys taken: %s)", k, strings.Join(slices.Sorted(maps.Keys(serverKeys)), ", "))
		}
	}
	var s struct {
		ServerConfig
		TransportType string `json:"transportType"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return ServerConfig{}, err
	}
	if s.Type == "" {
		s.Type = s.TransportType
	}
	_, err := s.ServerConfig.transport()
	return s.ServerConfig, err
}

// transport is the server's transport: "stdio", "http" or "sse".
func (s ServerConfig) transport() (string, error) {
	switch {
	case (s.Command == "") == (s.URL == ""):
		return "", errors.New("give exactly one of command and url")
	case s.URL != "" && s.Dir != "":
		return "", errors.New("cwd is for a command")
	}
	switch s.Type {
	case "", "stdio":
		if s.URL == "" {
			return "stdio", nil
		}
		if s.Type != "" {
			return "", errors.New(`type "stdio" takes a command, not a url`)
		}
		return "http", nil
	case "http", "streamable-http", "streamableHttp", "sse":
		if s.Command != "" {
			return "", fmt.Errorf("type %q takes a url, not a command", s.Type)
		}
		if s.Type == "sse" {
			return "sse", nil
		}
		return "http", nil
	}
	return "", fmt.Errorf("type %q is none of stdio, http (streamable-http, streamableHttp) and sse", s.Type)
}

// connectTimeout bounds connecting to a configured server (npx may be
// fetching the package first).
const connectTimeout = 30 * time.Second

// connector opens a session to one configured server.
func (s ServerConfig) connector() func(context.Context) (*mcp.ClientSession, error) {
	return func(ctx context.Context) (*mcp.ClientSession, error) {
		kind, err := s.transport()
		if err != nil {
			return nil, err
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "codemode", Version: "dev"}, nil)
		var t mcp.Transport
		hc := &http.Client{Transport: headers{s.Headers}}
		switch kind {
		case "stdio":
			cmd := exec.Command(s.Command, s.Args...)
			cmd.Env = serverEnv(s.Env)
			cmd.Dir = s.Dir
			cmd.Stderr = os.Stderr
			cmd.WaitDelay = stopGrace
			t = stdioTransport{cmd}
		case "sse":
			t = &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}
		default:
			t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}
		}
		// The session outlives ctx (the HTTP+SSE transport keeps its
		// stream on the context it connects with): ctx and the timeout end
		// the connecting only.
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		timer := time.AfterFunc(connectTimeout, cancel)
		stop := context.AfterFunc(ctx, cancel)
		cs, err := client.Connect(cctx, t, nil)
		timedOut, ended := !timer.Stop(), !stop()
		if err == nil && (timedOut || ended) {
			cs.Close()
			err = context.Canceled
		}
		switch {
		case err == nil:
			return cs, nil
		case timedOut:
			err = fmt.Errorf("connecting took longer than %v (%w)", connectTimeout, err)
		case ended:
			err = ctx.Err()
		}
		cancel()
		return nil, err
	}
}

// inheritedEnv are the variables a stdio server gets from our environment
// (the official SDKs' default environment; values starting with "()",
// shell functions, are left out as they do).
var inheritedEnv = func() []string {
	if runtime.GOOS == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
}()

// serverEnv is a stdio server's environment: the inherited variables,
// then its own (which win).
func serverEnv(own map[string]string) []string {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok && !strings.HasPrefix(v, "()") {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		env = append(env, k+"="+own[k])
	}
	return env
}

// headers adds fixed headers to every request.
type headers struct{ h map[string]string }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// maxMessage bounds one message of a stdio server (the SDK's own bound on
// a line, and on a server-sent event over HTTP).
const maxMessage = mcp.DefaultMaxLineLength

// errTooLarge ends a stdio session whose server sent a message past
// maxMessage.
var errTooLarge = fmt.Errorf("a message of the server is larger than %d MiB, the most one may be", maxMessage>>20)

// stdioTransport runs a command and speaks newline-delimited JSON over its
// stdin and stdout, as the SDK's CommandTransport does, but with the
// bound on a message its own (errTooLarge, which Dispatch recognizes) and
// a stop that closes stdout too, so a server blocked writing an oversized
// reply ends.
type stdioTransport struct{ cmd *exec.Cmd }

// Connect starts the command.
func (t stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	iot := &mcp.IOTransport{Reader: &lineLimit{r: stdout}, Writer: &proc{cmd: t.cmd, WriteCloser: stdin}, MaxLineLength: -1}
	return iot.Connect(ctx)
}

// lineLimit fails with errTooLarge on a line longer than maxMessage,
// before handing on more than maxMessage bytes of it.
type lineLimit struct {
	r io.ReadCloser
	n int // bytes since the last newline
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if room := maxMessage - l.n; len(p) > room {
		p = p[:max(room, 1)]
	}
	n, err := l.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.n = n - 1 - i
	} else {
		l.n += n
	}
	if l.n > maxMessage {
		return 0, errTooLarge
	}
	return n, err
}

func (l *lineLimit) Close() error { return l.r.Close() }

// stopGrace is how long a stopping server gets after stdin closes, and
// again after SIGTERM, before SIGKILL.
const stopGrace = 2 * time.Second

// proc is a server's stdin; closing it stops the server as the spec
// says: stdin closed, then SIGTERM, then SIGKILL.
type proc struct {
	cmd *exec.Cmd
	io.WriteCloser
}

func (p *proc) Close() error {
	p.WriteCloser.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Kill} {
		select {
		case err := <-done:
			return err
		case <-time.After(stopGrace):
		}
		p.cmd.Process.Signal(sig)
	}
	return <-done // WaitDelay bounds it
}

// Start starts every configured server that is not disabled, all at once,
// each an [Upstream] that reconnects when its server dies, and returns
// them in name order. A server that does not start — its name is no
// JavaScript identifier, its entry is invalid, it does not connect within
// 30 s, listing its tools passes a bound (see the package documentation)
// — is left out, and its error returned beside the others (in name order
// too): one bad server never holds up the rest. Start returns when every
// server has started or failed.
func (c *Config) Start(ctx context.Context) ([]*Upstream, []error) {
	var names []string
	for n, s := range c.Servers {
		if !s.Disabled {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	ups := make([]*Upstream, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		if js := codemode.JSIdentifier(n); js != n {
			errs[i] = fmt.Errorf("mcp server %q: the name is no JavaScript identifier (try %q)", n, js)
			continue
		}
		wg.Go(func() {
			ups[i], errs[i] = Reconnecting(ctx, n, c.Servers[n].connector())
			if errs[i] != nil {
				errs[i] = fmt.Errorf("mcp server %q: %v", n, errs[i])
			}
		})
	}
	wg.Wait()
	ups = slices.DeleteFunc(ups, func(u *Upstream) bool { return u == nil })
	errs = slices.DeleteFunc(errs, func(e error) bool { return e == nil })
	return ups, errs
}
