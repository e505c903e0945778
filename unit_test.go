package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unitImage is the size of the only slot's unit image.
func unitImage(e *Executor) int {
	n := 0
	for s := range e.slots.all {
		n = s.imageSize(imageUnit)
	}
	return n
}

// TestUnitImageTools: a tool called twice in a row on a slot is restored
// evaluated from then on, and each call still starts from the tool's
// evaluated state (nothing a call changes reaches the next); a tool whose
// top level reads randomness, the clock or does anything a restore would
// not redo gets no image and evaluates afresh per call.
func TestUnitImageTools(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, source string
		image        bool
	}{
		{"pure table", "(() => { const table = Array.from({length: 100}, (_, i) => i * i); return (a) => table[a.i] - a.i * a.i + a.i })()", true},
		{"function bodies may read the clock", "(() => { function stamp() { return Date.now() }; return (a) => stamp() > 0 ? a.i : -1 })()", true},
		{"Math.random at the top", "(() => { const r = Math.random(); return (a) => a.i })()", false},
		{"Date.now at the top", "(() => { const t = Date.now(); return (a) => a.i })()", false},
		{"new Date at the top", "(() => { const t = new Date(); return (a) => a.i })()", false},
		{"Date captured at the top", "(() => { const D = Date; return (a) => a.i })()", false},
		{"Date replaced at the top", "(() => { globalThis.Date = function () {}; return (a) => a.i })()", false},
		{"performance.now at the top", "(() => { const t = performance.now(); return (a) => a.i })()", false},
		{"crypto at the top", "(() => { const id = crypto.randomUUID(); return (a) => a.i })()", false},
		{"a log at the top", "(() => { console.log('loading'); return (a) => a.i })()", false},
		{"a timer at the top", "(() => { setTimeout(() => {}, 0); return (a) => a.i })()", false},
		{"a job at the top", "(() => { Promise.resolve().then(() => {}); return (a) => a.i })()", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newExecutor(t, WithSlots(1))
			ctx := context.Background()
			_, err := e.Register(ctx, ToolSource{Name: "t", Source: tc.source})
			require.NoError(t, err)
			for i := range 4 {
				out, err := e.Call(ctx, "t", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i+1)))
				require.NoError(t, err)
				assert.Equal(t, fmt.Sprint(i+1), string(out))
			}
			if e.checked {
				assert.Zero(t, unitImage(e), "checked sandboxes keep no image")
				return
			}
			if tc.image {
				assert.Positive(t, unitImage(e))
			} else {
				assert.Zero(t, unitImage(e))
			}
		})
	}
}

// TestUnitImageToolState: what a call does to the tool's state or the
// global object is gone for the next call, restored from the unit image or
// not, and the global Date the image was watched through is the plain
// data property a run sees.
func TestUnitImageToolState(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(1))
	ctx := context.Background()
	_, err := e.Register(ctx, ToolSource{Name: "counter", Source: `(() => { let n = 0;
		return (a) => {
			const seen = [++n, typeof globalThis.leak, ({}).polluted ?? null];
			globalThis.leak = 1; Object.prototype.polluted = 'x';
			const d = Object.getOwnPropertyDescriptor(globalThis, 'Date');
			return [...seen, d.writable, d.enumerable, d.configurable, typeof d.value, Date === d.value]
		} })()`})
	require.NoError(t, err)
	for range 5 {
		out, err := e.Call(ctx, "counter", json.RawMessage(`{}`))
		require.NoError(t, err)
		assert.Equal(t, `[1,"undefined",null,true,false,true,"function",true]`, string(out))
	}
	// A run between calls (another image) and another tool (another
	// unit) leave the tool's image working.
	_, err = e.Register(ctx, ToolSource{Name: "other", Source: `(a) => 'other'`})
	require.NoError(t, err)
	for range 3 {
		res, err := e.Run(ctx, "return typeof leak")
		require.NoError(t, err)
		assert.Equal(t, `"undefined"`, string(res.Value))
		for _, name := range []string{"counter", "counter", "other", "other"} {
			out, err := e.Call(ctx, name, json.RawMessage(`{}`))
			require.NoError(t, err)
			if name == "other" {
				assert.Equal(t, `"other"`, string(out))
			} else {
				assert.Equal(t, `[1,"undefined",null,true,false,true,"function",true]`, string(out))
			}
		}
	}
}

// TestUnitImageRandomness: a top level that reads Math.random sees a new
// value on every call (it re-evaluates), and one whose functions read it
// get the run's own seed from the image.
func TestUnitImageRandomness(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(1))
	ctx := context.Background()
	_, err := e.Register(ctx, ToolSource{Name: "top", Source: "(() => { const r = Math.random(); return (a) => r })()"})
	require.NoError(t, err)
	_, err = e.Register(ctx, ToolSource{Name: "body", Source: "(a) => Math.random()"})
	require.NoError(t, err)
	for _, name := range []string{"top", "body"} {
		seen := map[string]bool{}
		for range 6 {
			out, err := e.Call(ctx, name, json.RawMessage(`{}`))
			require.NoError(t, err)
			seen[string(out)] = true
		}
		assert.Len(t, seen, 6, name)
	}
}

// TestUnitImageExecute: a provider set's entry is kept evaluated; every
// run still gets a fresh sandbox, its preludes run per run, a ProxySource
// that reads randomness or awaits keeps working, and two provider sets in
// turn each get their own scope.
func TestUnitImageExecute(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(1))
	ctx := context.Background()
	store := []Provider{{Name: "store", Tools: []string{"x"}, Prelude: "globalThis.runs = (globalThis.runs ?? 0) + 1; store.helpers = { n: globalThis.runs }"}}
	random := []Provider{{Name: "rnd", ProxySource: "const rnd = { r: Math.random() }"}}
	awaited := []Provider{{Name: "late", ProxySource: "const late = await Promise.resolve({ v: 7 })"}}
	exec := func(ps []Provider, code string) string {
		res := e.Execute(ctx, Request{Code: code, Providers: ps, Dispatch: (&recorder{}).dispatch})
		require.Empty(t, res.Error, code)
		return string(res.Result)
	}
	probe := `async () => {
			const r = [store.helpers.n, typeof globalThis.leak, ({}).polluted ?? null];
			globalThis.leak = 1; Object.prototype.polluted = 'x'; store.helpers.n = 99; await store.x(); return r }`
	for range 4 {
		assert.Equal(t, `[1,"undefined",null]`, exec(store, probe))
	}
	if !e.checked {
		assert.Positive(t, unitImage(e), "the second run in a row of a provider set keeps its entry evaluated")
	}
	seen := map[string]bool{}
	for range 4 {
		seen[exec(random, "async () => rnd.r")] = true
		seen[exec(random, "async () => rnd.r")] = true
		assert.Equal(t, "7", exec(awaited, "async () => late.v"))
		assert.Equal(t, "7", exec(awaited, "async () => late.v"))
		assert.Equal(t, `[1,"undefined",null]`, exec(store, probe))
		assert.Equal(t, `[1,"undefined",null]`, exec(store, probe))
	}
	assert.Len(t, seen, 8, "a ProxySource reading Math.random evaluates per run")
	for range 3 {
		assert.Equal(t, `[1,"undefined",null]`, exec(store, `async () => {
			const r = [store.helpers.n, typeof globalThis.leak, ({}).polluted ?? null];
			globalThis.leak = 1; Object.prototype.polluted = 'x'; return r }`))
	}
}
