package typescript_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/typescript"
)

// newChecker starts the checker from CODEMODE_TSC (which .ci/run sets): a
// test fails without it where CI sets CODEMODE_TSC_REQUIRED.
func newChecker(t *testing.T) *typescript.Checker {
	t.Helper()
	c, err := typescript.NewChecker(typescript.CheckerOptions{})
	if err != nil && os.Getenv("CODEMODE_TSC_REQUIRED") == "" {
		t.Skipf("no TypeScript 7 checker: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

const decls = `declare const db: {
  /** Runs a query. */
  query(args: { sql: string }): Promise<{ rows: { id: number; name: string }[] }>;
};
declare function get_weather(args: { location: string; days?: number }): Promise<{ temp: number }>;
declare function search(args: { q: string }): Promise<unknown>;
`

func TestCheckerMistakes(t *testing.T) {
	c := newChecker(t)
	tests := []struct {
		name, program string
		want          string // line:col TScode
	}{
		{"a tool that does not exist", "const r = await get_wether({ location: 'x' });", "1:17 TS2552"},
		{"a name that does not exist", "return nope + 1;", "1:8 TS2304"},
		{"a provider's tool that does not exist", "const r = await db.qeury({ sql: 'x' });", "1:20 TS2551"},
		{"an argument's unknown property", "const w = await get_weather({ city: 'Paris' });", "1:31 TS2353"},
		{"a required property missing", "const w = await get_weather({ days: 2 });", "1:29 TS2741"},
		{"the wrong argument count", "\nconst r = await db.query();", "2:20 TS2554"},
		{"a result read as the wrong shape", "const r = await db.query({ sql: 'x' });\nreturn r.rows.map((x) => x.nmae);", "2:28 TS2339"},
		{"a result that is not callable", "const r = await db.query({ sql: 'x' });\nr();", "2:1 TS2349"},
		{"the DOM", "return document.title;", "1:8 TS2584"},
		{"Node's require", "const fs = require('fs');", "1:20 TS2591"},
		{"Node's process", "return process.env.HOME;", "1:8 TS2591"},
	}
	for _, tt := range tests {
		ds, err := c.Check(context.Background(), typescript.CheckInput{Program: tt.program, Declarations: decls})
		require.NoError(t, err, tt.name)
		require.NotEmpty(t, ds, tt.name)
		assert.Equal(t, tt.want, fmt.Sprintf("%d:%d TS%d", ds[0].Line, ds[0].Column, ds[0].Code), "%s: %v", tt.name, ds)
	}
}

func TestCheckerPassesCorrectPrograms(t *testing.T) {
	c := newChecker(t)
	for _, program := range []string{
		"const r = await db.query({ sql: 'select 1' });\nreturn r.rows.map((x) => x.name);",
		"const hits = await search({ q: 'go' });\nreturn hits.items?.length ?? 0;", // unknown, read as JS would
		"const [a, b] = await Promise.all([get_weather({ location: 'a' }), get_weather({ location: 'b', days: 3 })]);\nreturn a.temp + b.temp;",
		"const enc = new TextEncoder().encode('x'); const u = new URL('https://a.b/c'); console.log(enc, u.host, atob(btoa('q')));\nreturn structuredClone({a: 1});",
		"async function helper(x) { return x * 2 }\nconst v = await helper(21);\nreturn v;",
		"let s: number = 0;\nfor (const x of [1, 2, 3]) s += x;\nreturn s;",
		"await new Promise((r) => setTimeout(r, 1));\nreturn performance.now() > 0 && crypto.randomUUID().length;",
		"const o = {};\no.later = 1;\nreturn o;",
		"if (typeof document !== 'undefined' || typeof(window) === 'object') return 1;\nreturn typeof require;",
		"const r = await db.query({ sql: 'x' }, { extra: true });\nreturn r.rows.length;",
	} {
		ds, err := c.Check(context.Background(), typescript.CheckInput{Program: program, Declarations: decls})
		require.NoError(t, err)
		assert.Empty(t, ds, program)
	}
}

// TestCheckerRestarts: the process dying between checks is restarted and
// the check retried.
func TestCheckerRestarts(t *testing.T) {
	c := newChecker(t)
	typescript.KillChecker(c)
	ds, err := c.Check(context.Background(), typescript.CheckInput{Program: "return nope", Declarations: decls})
	require.NoError(t, err)
	require.Len(t, ds, 1)
}

func TestCheckerConcurrent(t *testing.T) {
	c := newChecker(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds, err := c.Check(context.Background(), typescript.CheckInput{Program: fmt.Sprintf("return nope%d", i), Declarations: decls})
			if err == nil && (len(ds) != 1 || !strings.Contains(ds[0].Message, fmt.Sprintf("nope%d", i))) {
				err = fmt.Errorf("check %d: %v", i, ds)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestCheckerHostile: a huge, deeply nested program ends at its deadline
// with an error, and the checker works afterwards.
func TestCheckerHostile(t *testing.T) {
	c := newChecker(t)
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "declare function f%d(a: { x: number }): Promise<number>;\n", i)
	}
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.Check(ctx, typescript.CheckInput{Program: "const a = " + deep + ";\n" + strings.Repeat("a;\n", 200000), Declarations: b.String()})
	if err != nil {
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	}
	ds, err := c.Check(context.Background(), typescript.CheckInput{Program: "return nope", Declarations: decls})
	require.NoError(t, err)
	require.Len(t, ds, 1)
}

// BenchmarkCheck is a warm check of a 50-line program against 20 tool
// declarations (the yardstick), with its p50 and p99.
func BenchmarkCheck(b *testing.B) {
	c, err := typescript.NewChecker(typescript.CheckerOptions{})
	if err != nil {
		b.Skip(err)
	}
	defer c.Close()
	var d strings.Builder
	for i := range 20 {
		fmt.Fprintf(&d, "declare function tool%d(args: { location: string; days?: number }): Promise<{ temp: number; rows: { id: number }[] }>;\n", i)
	}
	var p strings.Builder
	for i := range 25 {
		fmt.Fprintf(&p, "const r%d = await tool%d({ location: 'city %d' });\n", i, i%20, i)
		fmt.Fprintf(&p, "console.log(r%d.temp, r%d.rows.map((x) => x.id).length);\n", i, i)
	}
	in := typescript.CheckInput{Program: p.String(), Declarations: d.String()}
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Check(context.Background(), in); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

// TestCheckerShapes: a program in a fence, or written as an arrow, is
// checked with positions in the model's own text.
func TestCheckerShapes(t *testing.T) {
	c := newChecker(t)
	for _, tt := range []struct{ program, want string }{
		{"Here it is:\n```js\nconst w = await get_weather({ city: 'x' });\n```", "3:31 TS2353"},
		{"async () => {\n  return await db.qeury({ sql: '' });\n}", "2:19 TS2551"},
		{"```typescript\nconst n: number = await nope();\n```", "2:25 TS2304"},
	} {
		ds, err := c.Check(context.Background(), typescript.CheckInput{Program: tt.program, Declarations: decls})
		require.NoError(t, err)
		require.NotEmpty(t, ds, tt.program)
		assert.Equal(t, tt.want, fmt.Sprintf("%d:%d TS%d", ds[0].Line, ds[0].Column, ds[0].Code), tt.program)
	}
}

// TestCheckerWithExecutor: the checker as an executor's type check: a
// capability called with an unknown property is refused before it runs,
// at its position; a correct program runs.
func TestCheckerWithExecutor(t *testing.T) {
	c := newChecker(t)
	e, err := codemode.New(codemode.WithTypeCheck(c, codemode.TypeCheckEnforce), codemode.WithCapability(codemode.Capability{
		Name: "get_weather", Async: true, Params: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`),
		Func: func(context.Context, json.RawMessage) (any, error) { return map[string]any{"temp": 20}, nil }}))
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Run(context.Background(), "const w = await get_weather({ city: 'Paris' });\nreturn w;")
	var ee *codemode.ExecError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, codemode.KindTypeError, ee.Kind, ee.Error())
	require.NotEmpty(t, ee.Diagnostics)
	assert.Equal(t, codemode.TypeDiagnostic{Line: 1, Column: 31, Code: 2353, Message: ee.Diagnostics[0].Message}, ee.Diagnostics[0])
	res, err := e.Run(context.Background(), "const w = await get_weather({ location: 'Paris' });\nreturn w.temp;")
	require.NoError(t, err)
	assert.Equal(t, "20", string(res.Value))
}

// TestCheckerDiesMidCheck: the process killed while a check runs (its
// files open, its diagnostics not yet asked for: no race with the clock)
// is started again and the check retried: the caller gets its
// diagnostics.
func TestCheckerDiesMidCheck(t *testing.T) {
	c := newChecker(t)
	pid := typescript.CheckerPID(c)
	typescript.KillMidCheck()
	ds, err := c.Check(context.Background(), typescript.CheckInput{Program: "return nope", Declarations: decls})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.NotEqual(t, pid, typescript.CheckerPID(c), "a new process")
}

// BenchmarkCheckCold is a checker's start and its first check (the ES
// library loaded), and the process's resident memory at rest after it.
func BenchmarkCheckCold(b *testing.B) {
	in := typescript.CheckInput{Program: "const w = await get_weather({ location: 'x' });\nreturn w.temp;", Declarations: decls}
	var rss int
	for b.Loop() {
		c, err := typescript.NewChecker(typescript.CheckerOptions{})
		if err != nil {
			b.Skip(err)
		}
		if _, err := c.Check(context.Background(), in); err != nil {
			b.Fatal(err)
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", typescript.CheckerPID(c))); err == nil {
			for _, line := range strings.Split(string(st), "\n") {
				if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &rss)
				}
			}
		}
		c.Close()
	}
	b.ReportMetric(float64(rss)/1024, "MiB-rss-at-rest")
}
