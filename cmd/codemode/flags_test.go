package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestParseSize: a size is a finite number of bytes from 0 to 2 TiB, with
// an optional unit; NaN, infinities, negative sizes and larger ones are
// refused, each saying why (NaN was read as -2^63 bytes).
func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"1MiB", 1 << 20},
		{" 2 MiB ", 2 << 20},
		{"512KiB", 512 << 10},
		{"64KB", 64000},
		{"1.5GiB", 3 << 29},
		{"2048GiB", 1 << 41},
		{"1e3", 1000},
	} {
		n, err := parseSize(c.in)
		if assert.NoError(t, err, "parseSize(%q)", c.in) {
			assert.Equal(t, c.want, n, "parseSize(%q)", c.in)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"NaN", "want bytes"},
		{"nan", "want bytes"},
		{"NaNMiB", "want bytes"},
		{"", "want bytes"},
		{"MiB", "want bytes"},
		{"12 parsecs", "want bytes"},
		{"4TiB", "want bytes"},
		{"-1", "not negative"},
		{"-1MiB", "not negative"},
		{"-Inf", "not negative"},
		{"Inf", "more than 2048GiB"},
		{"+Inf", "more than 2048GiB"},
		{"infinityGiB", "more than 2048GiB"},
		{"1e400", "more than 2048GiB"},
		{"2049GiB", "more than 2048GiB"},
		{"9223372036854775807", "more than 2048GiB"},
	} {
		_, err := parseSize(c.in)
		if assert.Error(t, err, "parseSize(%q)", c.in) {
			assert.Contains(t, err.Error(), c.want, "parseSize(%q)", c.in)
			assert.Contains(t, err.Error(), strconv.Quote(c.in))
		}
	}
}

// TestSizeFlagsRefuseNonsense: every size flag of every command refuses
// NaN, an infinity, a negative size and one past 2 TiB with a usage error
// (status 2) naming the flag, before anything runs.
func TestSizeFlagsRefuseNonsense(t *testing.T) {
	t.Parallel()
	flags := map[string][]string{
		"run":   {"memory", "stack", "payload", "logs"},
		"batch": {"memory", "stack", "payload", "logs"},
		"serve": {"memory", "stack", "payload", "logs", "idle-memory", "memory-budget"},
	}
	for cmd, names := range flags {
		for _, name := range names {
			for _, v := range []string{"NaN", "Inf", "-1MiB", "3000GiB"} {
				var stderr bytes.Buffer
				args := []string{cmd, "--" + name, v}
				if cmd == "serve" {
					args = append(args, "--listen", "127.0.0.1:0")
				} else {
					args = append(args, "-")
				}
				assert.Equal(t, exitUsage, Main(context.Background(), args, strings.NewReader("return 1"), io.Discard, &stderr), "%v", args)
				assert.Contains(t, stderr.String(), `invalid value "`+v+`" for flag -`+name+`: invalid size`, "%v", args)
			}
		}
	}
}

// TestSizeAtMost: a size in an error that says "at most" is one a flag
// takes, exact where a binary unit divides it, else rounded down to a
// tenth of the largest unit it reaches.
func TestSizeAtMost(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{
		768 << 20:      "768MiB",
		24731408 << 10: "23.5GiB",
		1536:           "1.5KiB",
		1000:           "1000",
		(1 << 30) - 1:  "1023.9MiB",
	} {
		assert.Equal(t, want, sizeAtMost(n), "sizeAtMost(%d)", n)
		got, err := parseSize(want)
		if assert.NoError(t, err) {
			assert.LessOrEqual(t, got, n, "sizeAtMost(%d) is at most it", n)
		}
	}
}

// TestParseInterspersed: flags go anywhere among the arguments; past a
// "--" every argument is one, unless that "--" is a flag's value.
func TestParseInterspersed(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		record string
		pretty bool
		rest   []string
	}{
		{[]string{"a.js", "--pretty"}, "", true, []string{"a.js"}},
		{[]string{"--", "a.js", "--pretty"}, "", false, []string{"a.js", "--pretty"}},
		{[]string{"a.js", "--", "--pretty"}, "", false, []string{"a.js", "--pretty"}},
		{[]string{"--record", "--", "a.js", "--pretty"}, "--", true, []string{"a.js"}},
		{[]string{"--pretty", "--", "--record"}, "", true, []string{"--record"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		record := fs.String("record", "", "")
		pretty := fs.Bool("pretty", false, "")
		require.NoError(t, parseInterspersed(fs, tt.args), "%q", tt.args)
		assert.Equal(t, tt.record, *record, "%q", tt.args)
		assert.Equal(t, tt.pretty, *pretty, "%q", tt.args)
		assert.Equal(t, tt.rest, fs.Args(), "%q", tt.args)
	}
}
