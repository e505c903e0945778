package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isolationCase is a pair of scripts run one after the other in the same
// sandbox memory: nothing the first did may be visible to the second.
type isolationCase struct {
	name   string
	first  string // run first; its outcome does not matter
	second string // must return want
	want   string
}

// isolationExecutor is an executor for isolationCases: its capabilities
// and an 8 MiB memory limit.
func isolationExecutor(t *testing.T, marks *atomic.Int32, opts ...Option) *Executor {
	return newExecutor(t, append([]Option{WithLimits(Limits{Deadline: time.Second, Memory: 8 << 20}),
		WithCapability(Capability{Name: "mark", Func: fn(func(context.Context, json.RawMessage) (any, error) {
			marks.Add(1)
			return nil, nil
		})}),
		WithCapability(Capability{Name: "boom", Func: fn(func(context.Context, json.RawMessage) (any, error) {
			panic("handler bug")
		})})}, opts...)...)
}

func isolationCases() []isolationCase {
	return []isolationCase{
		{"globals",
			"globalThis.leak = 1; var v = 2; function f() {}; let l = 3",
			"return [typeof leak, typeof v, typeof f, typeof l]",
			`["undefined","undefined","undefined","undefined"]`},
		{"prototypes",
			"Object.prototype.polluted = 1; Array.prototype.map = null; String.prototype.trim = () => 'x'; Function.prototype.call = null; JSON.parse = null",
			"return [({}).polluted, [1].map((x) => x * 2), ' a '.trim(), typeof Function.prototype.call, JSON.parse('1')]",
			`[null,[2],"a","function",1]`},
		{"symbol registry",
			"Symbol.prototype.marker = 'leak'; Symbol.for('k'); for (let i = 0; i < 1000; i++) Symbol.for('s' + i)",
			"return [Symbol.for('k').marker, Symbol.keyFor(Symbol.for('k'))]",
			`[null,"k"]`},
		{"regexp statics",
			"RegExp.$1 = 'leak'; const r = /a/g; r.exec('aaa'); globalThis.r = r; RegExp.prototype.exec = () => null",
			"return [typeof RegExp.$1, /(b)/.exec('b')[1], typeof r]",
			`["undefined","b","undefined"]`},
		{"weakmap",
			"const k = {}; globalThis.wm = new WeakMap([[k, 1]]); WeakMap.prototype.get = () => 'leak'",
			"const w = new WeakMap(); const k = {}; w.set(k, 2); return [w.get(k), typeof wm]",
			`[2,"undefined"]`},
		{"errors",
			"Error.stackTraceLimit = 0; Error.prepareStackTrace = () => 'leak'; Error.prototype.toString = () => 'leak'; throw new Error('first')",
			"try { null.x } catch (e) { return [e.stack.includes('script.js'), String(e), Error.stackTraceLimit > 0] }",
			`[true,"TypeError: cannot read property 'x' of null",true]`},
		{"timeout",
			"globalThis.leak = 1; for (;;) {}",
			"return typeof leak",
			`"undefined"`},
		{"memory",
			"globalThis.leak = []; for (;;) leak.push('x'.repeat(1000))",
			"const a = []; for (let i = 0; i < 1000; i++) a.push('y'.repeat(1000)); return [typeof leak, a.length]",
			`["undefined",1000]`},
		{"panicking handler",
			"globalThis.leak = 1; boom({})",
			"return typeof leak",
			`"undefined"`},
		{"capability",
			"try { boom({}) } catch (e) { globalThis.caught = e }",
			"try { boom({}) } catch (e) { return [e.message, typeof caught] }",
			`["panic: handler bug","undefined"]`},
	}
}

// assertIsolated runs the isolation cases on e, whose runs must all share
// one sandbox's memory, then checks that timers and jobs a run left behind
// never run in the next one.
func assertIsolated(t *testing.T, e *Executor, marks *atomic.Int32) {
	ctx := context.Background()
	for _, tt := range isolationCases() {
		_, _ = e.Run(ctx, tt.first)
		res, err := e.Run(ctx, tt.second)
		require.NoError(t, err, tt.name)
		assert.JSONEq(t, tt.want, string(res.Value), tt.name)
	}
	res, err := e.Run(ctx, `
		setTimeout(() => { console.log('stale timer'); mark({}) }, 0)
		setInterval(() => mark({}), 1)
		Promise.resolve().then(() => new Promise(() => {})).then(() => mark({}))
		return 'left'`)
	require.NoError(t, err)
	assert.Equal(t, `"left"`, string(res.Value))
	res, err = e.Run(ctx, "await new Promise((r) => setTimeout(r, 20)); return 'second'")
	require.NoError(t, err)
	assert.Equal(t, `"second"`, string(res.Value))
	assert.Empty(t, res.Logs)
	assert.Equal(t, int32(0), marks.Load())
}

// TestIsolationOnOneSlot runs pairs of scripts on an executor with a single
// slot, so the second always reuses the first's sandbox memory.
func TestIsolationOnOneSlot(t *testing.T) {
	t.Parallel()
	var marks atomic.Int32
	assertIsolated(t, isolationExecutor(t, &marks, WithSlots(1)), &marks)
}

// TestMathRandomDiffers: every run gets its own Math.random sequence, even
// from the same snapshot.
func TestMathRandomDiffers(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(1))
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		res, err := e.Run(context.Background(), "return [Math.random(), Math.random(), Math.random()]")
		require.NoError(t, err)
		var xs []float64
		require.NoError(t, json.Unmarshal(res.Value, &xs))
		for _, x := range xs {
			assert.True(t, x >= 0 && x < 1, "%v", x)
		}
		assert.False(t, seen[string(res.Value)], "a sequence repeated")
		seen[string(res.Value)] = true
	}
	res, err := e.Run(context.Background(), "return [typeof Math.random, Math.random.name, Math.random.length]")
	require.NoError(t, err)
	assert.Equal(t, `["function","random",0]`, string(res.Value))
}

// TestSlotsBoundConcurrency: runs beyond WithSlots wait for a slot, under
// their deadline and context, and fail with ErrBusy if none frees in time.
func TestSlotsBoundConcurrency(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	e := newExecutor(t, WithSlots(1), WithLimits(Limits{Deadline: 2 * time.Second}),
		WithCapability(Capability{Name: "hold", Func: fn(func(ctx context.Context, _ json.RawMessage) (any, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "held", nil
		})}))
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(context.Background(), "return hold({})")
		done <- err
	}()
	<-entered

	// A run waiting for a slot follows its context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := e.Run(ctx, "return 1")
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.ErrorIs(t, err, ErrBusy)

	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel2)
	_, err = e.Run(ctx2, "return 1")
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.ErrorIs(t, err, ErrBusy)

	waited := make(chan string, 1)
	go func() {
		res, err := e.Run(context.Background(), "return 'after'")
		if err != nil {
			waited <- err.Error()
			return
		}
		waited <- string(res.Value)
	}()
	select {
	case v := <-waited:
		t.Fatalf("a second run got the only slot: %s", v)
	case <-time.After(30 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, `"after"`, <-waited)

	// The deadline counts the wait for a slot.
	unblock := make(chan struct{})
	tight := newExecutor(t, WithSlots(1), WithLimits(Limits{Deadline: 40 * time.Millisecond}),
		WithCapability(Capability{Name: "stuck", Func: fn(func(context.Context, json.RawMessage) (any, error) {
			entered <- struct{}{}
			<-unblock // ignores its context: holds the slot until released
			return nil, nil
		})}))
	first := make(chan error, 1)
	go func() {
		_, err := tight.Run(context.Background(), "stuck({})")
		first <- err
	}()
	<-entered
	_, err = tight.Run(context.Background(), "return 1")
	ee := execErr(t, err)
	assert.Equal(t, KindInternal, ee.Kind, "a run that never got a sandbox is the host's overload: %s", ee.LLMJSON())
	assert.ErrorIs(t, err, ErrBusy)
	assert.NotErrorIs(t, err, ErrTimeout)
	close(unblock)
	assert.Equal(t, KindTimeout, execErr(t, <-first).Kind, "the handler returned after the deadline")

	_, err = New(WithSlots(-1))
	assert.ErrorIs(t, err, ErrInvalidLimits)
}

// TestImagesFollowCapabilities: a slot's image is rebuilt for a new
// capability set.
func TestImagesFollowCapabilities(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(1))
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("cap%d", i)
		v := i
		require.NoError(t, e.AddCapability(Capability{Name: name, Func: fn(func(context.Context, json.RawMessage) (any, error) {
			return v, nil
		})}))
		res, err := e.Run(context.Background(), "return "+name+"({})")
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint(v), string(res.Value))
	}
	res, err := e.Run(context.Background(), "return [cap0({}), cap4({})]")
	require.NoError(t, err)
	assert.Equal(t, "[0,4]", string(res.Value))
}

// TestRunAndExecuteShareASlot alternates Run and Execute on one slot: each
// restores its own image (Execute's holds the runtime, so Run's is
// smaller), and nothing crosses from one to the other.
func TestRunAndExecuteShareASlot(t *testing.T) {
	t.Parallel()
	var e *Executor
	// clean reports whether the arena is zero above what the running
	// sandbox uses: the restore cleared what the last run and the other
	// image left there.
	clean := Capability{Name: "clean", Func: fn(func(context.Context, json.RawMessage) (any, error) {
		if e.checked {
			return true, nil
		}
		for s := range e.slots.all {
			return s.zeroAbove(), nil
		}
		return false, nil
	})}
	e = newExecutor(t, WithSlots(1), WithLimits(memoryLimits(8<<20)), WithCapability(clean))
	ctx := context.Background()
	execute := func(code string) string {
		res := e.Execute(ctx, Request{Code: code, Providers: []Provider{{Name: "store", Tools: []string{"x"}}},
			Dispatch: (&recorder{}).dispatch})
		require.Empty(t, res.Error, code)
		return string(res.Result)
	}
	run := func(script string) string {
		res, err := e.Run(ctx, script)
		require.NoError(t, err, script)
		return string(res.Value)
	}
	const probe = "[typeof leak, ({}).polluted ?? null, [1, 2].length, clean({})]"
	for i := 0; i < 3; i++ {
		assert.Equal(t, `["undefined",null,2,true]`, execute("async () => { const r = "+probe+
			"; globalThis.leak = 1; Object.prototype.polluted = 'x'; await store.x(); return r }"))
		assert.Equal(t, `["undefined",null,2,true]`, run("const r = "+probe+
			"; globalThis.leak = [];  for (let i = 0; i < 20000; i++) leak.push({i}); Object.prototype.polluted = 'y'; return r"))
	}
	if e.checked {
		return
	}
	var plain, withRuntime int
	for s := range e.slots.all {
		plain, withRuntime = s.imageSize(imagePlain), s.imageSize(imageRuntime)
	}
	assert.Positive(t, plain)
	assert.Greater(t, withRuntime, plain)
}

// TestSlotHammer: many goroutines on few slots, mixed outcomes, every
// answer right.
func TestSlotHammer(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithSlots(2), WithLimits(Limits{Deadline: 5 * time.Second, Memory: 8 << 20}))
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				switch i % 5 {
				case 0:
					_, err := e.Run(context.Background(), "globalThis.x = 1; const a = []; for (;;) a.push('z'.repeat(4096))")
					if ee, ok := err.(*ExecError); !ok || ee.Kind != KindMemoryExceeded {
						errs <- fmt.Sprintf("want memory_exceeded, got %v", err)
					}
				default:
					want := fmt.Sprintf(`{"g":%d,"i":%d,"x":"undefined"}`, g, i)
					res, err := e.Run(context.Background(), fmt.Sprintf("return {g: %d, i: %d, x: typeof x}", g, i))
					if err != nil || string(res.Value) != want {
						errs <- fmt.Sprintf("got %v %v, want %s", res, err, want)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}

// TestArenaMemoryLimit: the arena's accounting keeps memory_exceeded exact:
// a script using a little less than the limit succeeds, over it fails.
func TestArenaMemoryLimit(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(memoryLimits(4<<20)), WithSlots(1))
	res, err := e.Run(context.Background(), "const b = new ArrayBuffer(2 << 20); return b.byteLength")
	require.NoError(t, err)
	assert.Equal(t, "2097152", string(res.Value))
	_, err = e.Run(context.Background(), "const b = new ArrayBuffer(5 << 20); return b.byteLength")
	assert.Equal(t, `{"kind":"memory_exceeded","name":"run_js","limit_bytes":4194304}`, execErr(t, err).LLMJSON())
	// Garbage is reused: allocating and dropping far more than the limit
	// in total works.
	res, err = e.Run(context.Background(), "let n = 0; for (let i = 0; i < 200; i++) { const a = new Array(10000).fill(i); n += a.length } return n")
	require.NoError(t, err)
	assert.Equal(t, "2000000", string(res.Value))
	res, err = e.Run(context.Background(), "let s = ''; for (let i = 0; i < 100; i++) { s = 'x'.repeat(100000 + i); } return s.length")
	require.NoError(t, err)
	assert.Equal(t, "100099", string(res.Value))
	// Big results still come back whole after a memory kill.
	_, _ = e.Run(context.Background(), "const a = []; for (;;) a.push(new Array(1000).fill(1))")
	res, err = e.Run(context.Background(), "return 'q'.repeat(100000).length")
	require.NoError(t, err)
	assert.Equal(t, "100000", string(res.Value))
	assert.True(t, strings.HasPrefix(string(res.Value), "100000"))
}
