package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

const mcpHelp = `Serves code mode over MCP: one tool (run_js by default) whose program may call
every tool of the MCP servers in --config, as methods of each server's namespace
(await github.get_issue({...})), so a client's model writes one program instead of
N tool calls. The config is the mcpServers file desktop clients use:

  {"mcpServers": {
    "github": {"command": "github-mcp-server", "args": ["stdio"], "env": {"GITHUB_TOKEN": "..."}},
    "docs":   {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}}}}

Servers that do not start are reported on stderr and left out; one that dies
fails its calls in flight and is restarted with backoff. The sandbox has no
network: only the configured tools are reachable, and their credentials stay in
their processes. Serves on stdin/stdout unless --http.

--policy governs the servers' tools, named "server.tool" (timeouts, in-flight
caps, budgets, approval; the file's form: codemode resume -h). With --key-file,
a call that requires approval pauses the program and the client's user is
asked through elicitation (a multi round-trip request whose state is the
signed continuation); a client without elicitation gets {"paused": {...}}
and a second tool, resume_js, goes on with {continuation, approve, reason?,
args?}. Continuations are always sealed here, and each resumes once. Whoever
calls resume_js decides: use it with clients whose user confirms tool calls.

Each client's programs share state (--sessions, on by default): what a program
declares at its top level, and puts on globalThis, the next program of the same
MCP session sees; a program that fails changes nothing; reset_js starts afresh.
The tool's description tells the model. --sessions=false runs every program in
a fresh sandbox.

Examples:
  codemode mcp --config servers.json
  codemode mcp --config servers.json --http 127.0.0.1:8080 --deadline 30s
  codemode mcp --config servers.json --policy policy.json --key-file key
`

func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("mcp", "--config servers.json [flags]", mcpHelp, stderr)
	var lf limitFlags
	var gf govFlags
	lf.register(fs, "default "+mcpDeadline.String())
	gf.register(fs)
	config := fs.String("config", "", "the mcpServers JSON file")
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio")
	toolName := fs.String("tool-name", "run_js", "the code tool's name")
	budget := fs.Int("token-budget", cmcp.DefaultTokenBudget, "the description's budget in tokens; past it, progressive discovery")
	outBudget := codemode.DefaultOutputBudget
	fs.Var(size{&outBudget}, "output-budget", "what a program gives the model back, result (or error) and logs; past it they are shaped to fit, saying what was cut (0: no shaping)")
	sessions := fs.Bool("sessions", true, "keep each client's state between its programs (one session per MCP session, and a reset_js tool)")
	var tc typeCheckFlags
	tc.register(fs)
	var tl telemetryFlags
	tl.register(fs, telemetryTimeoutDaemon)
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if *config == "" || fs.NArg() != 0 {
		return usageLine(fs, "give --config and no arguments")
	}
	if lf.l.Deadline == 0 {
		lf.l.Deadline = mcpDeadline // programs that wait on upstream tools
	}
	gov, err := gf.governance()
	if err != nil {
		return exitFor(stderr, err)
	}
	ups, router, err := openMCP(ctx, *config, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer closeAll(ups)
	tel, err := tl.open(ctx)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer tel.close(stderr)
	checkOpts, closeCheck, err := tc.open(false)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer closeCheck()
	opts := append(append([]codemode.Option{codemode.WithLimits(lf.l)}, tel.opts...), checkOpts...)
	gov = withEffects(gov, router.Effects())
	if gov != nil {
		// Continuations reach the client, and its model: sealed, and
		// each resumed once.
		gov.Encrypt, gov.Redeem = true, codemode.SingleUse()
		opts = append(opts, codemode.WithGovernance(*gov))
	}
	exec, err := codemode.New(opts...)
	if err != nil {
		return exitFor(stderr, usagef("%v", err))
	}
	defer exec.Close()
	srv, err := cmcp.NewServer(exec, router, cmcp.ServerOptions{ToolName: *toolName, TokenBudget: *budget,
		Resume: gov != nil && len(gov.Key) > 0, Sessions: *sessions, TypeChecked: len(checkOpts) > 0,
		OutputBudget: cmp.Or(outBudget, -1), Tasks: *addr == ""})
	if err != nil {
		return exitFor(stderr, err)
	}
	if *addr == "" {
		err = srv.Run(ctx, cmcp.TasksTransport(&mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}))
		if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "codemode mcp: %v\n", err)
			return exitInternal
		}
		return exitOK
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return exitFor(stderr, usagef("--http: %v", err))
	}
	fmt.Fprintf(stderr, "codemode mcp: serving streamable HTTP on http://%s\n", ln.Addr())
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "codemode mcp: %v\n", err)
		return exitInternal
	}
	return exitOK
}

// openMCP starts a config's upstreams (reporting those that fail) and
// routes them.
func openMCP(ctx context.Context, path string, stderr io.Writer) ([]*cmcp.Upstream, *cmcp.Router, error) {
	cfg, err := cmcp.ReadConfig(path)
	if err != nil {
		return nil, nil, usagef("--config: %v", err)
	}
	ups, errs := cfg.Start(ctx)
	for _, e := range errs {
		fmt.Fprintf(stderr, "codemode: %v (left out)\n", e)
	}
	routes := make([]cmcp.Route, len(ups))
	for i, u := range ups {
		routes[i] = u
	}
	router, err := cmcp.NewRouter(routes...)
	if err != nil {
		closeAll(ups)
		return nil, nil, err
	}
	return ups, router, nil
}

func closeAll(ups []*cmcp.Upstream) {
	for _, u := range ups {
		u.Close()
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
