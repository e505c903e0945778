package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/codemode-go/codemode"
)

// TestDeadlineForTools: a run whose tools are a process or MCP servers
// gets a deadline for real tools unless --deadline gives one, and -h says
// each surface's default.
func TestDeadlineForTools(t *testing.T) {
	for _, c := range []struct {
		tf   toolFlags
		flag time.Duration
		want time.Duration
	}{
		{toolFlags{}, 0, 0}, // codemode's 500 ms
		{toolFlags{fixtures: "f.json"}, 0, 0},
		{toolFlags{dispatchCmd: "python3 tools.py"}, 0, 30 * time.Second},
		{toolFlags{mcp: "servers.json"}, 0, 60 * time.Second},
		{toolFlags{mcp: "servers.json"}, 2 * time.Second, 2 * time.Second},
	} {
		lf := limitFlags{codemode.Limits{Deadline: c.flag}}
		lf.forTools(&c.tf)
		assert.Equal(t, c.want, lf.l.Deadline, "%+v", c.tf)
	}
	for cmd, want := range map[string]string{
		"run":   "default 500ms; 30s with --dispatch-cmd, 1m0s with --mcp",
		"batch": "default 500ms; 30s with --dispatch-cmd, 1m0s with --mcp",
		"mcp":   "default 1m0s",
		"serve": "default 30s, the most a program gets",
	} {
		var stderr bytes.Buffer
		assert.Equal(t, exitOK, Main(context.Background(), []string{cmd, "-h"}, nil, &bytes.Buffer{}, &stderr), cmd)
		assert.Contains(t, stderr.String(), want, cmd)
	}
}
