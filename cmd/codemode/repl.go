package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
	"github.com/codemode-go/codemode/internal/jspos"
)

const replHelp = `Reads programs and runs each in one session: what a program declares at its top
level (const, let, function, class) and puts on globalThis, the programs after
it see, as in Node's REPL; a program that fails changes nothing. Each prints
what run prints: {"result": ..., "logs": [...]}, or its error JSON.

A program may span lines: an input that ends inside a construct (an open
brace, bracket, string or template) reads on. The tools are run's: --tools,
--dispatch-cmd with --providers, --mcp (its providers are in scope in every
program). At a terminal, lines are edited and recalled with the arrow keys.

--session FILE continues the session FILE holds (if it exists) and writes the
session there when the input ends or at .save: its journal (programs, tool
answers, seeds, clocks), authenticated with --key-file's key and sealed. On
the next start the journal replays with no tool called again.

Commands: .save (write --session now), .reset (a fresh session), .exit.

Examples:
  codemode repl
  codemode repl --tools fixtures.json --session work.session --key-file key

Exit status: 0 at the end of the input, 2 bad usage, 4 a session file that
cannot be read or written, 5 a session file whose journal no longer replays.
`

func cmdREPL(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("repl", "[flags]", replHelp, stderr)
	lf, tf, gf := newProgramFlags(fs)
	var tl telemetryFlags
	tl.register(fs, telemetryTimeoutOneShot)
	pretty := fs.Bool("pretty", false, "indent the output")
	file := fs.String("session", "", "the file that holds the session: continued from it, written to it")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if fs.NArg() != 0 {
		return usageLine(fs, "give no arguments: programs are read from stdin")
	}
	lf.forTools(tf)
	var key codemode.SessionKey
	if *file != "" {
		if gf.keyFile == "" {
			return exitFor(stderr, usagef("--session needs --key-file: the key that authenticates the session file"))
		}
		k, err := readKey(gf.keyFile)
		if err != nil {
			return exitFor(stderr, err)
		}
		key = codemode.SessionKey{Key: k, Encrypt: true, TTL: sessionFileTTL}
	}
	opts, closeTel, err := executorOptions(ctx, gf, &tl, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer closeTel()
	tb, err := tf.open(ctx, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer tb.close()
	exec, err := codemode.New(append([]codemode.Option{codemode.WithLimits(lf.l)}, opts...)...)
	if err != nil {
		return exitFor(stderr, usagef("%v", err))
	}
	defer exec.Close()

	r := &repl{ctx: ctx, exec: exec, tb: tb, key: key, file: *file, stdout: stdout, stderr: stderr, pretty: *pretty}
	if status := r.open(); status != exitOK {
		return status
	}
	defer r.s.Close()
	status := r.loop(stdin)
	if r.file != "" {
		if err := r.save(); err != nil {
			fmt.Fprintf(stderr, "codemode repl: %v\n", err)
			return exitInternal
		}
	}
	return status
}

// sessionFileTTL is how long a session file is accepted: a REPL's is the
// user's own, kept for later.
const sessionFileTTL = 365 * 24 * time.Hour

// repl is one interactive session.
type repl struct {
	ctx    context.Context
	exec   *codemode.Executor
	tb     *toolbox
	s      *codemode.Session
	key    codemode.SessionKey
	file   string
	stdout io.Writer
	stderr io.Writer
	pretty bool
}

// open starts the session: from --session's file when it exists.
func (r *repl) open() int {
	if r.file != "" {
		sealed, err := os.ReadFile(r.file)
		switch {
		case err == nil:
			s, err := r.exec.RestoreSession(r.ctx, sealed, r.key)
			var ee *codemode.ExecError
			if errors.As(err, &ee) && ee.Kind == codemode.KindDiverged {
				fmt.Fprintf(r.stderr, "codemode repl: --session %s: %v\n", r.file, err)
				return exitDiverged
			}
			if err != nil {
				fmt.Fprintf(r.stderr, "codemode repl: --session %s: %v\n", r.file, err)
				return exitInternal
			}
			r.s = s
			return exitOK
		case !errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(r.stderr, "codemode repl: --session: %v\n", err)
			return exitInternal
		}
	}
	s, err := r.exec.NewSession()
	if err != nil {
		return exitFor(r.stderr, err)
	}
	r.s = s
	return exitOK
}

// save writes the session to --session's file (whole, then renamed).
func (r *repl) save() error {
	sealed, err := r.s.Seal(r.key)
	if err != nil {
		return err
	}
	tmp := r.file + ".tmp"
	if err := os.WriteFile(tmp, sealed, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.file)
}

// loop reads programs until the input ends (or .exit) and runs each.
func (r *repl) loop(stdin io.Reader) int {
	read := promptReader(stdin, r.stdout, r.stderr)
	var pending strings.Builder
	for {
		prompt := "> "
		if pending.Len() > 0 {
			prompt = "... "
		}
		line, err := read(prompt)
		if err != nil {
			if pending.Len() > 0 {
				r.run(pending.String())
			}
			return exitOK
		}
		if pending.Len() == 0 {
			switch strings.TrimSpace(line) {
			case "":
				continue
			case ".exit":
				return exitOK
			case ".reset":
				r.s.Close()
				if status := r.fresh(); status != exitOK {
					return status
				}
				continue
			case ".save":
				if r.file == "" {
					fmt.Fprintln(r.stderr, "codemode repl: .save needs --session")
				} else if err := r.save(); err != nil {
					fmt.Fprintf(r.stderr, "codemode repl: %v\n", err)
				}
				continue
			}
		}
		pending.WriteString(line)
		src := pending.String()
		if incomplete(src) {
			pending.WriteByte('\n')
			continue
		}
		pending.Reset()
		r.run(src)
	}
}

// fresh replaces the session with a new one (.reset).
func (r *repl) fresh() int {
	s, err := r.exec.NewSession()
	if err != nil {
		return exitFor(r.stderr, err)
	}
	r.s = s
	return exitOK
}

// incomplete reports whether src ends inside a construct: the parser's
// first error is at its end.
func incomplete(src string) bool {
	e := jspos.Instrument(src, jspos.Body).SyntaxError()
	return e != nil && e.Offset >= len(strings.TrimRight(src, " \t\r\n"))
}

// run runs one program in the session and prints its outcome as run does.
func (r *repl) run(code string) {
	var out batch.Outcome
	if len(r.tb.providers) == 0 {
		res, err := r.s.Run(r.ctx, code)
		out = outcomeOf(res, err)
	} else {
		ids := make([]string, len(r.tb.providers))
		for i, p := range r.tb.providers {
			ids[i] = p.Name
		}
		r.tb.hold(r.ctx, ids)
		res := r.s.Execute(r.ctx, codemode.Request{Code: code, Providers: r.tb.providers, Dispatch: r.tb.serve})
		var err error
		if res.Err != nil {
			err = res.Err
		} else if res.Error != "" {
			err = &codemode.ExecError{Kind: codemode.KindInvalidArgs, Name: codemode.ExecuteName, Reason: res.Error}
		}
		out = outcomeOf(&codemode.Result{Value: res.Result, Logs: res.Logs, Stats: res.Stats, Paused: res.Paused}, err)
	}
	printOutcome(r.stdout, r.stderr, out, r.pretty)
}

// outcomeOf is a session run's outcome in batch's form, which run prints.
func outcomeOf(res *codemode.Result, err error) batch.Outcome {
	o := batch.Outcome{Kind: batch.KindOK}
	if res != nil {
		o.Logs = res.Logs
		if res.Value != nil {
			o.Result = json.RawMessage(res.Value)
		}
	}
	if err != nil {
		var ee *codemode.ExecError
		if !errors.As(err, &ee) {
			ee = &codemode.ExecError{Kind: codemode.KindInternal, Message: err.Error()}
		}
		o.Kind, o.Err, o.Result = string(ee.Kind), ee, nil
	}
	if err == nil && res != nil && res.Paused != nil {
		o.Kind, o.Paused, o.Result = batch.KindPaused, res.Paused, nil
	}
	if o.Logs == nil {
		o.Logs = []string{}
	}
	return o
}

// promptReader reads lines from stdin: edited with history at a terminal
// (the prompt goes to out), plain otherwise (a line past 16 MiB is
// reported on errs and skipped).
func promptReader(stdin io.Reader, out, errs io.Writer) func(prompt string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) && isTerminal(out) {
		t := term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{f, out}, "> ")
		// Raw only while a line is edited: the outcomes print as usual.
		return func(prompt string) (string, error) {
			old, err := term.MakeRaw(int(f.Fd()))
			if err != nil {
				return "", err
			}
			defer term.Restore(int(f.Fd()), old)
			t.SetPrompt(prompt)
			return t.ReadLine()
		}
	}
	lr := newLineReader(stdin, 16<<20)
	return func(string) (string, error) {
		for {
			line, err := lr.next()
			if errors.Is(err, errLineTooLong) {
				fmt.Fprintf(errs, "codemode repl: a line longer than 16 MiB was skipped\n")
				continue
			}
			return string(line), err
		}
	}
}
