// Command codemode runs Code Mode programs from the command line: one
// script (run), a batch of them as JSON lines (batch, with progress,
// resume, record and replay), programs in one session that keeps its state
// from each to the next (repl, which a session file continues later), and
// the description a model is given for a tool list (describe); and it
// serves code mode over MCP on top of a set of MCP servers (mcp).
//
//	go install github.com/codemode-go/codemode/cmd/codemode@latest
//
//	codemode run script.js
//	codemode run --tools fixtures.json --deadline 2s - < script.ts
//	codemode batch -j 8 -o out.jsonl jobs.jsonl
//	codemode describe tools.json
//
// Scripts take every shape Execute takes (an async arrow function, a
// function, statements whose last expression is the result, a markdown
// fence, TypeScript). Their tools are providers served by canned answers
// (--tools), by a subprocess speaking JSON lines (--dispatch-cmd), or from
// a recorded tape (--replay).
//
// Exit status: 0 success; 1 the script failed (it threw, did not compile,
// a tool failed it, or it left a promise that can never settle); 2 bad
// usage or unreadable input; 3 a limit stopped it (deadline or memory); 4
// an internal error; 5 a replay diverged from its tape; 6 a run paused at
// a tool call that needs approval (codemode resume goes on); 130 a batch
// interrupted by SIGINT (the runs in flight finished and were written).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"

	_ "github.com/codemode-go/codemode/typescript" // TypeScript sources (and the checker: check.go)
)

// Exit statuses.
const (
	exitOK          = 0
	exitScript      = 1
	exitUsage       = 2
	exitLimit       = 3
	exitInternal    = 4
	exitDiverged    = 5
	exitInterrupted = 130
	// exitPaused (6, govern.go): the run paused at a call needing approval.
)

// version is the binary's version, stamped at link time (-ldflags
// "-X main.version=v1.2.3": make image and the Dockerfile do); empty, it is
// read from the build (versionText).
var version string

// versionText is the stamped version, else the module's (go install
// ...@v1.2.3), else "devel" and the commit the binary was built from.
func versionText() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return "devel+" + s.Value[:min(12, len(s.Value))]
		}
	}
	return "devel"
}

func main() {
	os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `codemode runs Code Mode programs in fresh QuickJS sandboxes.

Usage:
  codemode run [flags] FILE|-        run one script, print {"result","logs"} or {"error","logs"}
  codemode batch [flags] IN.jsonl    run one job per line, write one result line per job
  codemode resume [flags] CONT       resume a paused run with --approve, --reject REASON or --edit ARGS
  codemode repl [flags]              run programs in one session, each seeing what the last declared
  codemode describe TOOLS.json       print the run_js description and the TypeScript declarations
  codemode check [flags] FILE|-      check a program against its tools' declarations (TypeScript 7)
  codemode mcp --config servers.json serve code mode over MCP, on top of the configured MCP servers
  codemode serve [flags]             run the daemon: remote clients' programs, their tool calls sent back
  codemode version                   print the binary's version

Run 'codemode COMMAND -h' for a command's flags.

Exit status: 0 success, 1 script error, 2 bad usage, 3 limit (deadline, memory),
4 internal error, 5 replay diverged, 6 paused for approval, 130 interrupted batch.
`

// Main runs the command line with args (without the program name) and
// returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdin, stdout, stderr)
	case "batch":
		ctx, stop, hard := interrupts(ctx)
		defer hard()
		return cmdBatch(ctx, stop, args[1:], stdin, stdout, stderr)
	case "resume":
		return cmdResume(ctx, args[1:], stdin, stdout, stderr)
	case "describe":
		return cmdDescribe(ctx, args[1:], stdin, stdout, stderr)
	case "serve":
		ctx, stop, hard := interrupts(ctx)
		defer hard()
		go func() {
			<-stop // SIGTERM or SIGINT drains
			hard()
		}()
		return cmdServe(ctx, args[1:], stderr)
	case "check":
		return cmdCheck(ctx, args[1:], stdin, stdout, stderr)
	case "repl":
		return cmdREPL(ctx, args[1:], stdin, stdout, stderr)
	case "mcp":
		ctx, stop, hard := interrupts(ctx)
		defer hard()
		go func() {
			<-stop // a server stops at the first signal
			hard()
		}()
		return cmdMCP(ctx, args[1:], stdin, stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintf(stdout, "codemode %s %s %s/%s\n", versionText(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return exitOK
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "codemode: unknown command %q (run 'codemode -h' for the commands)\n", args[0])
		return exitUsage
	}
}

// interrupts turns the first SIGINT (or SIGTERM) into a graceful stop (the
// returned channel closes) and the second into cancelling ctx.
func interrupts(ctx context.Context) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-sig:
				n++
				if n == 1 {
					close(stop)
				} else {
					cancel()
				}
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return ctx, stop, func() {
		once.Do(func() {
			signal.Stop(sig)
			close(done)
			cancel()
		})
	}
}

// usageError is a command line the command cannot act on.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitFor reports a setup error and returns its status.
func exitFor(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "codemode: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitInternal
}
