package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
)

const runHelp = `Runs one script in a fresh sandbox and prints {"result": ..., "logs": [...]}
or, when it fails, {"error": {...}, "logs": [...], "effects": {...}}: the
reference executor's kind-tagged error under "error", as a batch line and
codemode mcp show a failure ({"kind": "js", "name": "run_js", "message": ...}).
The naming rule, everywhere: a script with no tools runs as run_js (its
errors are named "run_js", positions are in script.js); one with providers
(--tools, --dispatch-cmd, --mcp, --replay) runs as an Execute program
("execute", program.js).

The script may be any shape a model writes: an async arrow function, a
function, statements whose last expression is the result (top-level await
works), a markdown fence, TypeScript. Its tools are providers: canned answers
(--tools), a subprocess (--dispatch-cmd with --providers), or a tape (--replay).

--dispatch-cmd runs a command (by /bin/sh, in a process group of its own)
that reads one call per line on stdin and writes one answer per line on
stdout, in any order, matched by id:

  {"id": 7, "provider": "store", "tool": "get", "args": [1]}
  {"id": 7, "result": {"name": "Ada"}}    or    {"id": 7, "error": "no such user"}

Its first line is a ping, {"id": 0, "provider": "codemode", "tool": "ping",
"args": []}: the script starts once it has been answered (any answer, an
error too), within --dispatch-start-timeout (exit 4 past it).

Examples:
  codemode run script.js
  echo 'return 6 * 7' | codemode run -
  codemode run --tools fixtures.json --deadline 2s --memory 64MiB task.ts
  codemode run --dispatch-cmd 'python3 tools.py' --providers store task.js
  codemode run --tools fixtures.json --record tape.jsonl task.js
  codemode run --replay tape.jsonl task.js

With --policy and --key-file (see codemode resume -h) a tool call that
requires approval pauses the run: it prints {"paused": {"tool", "args",
"continuation", ...}, "logs": [...]} and exits 6; codemode resume goes on.

Exit status: 0 success, 1 script error, 2 bad usage, 3 deadline or memory limit,
4 internal error (or a --dispatch-cmd that does not start), 5 the replay
diverged from the tape, 6 paused at a call that needs approval.
`

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "[flags] FILE|-", runHelp, stderr)
	lf, tf, gf := newProgramFlags(fs)
	var wf whereFlags
	wf.register(fs)
	var tl telemetryFlags
	tl.register(fs, telemetryTimeoutOneShot)
	pretty := fs.Bool("pretty", false, "indent the output")
	if code, ok := parseOne(fs, args, "one script file"); !ok {
		return code
	}
	lf.forTools(tf)
	gov, closeTel, err := executorOptions(ctx, gf, &tl, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer closeTel()
	fl, checkOpts, closeWhere, err := wf.open(ctx, gf)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer closeWhere()
	gov = append(gov, checkOpts...)
	code, err := readSource(fs.Arg(0), stdin)
	if err != nil {
		return exitFor(stderr, err)
	}
	tb, err := tf.open(ctx, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	id := `"run"`
	j, err := tb.forJob(id, nil)
	if err != nil {
		tb.close()
		return exitFor(stderr, usagef("--replay: %v (a run is recorded as job \"run\")", err))
	}
	var out batch.Outcome
	for _, o := range batch.Run(ctx, func(yield func(batch.Job) bool) {
		yield(batch.Job{ID: id, Code: code, Determinism: j.det})
	}, batch.Options{Limits: lf.l, Providers: tb.providers, Concurrency: 1, Executor: gov, Remote: fl.engines(),
		DispatchFor: func(batch.Job) codemode.DispatchFunc { return j.dispatch }}) {
		out = o
	}
	if err := tb.close(); err != nil {
		fmt.Fprintf(stderr, "codemode: %v\n", err)
	}
	if j.replay != nil {
		if msg := j.replay.divergence(); msg != "" {
			out = diverged(out, msg)
		}
	}
	if name, ok := undefinedName(out); ok && tf.none() {
		fmt.Fprintf(stderr, "codemode run: %s is not defined: if it is a provider of tools%s\n", name, toolsHint)
	}
	return printOutcome(stdout, stderr, out, *pretty)
}

// undefinedName is the name a run's uncaught ReferenceError says is not
// defined.
func undefinedName(o batch.Outcome) (string, bool) {
	if o.Err == nil || o.Err.Kind != codemode.KindJS {
		return "", false
	}
	name, ok := strings.CutPrefix(o.Err.Message, "ReferenceError: ")
	if !ok {
		return "", false
	}
	name, _, ok = strings.Cut(name, " is not defined")
	return name, ok && codemode.JSIdentifier(name) == name
}

// printOutcome prints run's output for an outcome and returns its status.
func printOutcome(stdout, stderr io.Writer, out batch.Outcome, pretty bool) int {
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(resultObject(out)); err != nil {
		return exitFor(stderr, err)
	}
	return exitStatus(out.Kind)
}

// kindDiverged is the outcome of a replayed run that left its tape.
const kindDiverged = "replay_diverged"

// diverged turns an outcome into a divergence.
func diverged(o batch.Outcome, msg string) batch.Outcome {
	o.Kind, o.Problem, o.Err, o.Result = kindDiverged, msg, nil, nil
	return o
}

// exitStatus is run's status for an outcome kind.
func exitStatus(kind string) int {
	switch kind {
	case batch.KindOK:
		return exitOK
	case string(codemode.KindJS), string(codemode.KindCapability), string(codemode.KindPendingPromise), string(codemode.KindNotFound),
		string(codemode.KindTypeError):
		return exitScript
	case string(codemode.KindTimeout), string(codemode.KindMemoryExceeded), string(codemode.KindMemoryBudget):
		return exitLimit
	case batch.KindBadInput:
		return exitUsage
	case kindDiverged:
		return exitDiverged
	case batch.KindPaused:
		return exitPaused
	default:
		return exitInternal
	}
}

// resultObject is run's output for an outcome: {"result","logs"} or the
// error's JSON with "logs".
func resultObject(o batch.Outcome) any {
	logs := o.Logs
	if logs == nil {
		logs = []string{}
	}
	switch {
	case o.Kind == batch.KindOK:
		return struct {
			Result      json.RawMessage           `json:"result"`
			Logs        []string                  `json:"logs"`
			Diagnostics []codemode.TypeDiagnostic `json:"diagnostics,omitempty"`
		}{o.Result, logs, o.Diagnostics}
	case o.Paused != nil:
		return struct {
			Paused json.RawMessage `json:"paused"`
			Logs   []string        `json:"logs"`
		}{pausedObject(o.Paused), logs}
	}
	// A failure as a batch line and codemode mcp show it: the error under
	// "error", its logs, diagnostics and effects beside it.
	out := appendTail(append([]byte(`{"error":`), errorJSON(o)...), o, false)
	return json.RawMessage(append(out, '}'))
}

// errorJSON is an outcome's error as the reference's kind-tagged JSON.
func errorJSON(o batch.Outcome) json.RawMessage {
	if o.Err != nil {
		if b, err := o.Err.MarshalJSON(); err == nil {
			return b
		}
	}
	msg := o.Problem
	if errors.Is(o.Cause, batch.ErrUnknownProvider) {
		msg += toolsHint
	}
	b, _ := json.Marshal(struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}{o.Kind, msg})
	return b
}

// toolsHint says how the command line gives scripts their tools.
const toolsHint = ": give its tools with --tools FILE (canned answers), --dispatch-cmd CMD --providers NAMES (a process) or --mcp FILE (MCP servers)"

// readSource reads a script file, or stdin for "-".
func readSource(path string, stdin io.Reader) (string, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", usagef("%v", err)
	}
	return string(b), nil
}
