//go:build cgo

package codemode

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeterminism: a seed fixes Math.random and crypto, a clock fixes
// Date and performance.now (virtual: 1 µs per read), so two runs with the
// same Determinism compute the same thing, and the Date in front of the
// engine's behaves as Date does.
func TestDeterminism(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	clock := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	run := func(d *Determinism, script string) string {
		ctx := context.Background()
		if d != nil {
			ctx = WithDeterminism(ctx, *d)
		}
		res, err := e.Run(ctx, script)
		require.NoError(t, err, script)
		return string(res.Value)
	}
	const draw = "return [Math.random(), Math.random(), crypto.randomUUID(), [...crypto.getRandomValues(new Uint8Array(4))]]"
	a := run(&Determinism{Seed: 7}, draw)
	assert.Equal(t, a, run(&Determinism{Seed: 7}, draw))
	assert.NotEqual(t, a, run(&Determinism{Seed: 8}, draw))
	assert.NotEqual(t, run(nil, draw), run(nil, draw))

	d := &Determinism{Seed: 1, Clock: clock}
	tests := []struct{ name, script, want string }{
		{"the clock starts at Clock", "return [Date.now(), new Date().toISOString()]", `[1772600767890,"2026-03-04T05:06:07.890Z"]`},
		{"performance.now ticks a microsecond per read", "const a = performance.now(), b = performance.now(), c = performance.now(); return [a < 0.01, Math.round((b - a) * 1e6), Math.round((c - b) * 1e6)]", `[true,1000,1000]`},
		{"a loop waiting on the clock ends", "const t = Date.now(); let n = 0; while (Date.now() - t < 5) n++; return n", `4999`},
		{"Date is still Date", `class D extends Date {}
			return [Date.prototype.constructor === Date, new Date(0).getTime(), Date.UTC(2020, 0, 1), Date.parse('2020-01-01T00:00:00Z'),
				new Date() instanceof Date, new D() instanceof D, new D(5).getTime(), Date.name, Date.length, typeof Date()]`,
			`[true,0,1577836800000,1577836800000,true,true,5,"Date",7,"string"]`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, run(d, tt.script), tt.name)
	}
	// Same Determinism, same everything.
	const all = "await new Promise((r) => setTimeout(r, 1)); return [Math.random(), Date.now(), performance.now(), crypto.randomUUID(), new Date().toString()]"
	assert.Equal(t, run(d, all), run(d, all))
	// Without it, the real clock.
	var now float64
	require.NoError(t, json.Unmarshal([]byte(run(nil, "return Date.now()")), &now))
	assert.InDelta(t, float64(time.Now().UnixMilli()), now, 60_000)
}

// TestDeterminismTools: a deterministic call of a registered tool and a
// deterministic Execute see the same clock and seed.
func TestDeterminismTools(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(1))
	ctx := WithDeterminism(context.Background(), Determinism{Seed: 3, Clock: time.Unix(100, 0)})
	_, err := e.Register(context.Background(), ToolSource{Name: "t", Source: "(a) => [Date.now(), Math.random()]"})
	require.NoError(t, err)
	var first string
	for i := range 4 {
		out, err := e.Call(ctx, "t", json.RawMessage(`{}`))
		require.NoError(t, err)
		if i == 0 {
			first = string(out)
			assert.Contains(t, first, "[100000,")
		}
		assert.Equal(t, first, string(out))
	}
	r1 := e.Execute(ctx, Request{Code: "async () => [Date.now(), Math.random()]"})
	r2 := e.Execute(ctx, Request{Code: "async () => [Date.now(), Math.random()]"})
	require.Empty(t, r1.Error)
	assert.Equal(t, string(r1.Result), string(r2.Result))
}

// TestRunStats: elapsed time, host calls and peak memory per run.
func TestRunStats(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}), // a 500,000-element fill under ASan, loaded
		WithCapability(Capability{Name: "ping", Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}),
		WithCapability(Capability{Name: "pong", Async: true, Func: func(context.Context, json.RawMessage) (any, error) { return 2, nil }}))
	ctx := context.Background()
	res, err := e.Run(ctx, "ping(); ping(); await pong(); return 1")
	require.NoError(t, err)
	assert.Equal(t, 3, res.Stats.HostCalls)
	assert.Positive(t, res.Stats.Elapsed)
	assert.Equal(t, e.Limits(), res.Stats.Limits)
	small := res.Stats.PeakMemory
	assert.Greater(t, small, int64(50<<10), "the sandbox's own heap counts")

	res, err = e.Run(ctx, "const a = new Array(500000).fill(1.5); return a.length")
	require.NoError(t, err)
	assert.Zero(t, res.Stats.HostCalls)
	assert.Greater(t, res.Stats.PeakMemory, small+int64(3<<20))

	// A failed run measures too.
	res, err = e.Run(ctx, "ping(); throw new Error('x')")
	require.Error(t, err)
	assert.Equal(t, 1, res.Stats.HostCalls)

	x := e.Execute(ctx, Request{Code: "async () => (await Promise.all([1, 2, 3].map((i) => store.x(i)))).length",
		Providers: []Provider{{Name: "store"}}, Dispatch: (&recorder{}).dispatch})
	require.Empty(t, x.Error)
	assert.Equal(t, 3, x.Stats.HostCalls)
	assert.Positive(t, x.Stats.PeakMemory)
	assert.Positive(t, x.Stats.Elapsed)
	refused := e.Execute(ctx, Request{Code: "async () => 1", Providers: []Provider{{Name: "console"}}})
	assert.NotEmpty(t, refused.Error)
	assert.Positive(t, refused.Stats.Elapsed)
}

// TestDeterministicUnitImage: deterministic Execute runs keep a unit image
// of their own (with the virtual clock's Date); a deterministic run from it
// sees its own clock, and a run that is not deterministic never restores it.
func TestDeterministicUnitImage(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(1))
	req := Request{Code: `async () => [Date.now(), new Date().getFullYear(), Math.random(), typeof store]`,
		Providers: []Provider{{Name: "store"}}}
	det := func(year int) string {
		ctx := WithDeterminism(context.Background(), Determinism{Seed: 7, Clock: time.Date(year, 1, 2, 3, 4, 5, 0, time.UTC)})
		res := e.Execute(ctx, req)
		require.Empty(t, res.Error)
		return string(res.Result)
	}
	first := det(2001)
	for i := 0; i < 3; i++ {
		assert.Equal(t, first, det(2001), "run %d from the deterministic image", i)
	}
	assert.Contains(t, det(1999), ",1999,", "the image's Date reads each run's own clock")
	res := e.Execute(context.Background(), req)
	require.Empty(t, res.Error)
	var v []any
	require.NoError(t, json.Unmarshal(res.Result, &v))
	assert.InDelta(t, float64(time.Now().UnixMilli()), v[0], float64(time.Minute.Milliseconds()), "a plain run has the real clock")
	assert.Equal(t, first, det(2001), "and the deterministic runs theirs again")
}
