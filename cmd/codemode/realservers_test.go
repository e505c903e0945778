//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cmcp "github.com/codemode-go/codemode/mcp"
)

// realMCPServers are the npm MCP servers TestRealServers serves, each with
// its entry point under node_modules. .ci/run installs them, pinned.
var realMCPServers = map[string]string{
	"memory":     "@modelcontextprotocol/server-memory/dist/index.js",
	"filesystem": "@modelcontextprotocol/server-filesystem/dist/index.js",
	"everything": "@modelcontextprotocol/server-everything/dist/index.js",
}

// realMCPPrefix is the npm prefix holding the servers and the official
// TypeScript SDK: $CODEMODE_REALMCP (.ci/run sets it, so CI never skips),
// else the one .ci/run installs under ~/.cache/codemode-realmcp. missing
// names the first file it lacks; required says the prefix was asked for.
func realMCPPrefix() (prefix, missing string, required bool) {
	prefix = os.Getenv("CODEMODE_REALMCP")
	required = prefix != ""
	if !required {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "a home directory", false
		}
		prefix = filepath.Join(home, ".cache", "codemode-realmcp")
	}
	need := []string{"@modelcontextprotocol/sdk/package.json", "@modelcontextprotocol/client/package.json",
		"@modelcontextprotocol/ext-tasks/package.json"}
	for _, name := range []string{"memory", "filesystem", "everything"} {
		need = append(need, realMCPServers[name])
	}
	for _, p := range need {
		if p := filepath.Join(prefix, "node_modules", p); !exists(p) {
			return prefix, p, required
		}
	}
	return prefix, "", required
}

// needRealMCP returns node and the node_modules holding the real servers
// and the SDKs, or skips the test without them (fails it when
// CODEMODE_REALMCP asks for it to run, as .ci/run does).
func needRealMCP(t *testing.T) (node, modules string) {
	t.Helper()
	prefix, missing, required := realMCPPrefix()
	skip := t.Skipf
	if required {
		skip = t.Fatalf
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("no node on PATH: the real MCP servers and the TypeScript SDK's clients run on it")
	}
	if missing != "" {
		skip("no %s: npm install the servers and the SDKs as .ci/run does (CODEMODE_REALMCP: an npm prefix holding them)", missing)
	}
	return node, filepath.Join(prefix, "node_modules")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestRealServers: `codemode mcp` over three real MCP servers from npm
// (memory, filesystem, everything; started with node, no network), driven
// by the official TypeScript SDK's client (testdata/realmcp/client.mjs)
// over stdio and over streamable HTTP, each with the default token budget
// (every declaration in the description) and a small one (progressive
// discovery: search_tools). The client checks the tool list, the
// declarations of a few real tools, programs using each server and all
// three at once, errors, an image, and searches within the budget. It
// skips only without node or the packages (.ci/run installs them).
func TestRealServers(t *testing.T) {
	node, modules := needRealMCP(t)
	for _, pkg := range []string{"sdk", "server-memory", "server-filesystem", "server-everything"} {
		var v struct{ Version string }
		b, _ := os.ReadFile(filepath.Join(modules, "@modelcontextprotocol", pkg, "package.json"))
		json.Unmarshal(b, &v)
		t.Logf("@modelcontextprotocol/%s %s", pkg, v.Version)
	}
	client, err := os.ReadFile(filepath.Join("testdata", "realmcp", "client.mjs"))
	require.NoError(t, err)
	self := selfAs(t, "codemode")

	for _, c := range []struct {
		transport string
		budget    int // --token-budget; 0: the default
	}{{"stdio", 0}, {"stdio", 500}, {"http", 0}, {"http", 500}} {
		t.Run(fmt.Sprintf("%s/budget=%d", c.transport, c.budget), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			root := filepath.Join(dir, "root") // the filesystem server's only allowed directory
			require.NoError(t, os.Mkdir(root, 0o755))
			root, err := filepath.EvalSymlinks(root)
			require.NoError(t, err)
			// The client imports the SDK from the node_modules beside it.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "client.mjs"), client, 0o644))
			require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))
			servers := map[string]any{
				"memory": map[string]any{"command": node, "args": []string{filepath.Join(modules, realMCPServers["memory"])},
					"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
				"filesystem": map[string]any{"command": node, "args": []string{filepath.Join(modules, realMCPServers["filesystem"]), root}},
				"everything": map[string]any{"command": node, "args": []string{filepath.Join(modules, realMCPServers["everything"]), "stdio"}},
			}
			cfgJSON, err := json.Marshal(map[string]any{"mcpServers": servers})
			require.NoError(t, err)
			cfg := filepath.Join(dir, "servers.json")
			require.NoError(t, os.WriteFile(cfg, cfgJSON, 0o644))
			args := []string{"mcp", "--config", cfg, "--deadline", "20s"}
			if c.budget > 0 {
				args = append(args, "--token-budget", fmt.Sprint(c.budget))
			}
			run := map[string]any{"transport": c.transport, "root": root, "budget": c.budget}

			var served tail // codemode's stderr, when this test starts it
			served.max = 8192
			if c.transport == "stdio" {
				run["command"], run["args"] = self, args // the client starts it
			} else {
				run["url"] = serveMCPHTTP(t, self, append(args, "--http", "127.0.0.1:0"), &served)
			}
			arg, err := json.Marshal(run)
			require.NoError(t, err)

			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "client.mjs", string(arg))
			cmd.Dir = dir
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.WaitDelay = 5 * time.Second
			ownGroup(t, cmd)
			start := time.Now()
			err = cmd.Run()
			if err != nil {
				t.Fatalf("the TypeScript SDK client (%s, budget %d) failed after %v: %v\n%s\ncodemode's stderr (the end):\n%s",
					c.transport, c.budget, time.Since(start).Round(time.Millisecond), err, out.String(), served.String())
			}
			require.Contains(t, out.String(), "\nPASS\n")
		})
	}
}

// serveMCPHTTP starts `self args` (codemode mcp --http 127.0.0.1:0) and
// returns its URL, read from its stderr (which goes on into served). It
// stops with the test: interrupted, then killed with its servers.
func serveMCPHTTP(t *testing.T, self string, args []string, served *tail) string {
	t.Helper()
	cmd := exec.Command(self, args...)
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(served, pw)
	cmd.WaitDelay = 5 * time.Second // its servers hold its stderr too
	ownGroup(t, cmd)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() {
		done <- cmd.Wait()
		pw.Close()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("codemode mcp --http did not stop within 10 s of SIGINT\n%s", served.String())
		}
	})
	lines := logLines(pr)
	url := addressIn(t, lines, `serving streamable HTTP on (http://\S+)`)
	go func() {
		for range lines { // keep draining
		}
	}()
	return url
}

// ownGroup makes cmd (not yet started) lead a process group of its own,
// which its children join (the codemode a client starts, the node
// servers), and kills that group when the test ends or cmd's context
// does: nothing outlives the test.
func ownGroup(t *testing.T, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if cmd.Cancel != nil { // exec.CommandContext's
		cmd.Cancel = kill
	}
	t.Cleanup(func() {
		if cmd.Process != nil {
			kill()
		}
	})
}

// TestMCPTasks: a program that outlives the client's request timeout,
// through `codemode mcp` over stdio, driven by the official TypeScript SDK
// v2 client (testdata/realmcp/tasks.mjs). With the Tasks extension's
// requester (@modelcontextprotocol/ext-tasks) over a 2026-07-28
// connection, the call returns a task at once, polled to the program's
// result; a task cancelled halfway ends as a cancellation whose status
// says which tool ran. Without the extension, the request itself is kept
// alive past its timeout by progress notifications (and times out
// without them).
func TestMCPTasks(t *testing.T) {
	node, modules := needRealMCP(t)
	client, err := os.ReadFile(filepath.Join("testdata", "realmcp", "tasks.mjs"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tasks.mjs"), client, 0o644))
	require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))
	cfgJSON, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{filepath.Join(modules, realMCPServers["everything"]), "stdio"}}}})
	require.NoError(t, err)
	cfg := filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(cfg, cfgJSON, 0o644))
	arg, err := json.Marshal(map[string]any{
		"command": selfAs(t, "codemode"), "args": []string{"mcp", "--config", cfg, "--deadline", "30s"},
		// 3.5 s: past the client's 2 s request timeout, with three
		// progress notifications (one a second, each resetting it) on the
		// plain request.
		"slow":      "await new Promise((r) => setTimeout(r, 3500)); return 42",
		"loop":      `await everything.echo({message: "hi"}); for (;;) {}`,
		"timeoutMs": 2000,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "tasks.mjs", string(arg))
	cmd.Dir = dir
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	cmd.WaitDelay = 5 * time.Second
	ownGroup(t, cmd)
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript SDK client failed: %v\n%s\n%s", err, out.String(), errs.String())
	}
	var got struct {
		Era, Version    string
		Extensions      map[string]any
		SlowKind        string
		SlowStatus      string
		SlowResult      any
		LoopKind        string
		LoopStatus      string
		Cancelled       map[string]string
		PlainResult     any
		PlainProgress   int
		PlainNoProgress string
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "%s\n%s", out.String(), errs.String())
	assert.Equal(t, "modern", got.Era)
	assert.Equal(t, "2026-07-28", got.Version)
	assert.Equal(t, map[string]any{cmcp.TasksExtension: map[string]any{}}, got.Extensions)
	assert.Equal(t, "task", got.SlowKind)
	assert.Equal(t, "completed", got.SlowStatus)
	assert.Equal(t, map[string]any{"result": 42.0, "logs": []any{}}, got.SlowResult)
	assert.Equal(t, "task", got.LoopKind)
	assert.Equal(t, "cancelled", got.LoopStatus)
	// server-everything annotates echo readOnlyHint: a read in the ledger.
	assert.Equal(t, map[string]string{"status": "cancelled", "statusMessage": "cancelled: only reads ran"}, got.Cancelled)
	assert.Equal(t, map[string]any{"result": 42.0, "logs": []any{}}, got.PlainResult)
	assert.GreaterOrEqual(t, got.PlainProgress, 2)
	assert.Equal(t, "Request timed out", got.PlainNoProgress)
}
