package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/codemode-go/codemode"
)

// size is a byte count flag: 1048576, 1MiB, 512KiB, 64KB (KB = 1000).
type size struct{ n *int }

// String is "" for the zero value (the flag unset: codemode's default,
// which the flag's help states), so help shows no "(default 0)".
func (s size) String() string {
	if s.n == nil || *s.n == 0 {
		return ""
	}
	return strconv.Itoa(*s.n)
}

// sizeText writes n bytes with the largest binary unit that divides it.
func sizeText(n int) string {
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.Itoa(n/u.mult) + u.suffix
		}
	}
	return strconv.Itoa(n)
}

// sizeAtMost writes n bytes in the largest binary unit it reaches, to a
// tenth, rounded down (a size one may give for "at most n"): 23.5GiB, not
// 24731408KiB.
func sizeAtMost(n int) string {
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult {
			return strconv.FormatFloat(float64(n*10/u.mult)/10, 'f', -1, 64) + u.suffix
		}
	}
	return strconv.Itoa(n)
}

func (s size) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s.n = n
	return nil
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// maxSize is the largest size a flag takes, 2 TiB: more than any limit
// or budget means, and far from overflowing an int.
const maxSize = 1 << 41

// parseSize reads a byte count with an optional unit. It refuses what is
// not a finite number of bytes from 0 to maxSize: NaN, infinities,
// negative sizes and larger ones (ParseFloat reads "NaN" and "Inf", which
// no comparison with a bound refuses: NaN became -2^63 bytes).
func parseSize(v string) (int, error) {
	s := strings.TrimSpace(v)
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(f):
		return 0, fmt.Errorf("invalid size %q (want bytes, or a number with KiB, MiB, GiB, KB, MB, GB)", v)
	case f < 0:
		return 0, fmt.Errorf("invalid size %q: a size is not negative", v)
	case err != nil || f*mult > maxSize: // ErrRange or +Inf
		return 0, fmt.Errorf("invalid size %q: more than %s", v, sizeText(maxSize))
	}
	return int(f * mult), nil
}

// limitFlags are the flags of every limit.
type limitFlags struct{ l codemode.Limits }

// The deadlines of runs whose tools are real (a process, a server across
// the network), when --deadline gives none: codemode's 500 ms is for
// programs whose tools answer in-process.
const (
	dispatchCmdDeadline = 30 * time.Second // --dispatch-cmd
	mcpDeadline         = 60 * time.Second // --mcp, codemode mcp
)

// toolDeadlines is the --deadline default of run and batch.
var toolDeadlines = fmt.Sprintf("default %v; %v with --dispatch-cmd, %v with --mcp", codemode.DefaultDeadline, dispatchCmdDeadline, mcpDeadline)

// register registers the flags; deadlines says the deadline's default.
func (lf *limitFlags) register(fs *flag.FlagSet, deadlines string) {
	fs.Var(size{&lf.l.Memory}, "memory", "the heap a run may hold (default "+sizeText(codemode.DefaultMemory)+")")
	fs.Var(size{&lf.l.Stack}, "stack", "the native stack JavaScript may use (default "+sizeText(codemode.DefaultStack)+")")
	fs.Var(size{&lf.l.Payload}, "payload", "the largest result and tool call (default "+sizeText(codemode.DefaultPayload)+")")
	fs.Var(size{&lf.l.Logs}, "logs", "the console text kept per run (default "+sizeText(codemode.DefaultLogs)+")")
	durationVar(fs, &lf.l.Deadline, "deadline", 0, "the wall-clock budget of a run (e.g. 2s; "+deadlines+")")
}

// forTools sets the deadline, when --deadline gave none, for the tools
// the runs have.
func (lf *limitFlags) forTools(tf *toolFlags) {
	switch {
	case lf.l.Deadline != 0:
	case tf.mcp != "":
		lf.l.Deadline = mcpDeadline
	case tf.dispatchCmd != "":
		lf.l.Deadline = dispatchCmdDeadline
	}
}

// jobLimits is a batch line's "limits": sizes as numbers (bytes) or
// strings with units, the deadline as milliseconds or a Go duration.
type jobLimits struct {
	Memory   json.RawMessage `json:"memory"`
	Stack    json.RawMessage `json:"stack"`
	Payload  json.RawMessage `json:"payload"`
	Logs     json.RawMessage `json:"logs"`
	Deadline json.RawMessage `json:"deadline"`
}

// apply returns base with the line's limits set over it.
func (j *jobLimits) apply(base codemode.Limits) (codemode.Limits, error) {
	l := base
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *int
	}{{"memory", j.Memory, &l.Memory}, {"stack", j.Stack, &l.Stack}, {"payload", j.Payload, &l.Payload}, {"logs", j.Logs, &l.Logs}} {
		if len(f.raw) == 0 {
			continue
		}
		var n float64
		if json.Unmarshal(f.raw, &n) == nil {
			if n < 0 || n > maxSize {
				return l, fmt.Errorf("limits.%s: %v is out of range", f.name, n)
			}
			*f.dst = int(n)
			continue
		}
		var s string
		if err := json.Unmarshal(f.raw, &s); err != nil {
			return l, fmt.Errorf("limits.%s: want a number of bytes or a size like \"32MiB\"", f.name)
		}
		v, err := parseSize(s)
		if err != nil {
			return l, fmt.Errorf("limits.%s: %v", f.name, err)
		}
		*f.dst = v
	}
	if len(j.Deadline) > 0 {
		var ms float64
		if json.Unmarshal(j.Deadline, &ms) == nil {
			if ms < 0 || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
				return l, fmt.Errorf("limits.deadline: %v is out of range", ms)
			}
			l.Deadline = time.Duration(ms * float64(time.Millisecond))
		} else {
			var s string
			if err := json.Unmarshal(j.Deadline, &s); err != nil {
				return l, fmt.Errorf("limits.deadline: want milliseconds or a duration like \"2s\"")
			}
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return l, fmt.Errorf("limits.deadline: invalid duration %q", s)
			}
			l.Deadline = d
		}
	}
	return l, nil
}

// toolFlags are the flags that give scripts their tools.
type toolFlags struct {
	fixtures    string
	dispatchCmd string
	providers   string
	record      string
	replay      string
	mcp         string
	// startTimeout bounds a --dispatch-cmd's start: from its start to its
	// answer to the ping.
	startTimeout time.Duration
	// listOnly opens the tools to list them (describe): a --dispatch-cmd
	// is not started.
	listOnly bool
}

// none reports whether the flags give no tools at all (a --providers alone
// gives some, wrongly: open says so).
func (tf *toolFlags) none() bool {
	return tf.fixtures == "" && tf.dispatchCmd == "" && tf.providers == "" && tf.mcp == "" && tf.replay == ""
}

func (tf *toolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.fixtures, "tools", "", "a JSON file of canned answers per provider and tool")
	fs.StringVar(&tf.dispatchCmd, "dispatch-cmd", "", "a command (run by /bin/sh) serving tool calls as JSON lines on stdin/stdout")
	fs.StringVar(&tf.providers, "providers", "", "comma-separated provider names --dispatch-cmd serves")
	durationVar(fs, &tf.startTimeout, "dispatch-start-timeout", defaultStartTimeout, "how long --dispatch-cmd may take to start (to answer its ping); no job runs before, and none pays for it")
	fs.StringVar(&tf.record, "record", "", "write every tool call and its answer to this tape (JSON lines)")
	fs.StringVar(&tf.replay, "replay", "", "serve tool calls from this tape instead of the tools")
	fs.StringVar(&tf.mcp, "mcp", "", "an mcpServers JSON file: every server's tools as a provider of its name")
}

// parseOne parses a subcommand's flags and wants one argument (what it
// names); when it cannot go on it returns the exit status (0 for -h).
func parseOne(fs *flag.FlagSet, args []string, what string) (int, bool) {
	if status, ok := parseFlags(fs, args); !ok {
		return status, false
	}
	if fs.NArg() != 1 {
		return usageLine(fs, "give %s, or - for stdin", what), false
	}
	return 0, true
}

// parseFlags parses a subcommand's flags, before and after its arguments
// (`codemode run a.js --pretty`, as most command lines take them; after a
// "--" everything is an argument): -h prints its whole help (status 0), a
// bad flag one line saying what and where the help is (status 2).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	full := fs.Usage
	fs.Usage = func() {} // the flag package prints the error line itself
	err := parseInterspersed(fs, args)
	fs.Usage = full
	switch {
	case errors.Is(err, flag.ErrHelp):
		full()
		return exitOK, false
	case err != nil:
		fmt.Fprintf(fs.Output(), "Run 'codemode %s -h' for its flags.\n", fs.Name())
		return exitUsage, false
	}
	return 0, true
}

// parseInterspersed parses fs from args with flags anywhere among the
// arguments: the flag package stops at the first argument, so the rest is
// parsed again past each one. fs.Args() is then the arguments, in order.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// Past a "--" every argument is one, unless that "--" was a
		// flag's value (--record --).
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" && (used < 2 || !takesValue(fs, args[used-2])) {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// takesValue says whether arg is a flag of fs that takes the next
// argument as its value: not a boolean one, not written -name=value.
func takesValue(fs *flag.FlagSet, arg string) bool {
	name, ok := strings.CutPrefix(arg, "-")
	if !ok || name == "" || name == "-" {
		return false
	}
	name = strings.TrimPrefix(name, "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}

// durationFlag is a duration flag whose refusal says what a duration is
// ("5" is not one: the flag package's own says only "parse error").
type durationFlag time.Duration

func (d *durationFlag) String() string { return (*time.Duration)(d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if f, numErr := strconv.ParseFloat(s, 64); numErr == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return fmt.Errorf("a duration needs a unit: %ss or %sms, say", s, s)
		}
		return fmt.Errorf("not a duration (a number and a unit: 500ms, 2s, 1m30s)")
	}
	*d = durationFlag(v)
	return nil
}

// durationVar defines a duration flag (flag.DurationVar's, with durationFlag's refusals).
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationFlag)(p), name, "a `duration`: "+usage) // the back quotes name its value in the help
}

// usageLine reports a usage error of a subcommand in one line, and where
// its help is: exitUsage.
func usageLine(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "codemode %s: %s (run 'codemode %s -h' for its flags)\n", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
	return exitUsage
}

// newFlagSet makes a subcommand's flag set writing its help to w.
func newFlagSet(name, synopsis, help string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: codemode %s %s\n\n%s\nFlags:\n", name, synopsis, help)
		fs.PrintDefaults()
	}
	return fs
}

// flagGiven reports whether the command line set the flag called name
// (a flag whose zero value means something of its own: --idle-memory 0).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
