package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
)

// Config is the `mcpServers` file the desktop clients use:
//
//	{"mcpServers": {
//	  "github": {"command": "github-mcp", "args": ["stdio"], "env": {"GITHUB_TOKEN": "..."}},
//	  "docs":   {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}}
//	}}
type Config struct {
	Servers map[string]ServerConfig `json:"mcpServers"`
}

// ServerConfig is one upstream: a command to run (stdio) or a URL
// (streamable HTTP).
type ServerConfig struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// ReadConfig reads an mcpServers file.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: want {\"mcpServers\": {\"name\": {\"command\", \"args\", \"env\"} | {\"url\", \"headers\"}}}: %v", path, err)
	}
	if c.Servers == nil {
		return nil, fmt.Errorf("%s: no \"mcpServers\"", path)
	}
	for name, s := range c.Servers {
		if (s.Command == "") == (s.URL == "") {
			return nil, fmt.Errorf("%s: server %q: give exactly one of command and url", path, name)
		}
	}
	return &c, nil
}

// connector opens a session to one configured server.
func (s ServerConfig) connector(name string) func(context.Context) (*mcp.ClientSession, error) {
	return func(ctx context.Context) (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "codemode", Version: "dev"}, nil)
		var t mcp.Transport
		if s.Command != "" {
			cmd := exec.Command(s.Command, s.Args...)
			cmd.Env = os.Environ()
			for k, v := range s.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			cmd.Stderr = os.Stderr
			t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		} else {
			t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: headers{s.Headers}}}
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return client.Connect(ctx, t, nil)
	}
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

// Start connects to every configured server (in name order), each an
// [Upstream] that reconnects when its server dies. A server that does not
// start, or whose name is no JavaScript identifier, is left out and its
// error returned beside the others.
func (c *Config) Start(ctx context.Context) ([]*Upstream, []error) {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	var ups []*Upstream
	var errs []error
	for _, n := range names {
		if js := codemode.JSIdentifier(n); js != n {
			errs = append(errs, fmt.Errorf("mcp server %q: the name is no JavaScript identifier (try %q)", n, js))
			continue
		}
		u, err := Reconnecting(ctx, n, c.Servers[n].connector(n))
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %q: %v", n, err))
			continue
		}
		ups = append(ups, u)
	}
	return ups, errs
}
