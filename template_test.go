package codemode

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The BRIDGE_TMPL_* verdicts (bridge.h).
const (
	tmplFirst = 1
	tmplReady = 2
)

// retireSlots makes every run of e, from now on, get a slot of its own (in
// a region of its own), or from off, reuse them again.
func retireSlots(e *Executor, on bool) {
	e.slots.mu.Lock()
	e.slots.retire = on
	e.slots.mu.Unlock()
}

// readyTemplate runs runs on new slots until e's template of the kind is
// ready: two slots build their images, and the template learns its
// pointers from the pair.
func readyTemplate(t *testing.T, e *Executor, run func() error, runtime bool) {
	t.Helper()
	retireSlots(e, true)
	defer retireSlots(e, false)
	for range 3 {
		require.NoError(t, run())
	}
	st := e.tmplStats(runtime)
	require.Equal(t, tmplReady, st.State, "%+v", st)
	require.NotZero(t, st.Clones, "%+v", st)
}

func runOne(e *Executor, script string) func() error {
	return func() error {
		_, err := e.Run(context.Background(), script)
		return err
	}
}

func executeOne(e *Executor, code string) func() error {
	return func() error {
		if res := e.Execute(context.Background(), Request{Code: code}); res.Error != "" {
			return fmt.Errorf("%s", res.Error)
		}
		return nil
	}
}

// TestTemplateLearnsPointers: a template learns its pointers from two
// images of the same sandbox, and what else differs between them is what
// the design expects (bridge_image.c, Templates): the four words that point at
// the slot (the runtime's and context's opaques, the allocator's, the
// interrupt handler's), one hash word per hashed shape of the image (their
// count is the engine's: 21 in the plain image, 25 in Execute's), and a
// few others (the stack bounds, the engine's own Math.random seed). A
// change of the engine that keeps more state by address shows here first,
// and so would a byte left over in an image (a stale address byte once
// made a header word look like a pointer, for one window pair in a few
// hundred): sixteen executors learn from sixteen pairs of windows.
func TestTemplateLearnsPointers(t *testing.T) {
	t.Parallel()
	if checkedMode {
		t.Skip("checked mode builds every sandbox on libc")
	}
	for _, runtime := range []bool{false, true} {
		t.Run(fmt.Sprintf("runtime=%v", runtime), func(t *testing.T) {
			hashes := map[bool]uint64{false: 21, true: 25}[runtime]
			for range 16 { // each alive till the end: new windows each
				e := newExecutor(t)
				assert.Equal(t, 0, e.tmplStats(runtime).State)
				run := runOne(e, "return 1")
				if runtime {
					run = executeOne(e, "async () => 1")
				}
				readyTemplate(t, e, run, runtime)
				st := e.tmplStats(runtime)
				assert.Greater(t, st.Words, uint64(10000), "%+v", st)
				assert.Greater(t, st.Reloc, st.Words/5, "a sandbox is mostly pointers: %+v", st)
				assert.Equal(t, uint64(4), st.Self, "%+v", st)
				assert.Equal(t, hashes, st.Hashes, "%+v", st)
				assert.LessOrEqual(t, st.Others, uint64(4), "%+v", st)
			}
		})
	}
}

// TestClonesAgree: sandboxes cloned from a template give every script the
// outcome a sandbox built from scratch on libc gives it (checked mode),
// including what a clone could get wrong: hashing by address (Maps and
// WeakMaps keyed by the built-in objects the clone moved, shapes of
// built-in prototypes), the shape table growing and shrinking, cyclic
// collections, and Execute's runtime image.
func TestClonesAgree(t *testing.T) {
	t.Parallel()
	if checkedMode {
		t.Skip("checked mode builds every sandbox on libc")
	}
	limits := WithLimits(Limits{Memory: 8 << 20, Deadline: 10 * time.Second})
	clone := newExecutor(t, limits)
	checked := newExecutor(t, limits)
	checked.checked = true
	readyTemplate(t, clone, runOne(clone, "return 1"), false)
	readyTemplate(t, clone, executeOne(clone, "async () => 1"), true)
	retireSlots(clone, true) // every run below on a clone of its own

	scripts := append(modeScripts(t),
		"const m = new Map([[Object.prototype, 1], [Math, 2], [JSON, 3], [Symbol.iterator, 4]]); const w = new WeakMap([[Array.prototype, 5]]); const s = new Set([Promise, Reflect]); return [m.get(Object.prototype), m.get(Math), m.get(JSON), m.get(Symbol.iterator), w.get(Array.prototype), s.has(Promise), s.has(Reflect), m.has({})]",
		"const o = []; for (let i = 0; i < 20000; i++) { const x = {}; x['p' + (i % 5000)] = i; o.push(x) } let n = 0; for (const x of o) { n += x[Object.keys(x)[0]]; delete x[Object.keys(x)[0]] } return [n, Object.keys(o[7]).length]",
		"const xs = [{}, [], Object.create(Array.prototype), Object.create(null), new Date(0), /x/g, new Error('e'), function () {}, new Map(), Promise.resolve()]; return xs.map((x) => Object.prototype.toString.call(x))",
		"class A { constructor() { this.a = 1 } } class B extends A { constructor() { super(); this.b = 2 } } const bs = []; for (let i = 0; i < 1000; i++) bs.push(new B()); return [bs.length, Object.keys(bs[999]), bs[0] instanceof A]",
		"try { null.f() } catch (e) { return [e instanceof TypeError, e.stack.split('\\n').length > 1] }",
		"const s = 'abc'.repeat(1000); return [s.length, s.indexOf('cab'), [...'héllo'].length, 'x'.padStart(5, '-'), (1234.5).toFixed(1), JSON.stringify({a: [1, {b: 2}]})]",
	)
	outcome := func(e *Executor, script string) string {
		res, err := e.Run(context.Background(), script)
		if err != nil {
			return err.(*ExecError).LLMJSON()
		}
		return fmt.Sprintf("%s %q", res.Value, res.Logs)
	}
	for _, script := range scripts {
		assert.Equal(t, outcome(checked, script), outcome(clone, script), "Run(%.60q)", script)
	}
	for _, code := range []string{
		"async () => { const m = new Map([[Object.prototype, 'p']]); return [m.get(Object.prototype), typeof codemode, [1, 2].map((x) => x * 2)] }",
		"async () => { const a = []; for (let i = 0; i < 10000; i++) a.push({i}); return a.length }",
	} {
		want := checked.Execute(context.Background(), Request{Code: code})
		got := clone.Execute(context.Background(), Request{Code: code})
		assert.Equal(t, want.Error, got.Error, code)
		assert.Equal(t, string(want.Result), string(got.Result), code)
	}
	assert.Greater(t, clone.tmplStats(false).Clones, uint64(len(scripts)))
}

// TestClonesIsolate: a slot whose sandbox is a clone, used again (it
// clones again for each of its first cloneRuns runs, keeping no image of
// its own, then builds its own image), keeps runs apart as a built one
// does, on either side of the switch.
func TestClonesIsolate(t *testing.T) {
	t.Parallel()
	if checkedMode {
		t.Skip("checked mode builds every sandbox on libc")
	}
	var marks atomic.Int32
	e := isolationExecutor(t, &marks, WithSlots(4))
	readyTemplate(t, e, runOne(e, "return 1"), false)
	before := e.tmplStats(false).Clones
	// The next run makes the fourth slot, a clone, which every run after
	// it reuses.
	runs := 2*len(isolationCases()) + 2
	require.Greater(t, runs, cloneRuns+2, "runs on both sides of the switch")
	assertIsolated(t, e, &marks)
	assert.Equal(t, before+uint64(cloneRuns), e.tmplStats(false).Clones)
	made, _ := e.slots.counts()
	assert.Equal(t, 4, made)
	e.slots.mu.Lock()
	defer e.slots.mu.Unlock()
	require.Len(t, e.slots.idle, 1)
	assert.NotZero(t, e.slots.idle[0].s.imageSize(imagePlain), "after cloneRuns clones a slot builds its own image")
}
