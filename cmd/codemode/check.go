package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/typescript"
)

const checkHelp = `Checks a program against the declarations of its tools with TypeScript's own
compiler (TypeScript 7's native tsc: npm install typescript@7), before anything
runs, and prints each problem that would make it fail when it runs, one JSON
line each, at its line and column in the program:

  {"line": 3, "column": 31, "code": 2353, "message": "Object literal may only specify known properties, ..."}

The tools are run's (--tools, --dispatch-cmd with --providers, --mcp): their
declarations are what a model is told (codemode describe). Only diagnostics
that predict a failure count — a name or a tool that does not exist, a
property a declared result does not have, the wrong number of arguments, an
argument object with an unknown property or without a required one, calling
what is not callable; a program written as plain JavaScript against results
declared unknown passes.

The checker is --tsc, else CODEMODE_TSC, else node_modules/@typescript/
typescript-<os>-<arch>/lib/tsc here or above: without one the command fails.

Examples:
  codemode check --tools fixtures.json task.js
  codemode check --mcp servers.json --tsc ./node_modules/@typescript/typescript-linux-x64/lib/tsc task.ts

Exit status: 0 no problem, 1 problems found, 2 bad usage, 4 no checker or the
checker failed.
`

func cmdCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("check", "[flags] FILE|-", checkHelp, stderr)
	var tf toolFlags
	tf.register(fs)
	tsc := fs.String("tsc", "", "TypeScript 7's native tsc binary")
	network := fs.Bool("network", false, "declare fetch, as for an executor that grants the network")
	if code, ok := parseOne(fs, args, "one program file"); !ok {
		return code
	}
	code, err := readSource(fs.Arg(0), stdin)
	if err != nil {
		return exitFor(stderr, err)
	}
	tb, err := tf.open(ctx, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer tb.close()
	c, err := typescript.NewChecker(typescript.CheckerOptions{TSC: *tsc})
	if errors.Is(err, typescript.ErrNoChecker) {
		fmt.Fprintf(stderr, "codemode check: %v\n", err)
		return exitInternal
	}
	if err != nil {
		return exitFor(stderr, err)
	}
	defer c.Close()
	ds, err := c.Check(ctx, typescript.CheckInput{Program: code, Declarations: codemode.ProviderDeclarations(tb.providers),
		Network: *network})
	if err != nil {
		fmt.Fprintf(stderr, "codemode check: %v\n", err)
		return exitInternal
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for _, d := range ds {
		enc.Encode(struct {
			Line    int    `json:"line"`
			Column  int    `json:"column"`
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{d.Line, d.Column, d.Code, d.Message})
	}
	if len(ds) > 0 {
		return exitScript
	}
	return exitOK
}

// typeCheckFlags are run's and batch's --typecheck and --tsc.
type typeCheckFlags struct {
	mode string
	tsc  string
}

func (tc *typeCheckFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tc.mode, "typecheck", "off", "check each program against its tools' declarations before it runs (TypeScript 7): off, warn (run, and report) or enforce (refuse, kind type_error)")
	fs.StringVar(&tc.tsc, "typecheck-tsc", "", "with --typecheck: TypeScript 7's native tsc (default: CODEMODE_TSC, or under node_modules)")
}

// open is the executor options the flags ask for (none for off) and the
// checker to close after the runs.
func (tc *typeCheckFlags) open(remote bool) ([]codemode.Option, func(), error) {
	var mode codemode.TypeCheck
	switch tc.mode {
	case "", "off":
		return nil, func() {}, nil
	case "warn":
		mode = codemode.TypeCheckWarn
	case "enforce":
		mode = codemode.TypeCheckEnforce
	default:
		return nil, nil, usagef("--typecheck is off, warn or enforce, not %q", tc.mode)
	}
	if remote {
		return nil, nil, usagef("--typecheck checks in process: not with --remote (yet)")
	}
	c, err := typescript.NewChecker(typescript.CheckerOptions{TSC: tc.tsc})
	if err != nil {
		return nil, nil, usagef("--typecheck: %v", err)
	}
	return []codemode.Option{codemode.WithTypeCheck(c, mode)}, func() { c.Close() }, nil
}
