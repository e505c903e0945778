//go:build cgo

package codemode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/jspos"
)

// sitesSeeds are bodies whose tool calls the instrumentation marks (or
// leaves unmarked, where the parser's extents are not the text's).
var sitesSeeds = []string{
	"return echo({v: 1})",
	"return [echo({v: (1, 2)}), echo({w: [3]})]",
	"const a = 2, b = 3; return echo({v: a + (b)})",
	"return echo({v: ((x) => (x))(4)})",
	"return echo({v: [5].map((x) => (x * 2))})",
	"const xs = [{v: 6}]; return echo(...xs)",
	"const xs = [{v: 7}]; return echo(...(xs))",
	"return echo({v: 8},)",
	"return echo({v: 9} /* c */)",
	"return echo({v: 10} // c\n)",
	"return echo({v: `a${(11)}`})",
	"return echo({v: echo({v: echo({})})})",
	"const o = {}; return [echo(), echo(o), typeof echo]",
	"return echo({v: /x(y)/.source})",
	"return echo({v: (() => { return (12) })()})",
	"return echo({v: 1 ? (13) : (0)})",
	"return echo({v: new Array((2)).length})",
	"let n = 0; for (const k of [1, 2]) n += echo({v: k}).v; return n",
	"const o = {v: 14}; return echo(null || (o))",
	"const o = {v: 15}; return echo((o))",
	"const o = {v: 16}; return echo(1 && (o),)",
	"const o = {v: 17}; return echo(true ? o : (null))",
}

// FuzzSites: the marks the instrumentation puts on tool calls change no
// value: a body's instrumented text, with its marks and without them, run
// as the same global code, logs the same (runGlobal: no markers added,
// no wrapper but the one given).
func FuzzSites(f *testing.F) {
	for _, s := range sitesSeeds {
		f.Add(s)
	}
	e := sitesExecutor(f)
	f.Fuzz(func(t *testing.T, body string) { checkSites(t, e, body) })
}

// TestSitesKeepValues runs FuzzSites's seeds.
func TestSitesKeepValues(t *testing.T) {
	t.Parallel()
	e := sitesExecutor(t)
	compared := 0
	for _, s := range sitesSeeds {
		if checkSites(t, e, s) {
			compared++
		}
	}
	// Those whose last argument ends in a parenthesis are not marked.
	if compared < len(sitesSeeds)-8 {
		t.Errorf("%d of %d seeds were marked and compared", compared, len(sitesSeeds))
	}
}

func sitesExecutor(t testing.TB) *Executor {
	return newExecutor(t, WithLimits(Limits{Deadline: 2 * time.Second}), WithCapability(Capability{Name: "echo", Unchecked: true,
		Func: fn(func(_ context.Context, args json.RawMessage) (any, error) { return args, nil })}))
}

// checkSites runs body's instrumented text with its marks and without,
// and fails when they log differently; false when body has no mark.
func checkSites(t *testing.T, e *Executor, body string) bool {
	t.Helper()
	for _, skip := range []string{"\x00", "__codemode", "random", "Date", "performance", "crypto", "stack", "toString", "arguments",
		"this", "-->", "<!--"} {
		if strings.Contains(body, skip) {
			return false
		}
	}
	marked, unmarked := jspos.Instrument(body, jspos.Body), jspos.InstrumentUnmarked(body, jspos.Body)
	if len(marked.Sites()) == 0 {
		return false
	}
	wrap := func(text string) string {
		return "(async () => {" + text + "\n})().then((v) => console.log('=' + JSON.stringify(v === undefined ? null : v)), " +
			"(e) => console.log('!' + e))"
	}
	ctx := context.Background()
	logs := func(text string) string {
		res, err := e.runGlobal(ctx, wrap(text))
		if err != nil {
			return "error: " + firstLine(err.Error())
		}
		return strings.Join(res.Logs, "\n")
	}
	if got, want := logs(marked.Source()), logs(unmarked.Source()); got != want {
		t.Fatalf("body %q\nmarked   %q logs %q\nunmarked %q logs %q", body, marked.Source(), got, unmarked.Source(), want)
	}
	return true
}
