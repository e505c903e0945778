package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fn adapts a plain function to Capability.Func.
func fn(f func(ctx context.Context, args json.RawMessage) (any, error)) func(context.Context, json.RawMessage) (any, error) {
	return f
}

func echo() Capability {
	return Capability{Name: "echo", Func: fn(func(_ context.Context, args json.RawMessage) (any, error) { return args, nil })}
}

func failing(name, msg string, async bool) Capability {
	return Capability{Name: name, Async: async, Func: fn(func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New(msg)
	})}
}

func TestJSIdentifier(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"get_weather", "get_weather"},
		{"my-tool.v2", "my_tool_v2"},
		{"2fast", "_2fast"},
		{"", "_tool"},
		{"__codemode_evil", "___codemode_evil"},
		{"emoji🔥name", "emoji_name"},
		{"$ok", "$ok"},
		{"JSON", "JSON_tool"},
		{"Object", "Object_tool"},
		{"class", "class_tool"},
		{"undefined", "undefined_tool"},
		{"JSONish", "JSONish"},
		{"console", "console_tool"},
		{"setTimeout", "setTimeout_tool"},
		{"a b\tc", "a_b_c"},
		{"\xff", "_"},
		{"9", "_9"},
	}
	for _, tt := range tests {
		got := JSIdentifier(tt.in)
		assert.Equal(t, tt.want, got, "JSIdentifier(%q)", tt.in)
		assert.Empty(t, identifierProblem(got), "JSIdentifier(%q) = %q must be a valid capability name", tt.in, got)
	}
}

func FuzzJSIdentifier(f *testing.F) {
	for _, s := range []string{"", "get_weather", "my-tool.v2", "2fast", "__codemode", "class", "🔥", "\x00", "Object"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id := JSIdentifier(name)
		if p := identifierProblem(id); p != "" {
			t.Fatalf("JSIdentifier(%q) = %q, refused: %s", name, id, p)
		}
	})
}

func TestCapabilityNameValidation(t *testing.T) {
	t.Parallel()
	ok := fn(func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	tests := []struct{ name, reason string }{
		{"", "the name is empty"},
		{"2fast", "the name starts with '2': it must start with a letter, `_` or `$`"},
		{"-x", "the name starts with '-': it must start with a letter, `_` or `$`"},
		{"my-tool", "the name contains '-': only [A-Za-z0-9_$] are allowed"},
		{"a.b", "the name contains '.': only [A-Za-z0-9_$] are allowed"},
		{"émoji", "the name starts with 'é': it must start with a letter, `_` or `$`"},
		{"__codemode", "the `__codemode` prefix is reserved for codemode's own globals"},
		{"__codemodeX", "the `__codemode` prefix is reserved for codemode's own globals"},
		{"class", `"class" is a JavaScript reserved word`},
		{"await", `"await" is a JavaScript reserved word`},
		{"async", `"async" is a JavaScript reserved word`},
		{"console", `"console" is a built-in global of the sandbox`},
		{"JSON", `"JSON" is a built-in global of the sandbox`},
		{"Object", `"Object" is a built-in global of the sandbox`},
		{"globalThis", `"globalThis" is a built-in global of the sandbox`},
		{"setTimeout", `"setTimeout" is a built-in global of the sandbox`},
	}
	for _, tt := range tests {
		_, err := New(WithCapability(Capability{Name: tt.name, Func: ok}))
		var re *RegisterError
		require.ErrorAs(t, err, &re, "name %q", tt.name)
		want := RegisterError{Stage: StageInvalidCapability, Name: tt.name, Reason: tt.reason}
		assert.Equal(t, want.LLMJSON(), re.LLMJSON())
	}

	e := newExecutor(t, WithCapability(echo()))
	err := e.AddCapability(echo())
	var re *RegisterError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, `{"stage":"invalid_capability","name":"echo","reason":"a capability named \"echo\" is already registered"}`, re.LLMJSON())

	_, err = New(WithCapability(echo()), WithCapability(echo()))
	require.ErrorAs(t, err, &re)
	assert.Equal(t, StageInvalidCapability, re.Stage)

	err = e.AddCapability(Capability{Name: "nofunc"})
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Func is nil", re.Reason)

	for _, good := range []string{"_", "$", "a1", "get_weather", "$ok", "JSONish", "fetch", "__codemod"} {
		assert.NoError(t, e.AddCapability(Capability{Name: good, Func: ok}), good)
	}
}

// TestSandboxGlobalsListed keeps the list of names capabilities may not
// take equal to what a sandbox actually defines.
func TestSandboxGlobalsListed(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res, err := e.Run(context.Background(), "return Object.getOwnPropertyNames(globalThis)")
	require.NoError(t, err)
	var got []string
	require.NoError(t, json.Unmarshal(res.Value, &got))
	var want []string
	for name := range sandboxGlobals {
		want = append(want, name)
	}
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got)
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	ok := fn(func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	e := newExecutor(t, WithCapability(Capability{Name: "b", Func: ok}), WithCapability(Capability{Name: "a", Func: ok}))
	require.NoError(t, e.AddCapability(Capability{Name: "c", Func: ok}))
	assert.Equal(t, []string{"b", "a", "c"}, e.Capabilities())
	res, err := e.Run(context.Background(), "return [b(), a(), c()]")
	require.NoError(t, err)
	assert.Equal(t, `["ok","ok","ok"]`, string(res.Value))
}

func TestSyncCapabilityValues(t *testing.T) {
	t.Parallel()
	var got sync.Map
	record := func(name string, v any) Capability {
		return Capability{Name: name, Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
			got.Store(name, string(args))
			return v, nil
		})}
	}
	e := newExecutor(t,
		WithCapability(echo()),
		WithCapability(record("raw", json.RawMessage(`{"pre":"encoded","n":[1,2]}`))),
		WithCapability(record("anyval", map[string]any{"k": []int{1, 2}, "s": "é"})),
		WithCapability(record("nothing", nil)),
		WithCapability(record("nilraw", json.RawMessage(nil))),
		WithCapability(record("badraw", json.RawMessage(`{not json`))),
		WithCapability(record("unencodable", func() {})),
		WithCapability(record("str", "plain")),
	)
	tests := []struct{ script, want string }{
		{"return echo({a: 1, b: [true, null], c: 'x'})", `{"a":1,"b":[true,null],"c":"x"}`},
		{"return echo()", `{}`},
		{"return echo(undefined)", `{}`},
		{"return echo({d: new Date(0), u: undefined, f() {}})", `{"d":"1970-01-01T00:00:00.000Z"}`},
		{"return raw({})", `{"pre":"encoded","n":[1,2]}`},
		{"return anyval({})", `{"k":[1,2],"s":"é"}`},
		{"return nothing({})", `null`},
		{"return nilraw({})", `null`},
		{"return str({})", `"plain"`},
		{"try { badraw({}) } catch (e) { return e.message }", `"the capability returned invalid JSON"`},
		{"try { unencodable({}) } catch (e) { return e.message.startsWith('cannot encode the result as JSON') }", `true`},
		{"const r = []; for (const v of [5, 'x', null, [1], () => 1, true]) { try { echo(v) } catch (e) { r.push(e.name + ': ' + e.message) } } return r",
			`["TypeError: echo expects one argument object","TypeError: echo expects one argument object","TypeError: echo expects one argument object","TypeError: echo expects one argument object","TypeError: echo expects one argument object","TypeError: echo expects one argument object"]`},
		{"try { echo({n: 1n}) } catch (e) { return e.name }", `"TypeError"`},
		{"const a = {}; a.a = a; try { echo(a) } catch (e) { return e.message }", `"circular reference"`},
		{"return typeof echo", `"function"`},
	}
	for _, tt := range tests {
		res, err := e.Run(context.Background(), tt.script)
		require.NoError(t, err, "Run(%q)", tt.script)
		assert.JSONEq(t, tt.want, string(res.Value), "Run(%q)", tt.script)
	}
	_, err := e.Run(context.Background(), "raw({q: 'x'}); anyval({}); return 1")
	require.NoError(t, err)
	v, _ := got.Load("raw")
	assert.Equal(t, `{"q":"x"}`, v)
}

func TestCapabilityErrors(t *testing.T) {
	t.Parallel()
	e := newExecutor(t,
		WithCapability(failing("fail", "db down: connection refused", false)),
		WithCapability(failing("afail", "async down", true)),
		WithCapability(failing("empty", "", false)),
		WithCapability(Capability{Name: "boom", Func: fn(func(context.Context, json.RawMessage) (any, error) { panic("kaboom") })}),
		WithCapability(Capability{Name: "aboom", Async: true, Func: fn(func(context.Context, json.RawMessage) (any, error) { panic(errors.New("async kaboom")) })}),
	)
	tests := []struct {
		name, script string
		want         string // a value, or the ExecError's LLMJSON
	}{
		{"caught", "try { fail({}) } catch (e) { return [e.message, e instanceof Error, e.name] }", `["db down: connection refused",true,"Error"]`},
		{"caught async", "try { await afail({}) } catch (e) { return [e.message, e instanceof Error] }", `["async down",true]`},
		{"uncaught", "fail({})", `{"kind":"capability","name":"run_js","capability":"fail","message":"db down: connection refused","line":1,"column":1}`},
		{"uncaught async", "await afail({})", `{"kind":"capability","name":"run_js","capability":"afail","message":"async down","line":1,"column":7}`},
		{"rethrown", "try { fail({}) } catch (e) { throw e }", `{"kind":"capability","name":"run_js","capability":"fail","message":"db down: connection refused","line":1,"column":7}`},
		{"rethrown after edits", "try { fail({}) } catch (e) { e.message = 'changed'; throw e }", `{"kind":"capability","name":"run_js","capability":"fail","message":"db down: connection refused","line":1,"column":7}`},
		{"returned rejection", "return afail({})", `{"kind":"capability","name":"run_js","capability":"afail","message":"async down","line":1,"column":8}`},
		{"look-alike is js", "throw new Error('db down: connection refused')", `{"kind":"js","name":"run_js","message":"Error: db down: connection refused\n    at <anonymous> (script.js:1:11)","line":1,"column":11}`},
		{"wrapped is js", "try { fail({}) } catch (e) { throw new Error('wrapped: ' + e.message) }", `{"kind":"js","name":"run_js","message":"Error: wrapped: db down: connection refused\n    at <anonymous> (script.js:1:60)","line":1,"column":60}`},
		{"empty message", "empty({})", `{"kind":"capability","name":"run_js","capability":"empty","message":"","line":1,"column":1}`},
		{"panic", "boom({})", `{"kind":"capability","name":"run_js","capability":"boom","message":"panic: kaboom","line":1,"column":1}`},
		{"panic caught", "try { boom({}) } catch (e) { return e.message }", `"panic: kaboom"`},
		{"async panic", "await aboom({})", `{"kind":"capability","name":"run_js","capability":"aboom","message":"panic: async kaboom","line":1,"column":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.Run(context.Background(), tt.script)
			if strings.HasPrefix(tt.want, `{"kind"`) {
				assert.Equal(t, tt.want, execErr(t, err).LLMJSON(), "Run(%q)", tt.script)
				return
			}
			require.NoError(t, err, "Run(%q)", tt.script)
			assert.JSONEq(t, tt.want, string(res.Value), "Run(%q)", tt.script)
		})
	}
	res, err := e.Run(context.Background(), "return 'still working'")
	require.NoError(t, err)
	assert.Equal(t, `"still working"`, string(res.Value))
}

func TestCapabilityChain(t *testing.T) {
	t.Parallel()
	e := newExecutor(t,
		WithCapability(Capability{Name: "user", Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
			var a struct{ ID int }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			return map[string]any{"id": a.ID, "team": fmt.Sprintf("team-%d", a.ID%3)}, nil
		})}),
		WithCapability(Capability{Name: "team", Async: true, Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
			var a struct{ Name string }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			return map[string]any{"name": a.Name, "size": len(a.Name)}, nil
		})}),
	)
	res, err := e.Run(context.Background(), `
		const u = user({id: 7})
		const t = await team({name: u.team})
		return {user: u.id, team: t.name, size: t.size}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"user":7,"team":"team-1","size":6}`, string(res.Value))
}

// TestAsyncCallsOverlap: eight 200 ms calls under Promise.all take about
// 200 ms, not 1.6 s.
func TestAsyncCallsOverlap(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}), WithCapability(Capability{Name: "slow", Async: true,
		Func: fn(func(ctx context.Context, args json.RawMessage) (any, error) {
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return args, nil
		})}))
	start := time.Now()
	res, err := e.Run(context.Background(), "return (await Promise.all([0,1,2,3,4,5,6,7].map((i) => slow({i})))).map((r) => r.i)")
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, "[0,1,2,3,4,5,6,7]", string(res.Value))
	assert.Less(t, elapsed, 800*time.Millisecond, "the calls must run concurrently") // margin for a loaded machine
}

// TestManyAsyncCalls: 10,000 calls in one run all complete, never more
// than 32 handlers at once.
func TestManyAsyncCalls(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	e := newExecutor(t, WithLimits(Limits{Deadline: 20 * time.Second}), WithCapability(Capability{Name: "work", Async: true,
		Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			var a struct{ I int }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			time.Sleep(10 * time.Microsecond)
			return a.I * 2, nil
		})}))
	res, err := e.Run(context.Background(), `
		const ps = []
		for (let i = 0; i < 10000; i++) ps.push(work({i}))
		const rs = await Promise.all(ps)
		return rs.reduce((a, b) => a + b, 0)`)
	require.NoError(t, err)
	assert.Equal(t, "99990000", string(res.Value))
	assert.LessOrEqual(t, peak.Load(), int32(maxInflight))
	assert.Greater(t, peak.Load(), int32(1), "calls must overlap")
}

// TestQueuedCallsKeepOrder: past the in-flight bound calls wait, and each
// freed handler takes the oldest waiting call.
func TestQueuedCallsKeepOrder(t *testing.T) {
	t.Parallel()
	entered := make(chan int, 64)
	release := make(chan struct{})
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}), WithCapability(Capability{Name: "hold", Async: true,
		Func: fn(func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct{ I int }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			entered <- a.I
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, nil
		})}))
	done := make(chan error)
	go func() {
		_, err := e.Run(context.Background(), "const ps = []; for (let i = 0; i < 40; i++) ps.push(hold({i})); await Promise.all(ps)")
		done <- err
	}()
	first := map[int]bool{}
	for range maxInflight {
		first[<-entered] = true
	}
	assert.Len(t, first, maxInflight)
	for i := range maxInflight {
		assert.True(t, first[i], "call %d is among the first %d", i, maxInflight)
	}
	select {
	case i := <-entered:
		t.Fatalf("call %d started past the in-flight bound", i)
	case <-time.After(20 * time.Millisecond):
	}
	for want := maxInflight; want < 40; want++ {
		release <- struct{}{}
		assert.Equal(t, want, <-entered)
	}
	close(release)
	require.NoError(t, <-done)
}

// TestAsyncCallStartsBeforeReturn: an un-awaited call has entered its
// handler by the time Run returns.
func TestAsyncCallStartsBeforeReturn(t *testing.T) {
	t.Parallel()
	var entered atomic.Int32
	release := make(chan struct{})
	defer close(release)
	e := newExecutor(t, WithCapability(Capability{Name: "write", Async: true,
		Func: fn(func(ctx context.Context, _ json.RawMessage) (any, error) {
			entered.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, nil
		})}))
	res, err := e.Run(context.Background(), "write({}); write({}); return 'returned early'")
	require.NoError(t, err)
	assert.Equal(t, `"returned early"`, string(res.Value))
	// Both calls were started before the run returned: their handlers'
	// goroutines exist, though the scheduler may run them only after.
	assert.Eventually(t, func() bool { return entered.Load() == 2 }, 10*time.Second, time.Millisecond)
}

func TestHandlerContext(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[context.Context]
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}), WithCapability(Capability{Name: "grab",
		Func: fn(func(ctx context.Context, _ json.RawMessage) (any, error) {
			seen.Store(&ctx)
			dl, ok := ctx.Deadline()
			return map[string]any{"has": ok, "left": time.Until(dl).Milliseconds()}, ctx.Err()
		})}))
	res, err := e.Run(context.Background(), "return grab({})")
	require.NoError(t, err)
	var got struct {
		Has  bool
		Left int64
	}
	require.NoError(t, json.Unmarshal(res.Value, &got))
	assert.True(t, got.Has, "the handler's context carries the run's deadline")
	assert.InDelta(t, 5000, got.Left, 1000)
	ctx := *seen.Load()
	assert.Error(t, ctx.Err(), "the handler's context ends with the run")
}

// blockingExecutor has two capabilities that block until their context
// ends and then fail with its error: wait (sync) and await_ (async).
func blockingExecutor(t *testing.T) *Executor {
	block := fn(func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return newExecutor(t, WithLimits(Limits{Deadline: time.Minute}),
		WithCapability(Capability{Name: "wait", Func: block}),
		WithCapability(Capability{Name: "await_", Async: true, Func: block}))
}

func TestCancelDuringHostCall(t *testing.T) {
	t.Parallel()
	e := blockingExecutor(t)
	for _, script := range []string{"wait({})", "await await_({})", "try { wait({}) } catch (e) {} return 'escaped'"} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := e.Run(ctx, script)
		assert.True(t, errors.Is(err, context.Canceled), "Run(%q) = %v", script, err)
		assert.Equal(t, KindInternal, execErr(t, err).Kind)
		cancel()
	}
}

// TestHostCallsAndTheDeadline: a handler blocking on its context returns at
// the deadline; one that returns late makes the run a timeout; an async one
// that ignores its context is abandoned.
func TestHostCallsAndTheDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	e := newExecutor(t, WithLimits(Limits{Deadline: 50 * time.Millisecond}),
		WithCapability(Capability{Name: "block", Func: fn(func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})}),
		WithCapability(Capability{Name: "late", Func: fn(func(context.Context, json.RawMessage) (any, error) {
			time.Sleep(80 * time.Millisecond)
			return "too late", nil
		})}),
		WithCapability(Capability{Name: "deaf", Async: true, Func: fn(func(context.Context, json.RawMessage) (any, error) {
			<-release
			return nil, nil
		})}))
	for _, script := range []string{
		"block({})",
		"try { block({}) } catch (e) {} return 'escaped'",
		"const v = late({}); return v",
		"try { late({}) } catch (e) {} return 'escaped'",
		"await deaf({})",
		"await Promise.all([deaf({}), deaf({})])",
	} {
		start := time.Now()
		_, err := e.Run(context.Background(), script)
		assert.Equal(t, `{"kind":"timeout","name":"run_js","deadline_ms":50}`, execErr(t, err).LLMJSON(), "Run(%q)", script)
		assert.Less(t, time.Since(start), time.Second, "Run(%q) must end near its deadline", script)
	}
}

func TestTimers(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 2 * time.Second}))
	tests := []struct{ name, script, want string }{
		{"order and args", `
			const out = []
			setTimeout(() => out.push('c'), 20)
			setTimeout((x, y) => out.push(x + y), 5, 'a', 'b')
			setTimeout(() => out.push('zero'))
			await new Promise((r) => setTimeout(r, 30))
			return out`, `["zero","ab","c"]`},
		{"same delay keeps call order", `
			const out = []
			for (let i = 0; i < 5; i++) setTimeout(() => out.push(i), 1)
			await new Promise((r) => setTimeout(r, 5))
			return out`, `[0,1,2,3,4]`},
		{"clearTimeout", `
			let fired = false
			const id = setTimeout(() => { fired = true }, 1)
			clearTimeout(id)
			clearTimeout(12345); clearTimeout('x'); clearTimeout()
			await new Promise((r) => setTimeout(r, 10))
			return fired`, `false`},
		{"interval", `
			let n = 0
			await new Promise((resolve) => {
				const id = setInterval(() => { if (++n === 3) { clearInterval(id); resolve() } }, 1)
			})
			return n`, `3`},
		{"microtasks run between timers", `
			const out = []
			setTimeout(() => { out.push('t1'); Promise.resolve().then(() => out.push('m1')) }, 1)
			setTimeout(() => out.push('t2'), 1)
			await new Promise((r) => setTimeout(r, 5))
			return out`, `["t1","m1","t2"]`},
		{"ids are numbers", "const a = setTimeout(() => {}); const b = setInterval(() => {}); clearInterval(b); clearTimeout(a); return [typeof a, a < b]", `["number",true]`},
		{"non-function", "try { setTimeout('code', 1) } catch (e) { return e.message }", `"setTimeout expects a function"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.Run(context.Background(), tt.script)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(res.Value))
		})
	}
}

func TestTimersAndTheEnd(t *testing.T) {
	t.Parallel()
	var marks atomic.Int32
	mark := Capability{Name: "mark", Func: fn(func(context.Context, json.RawMessage) (any, error) {
		marks.Add(1)
		return nil, nil
	})}
	e := newExecutor(t, WithLimits(Limits{Deadline: 100 * time.Millisecond}), WithCapability(mark))
	roomy := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}), WithCapability(mark))
	// A timer set for after the return never fires.
	res, err := roomy.Run(context.Background(), "setTimeout(() => mark({}), 0); setInterval(() => mark({}), 1); return 1")
	require.NoError(t, err)
	assert.Equal(t, "1", string(res.Value))
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, int32(0), marks.Load())

	// Outstanding timers keep a pending program alive until the deadline.
	_, err = e.Run(context.Background(), "setInterval(() => {}, 1); await new Promise(() => {})")
	assert.Equal(t, KindTimeout, execErr(t, err).Kind)
	_, err = e.Run(context.Background(), "for (;;) await new Promise((r) => setTimeout(r, 0))")
	assert.Equal(t, KindTimeout, execErr(t, err).Kind)
	// Nothing outstanding: the promise can never settle.
	_, err = e.Run(context.Background(), "const id = setTimeout(() => {}, 10); clearTimeout(id); await new Promise(() => {})")
	assert.Equal(t, KindPendingPromise, execErr(t, err).Kind)

	// A timer callback that throws is logged, not fatal.
	res, err = roomy.Run(context.Background(), "setTimeout(() => { throw new TypeError('in timer') }, 0); await new Promise((r) => setTimeout(r, 2)); return 'ok'")
	require.NoError(t, err)
	assert.Equal(t, `"ok"`, string(res.Value))
	require.Len(t, res.Logs, 1)
	assert.True(t, strings.HasPrefix(res.Logs[0], "[error] Uncaught TypeError: in timer\n    at "), res.Logs[0])
}

// TestAddCapabilityDuringRun: a new capability reaches the runs that start
// afterwards, never one in progress.
func TestAddCapabilityDuringRun(t *testing.T) {
	t.Parallel()
	inside, resume := make(chan struct{}), make(chan struct{})
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}), WithCapability(Capability{Name: "pause",
		Func: fn(func(context.Context, json.RawMessage) (any, error) {
			close(inside)
			<-resume
			return nil, nil
		})}))
	done := make(chan string)
	go func() {
		res, err := e.Run(context.Background(), "pause({}); return typeof later")
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(res.Value)
	}()
	<-inside
	require.NoError(t, e.AddCapability(Capability{Name: "later", Func: fn(func(context.Context, json.RawMessage) (any, error) { return "new", nil })}))
	close(resume)
	assert.Equal(t, `"undefined"`, <-done)
	res, err := e.Run(context.Background(), "return later()")
	require.NoError(t, err)
	assert.Equal(t, `"new"`, string(res.Value))
}

func TestCapabilityPayloadBound(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Payload: 1024}), WithCapability(echo()))
	res, err := e.Run(context.Background(), "try { echo({s: 'x'.repeat(2000)}) } catch (e) { return e.name + ': ' + e.message }")
	require.NoError(t, err)
	assert.Equal(t, `"RangeError: echo: the arguments are 2008 bytes of JSON, over the payload limit of 1024 bytes"`, string(res.Value))
}

func TestCloseDuringAsyncWait(t *testing.T) {
	t.Parallel()
	e, err := New(WithLimits(Limits{Deadline: time.Minute}), WithCapability(Capability{Name: "wait", Async: true,
		Func: fn(func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})}))
	require.NoError(t, err)
	done := make(chan error)
	go func() {
		_, err := e.Run(context.Background(), "await wait({})")
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, e.Close())
	assert.True(t, errors.Is(<-done, ErrClosed))
	assert.True(t, errors.Is(e.AddCapability(echo()), ErrClosed))
}

func TestRegisterErrorJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  RegisterError
		want string
	}{
		{RegisterError{Stage: StageInvalidName, Name: "a b", Reason: "bad"}, `{"stage":"invalid_name","name":"a b","reason":"bad"}`},
		{RegisterError{Stage: StageDuplicate, Name: "add"}, `{"stage":"duplicate","name":"add"}`},
		{RegisterError{Stage: StageInvalidSchema, Reason: "no"}, `{"stage":"invalid_schema","reason":"no"}`},
		{RegisterError{Stage: StageInvalidCapability, Name: "x", Reason: "r"}, `{"stage":"invalid_capability","name":"x","reason":"r"}`},
		{RegisterError{Stage: StageCompile, Message: "SyntaxError: x"}, `{"stage":"compile","message":"SyntaxError: x"}`},
		{RegisterError{Stage: StageNotAFunction, EvaluatedType: "number"}, `{"stage":"not_a_function","evaluated_type":"number"}`},
		{RegisterError{Stage: StageSelfTest, Message: "returned false"}, `{"stage":"self_test","message":"returned false"}`},
		{RegisterError{Stage: StageExecution, Exec: &ExecError{Kind: KindTimeout, Name: "add", DeadlineMS: 500}},
			`{"stage":"execution","kind":"timeout","name":"add","deadline_ms":500}`},
		{RegisterError{Stage: StageExecution, Exec: &ExecError{Kind: KindMemoryExceeded, Name: "add", LimitBytes: 10}},
			`{"stage":"execution","kind":"memory_exceeded","name":"add","limit_bytes":10}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(&tt.err)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(got))
		assert.Equal(t, tt.want, tt.err.LLMJSON())
		var back RegisterError
		require.NoError(t, json.Unmarshal(got, &back))
		assert.Equal(t, tt.err, back)
		assert.True(t, strings.HasPrefix(tt.err.Error(), "codemode: register"), tt.err.Error())
	}
	timeout := &RegisterError{Stage: StageExecution, Exec: &ExecError{Kind: KindTimeout, Name: "add", DeadlineMS: 5}}
	assert.True(t, errors.Is(timeout, ErrTimeout))
}

// TestSyncCallPastDeadline: a synchronous call that returns after the
// deadline ends the run in a timeout, whatever it answered and whatever
// the script does with the answer.
func TestSyncCallPastDeadline(t *testing.T) {
	t.Parallel()
	slow := func(answer error) Capability {
		return Capability{Name: "slow", Func: fn(func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done() // the deadline, which the call's context carries
			return 1, answer
		})}
	}
	for _, answer := range []error{nil, errors.New("gave up")} {
		e := newExecutor(t, WithLimits(Limits{Deadline: 30 * time.Millisecond}), WithCapability(slow(answer)))
		for _, script := range []string{
			"return slow({})",
			"try { slow({}) } catch {} return 1",
			"let v; try { v = slow({}) } finally { return 2 }",
		} {
			_, err := e.Run(context.Background(), script)
			assert.Equal(t, KindTimeout, execErr(t, err).Kind, "%s (answer %v)", script, answer)
		}
	}
}

// TestAppendJSON: a result's JSON, written directly for the common scalars,
// decodes to what encoding/json's would; what encoding/json refuses is
// refused.
func TestAppendJSON(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, true, false, 0, -1, math.MaxInt64, math.MinInt64, int32(math.MinInt32), uint64(math.MaxUint64),
		0.1, math.Copysign(0, -1), 1e21, 1e-7, 123456.789, 5e-324, math.MaxFloat64, -math.SmallestNonzeroFloat64, float64(1 << 53),
		"", "plain ascii ~", `a "quote" and \ backslash`, "tab\there", "é中𝄞", "<b>&amp;</b>", "\x7f", "\xff\xfe",
		"\u2028", json.RawMessage(`{"raw": [1, 2]}`), json.RawMessage(nil), map[string]any{"k": []int{1}},
		struct{ A int }{1}, float32(0.1), uint8(7),
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		require.NoError(t, err, "%#v", v)
		got, err := appendJSON([]byte("prefix"), v)
		require.NoError(t, err, "%#v", v)
		require.True(t, bytes.HasPrefix(got, []byte("prefix")))
		got = got[len("prefix"):]
		require.True(t, json.Valid(got), "%#v gave %s", v, got)
		var a, b any
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(got, &b))
		assert.Equal(t, a, b, "%#v: %s against %s", v, got, want)
	}
	for _, v := range []any{math.NaN(), math.Inf(1), math.Inf(-1), make(chan int)} {
		_, err := appendJSON(nil, v)
		assert.Error(t, err, "%#v", v)
	}
}

// TestHostileArguments: arguments no JSON can carry, or that try to make
// sending them expensive, end in the right error and leave the executor
// working.
func TestHostileArguments(t *testing.T) {
	t.Parallel()
	limits := memoryLimits(8 << 20)
	limits.Payload = 4096
	e := newExecutor(t, WithLimits(limits), WithCapability(echo()))
	timed := newExecutor(t, WithLimits(deadlineLimits(500*time.Millisecond)), WithCapability(echo()))
	tests := []struct {
		name, script string
		kind         ErrorKind
		message      string // a prefix of the js error's message
	}{
		{"cycle", "const o = {}; o.o = o; echo({o})", KindJS, "TypeError: circular reference"},
		{"deep nesting", "let a = []; for (let i = 0; i < 20000; i++) a = [a]; echo({a})", KindJS, "RangeError"},
		{"BigInt", "echo({n: 1n})", KindJS, "TypeError: BigInt are forbidden in JSON.stringify"},
		{"throwing getter", "echo({get g() { throw new Error('no') }})", KindJS, "Error: no"},
		{"throwing toJSON", "echo({x: {toJSON() { throw new TypeError('nope') }}})", KindJS, "TypeError: nope"},
		{"sparse array", "const a = []; a.length = 2 ** 32 - 1; echo({a})", KindMemoryExceeded, ""},
		{"over the payload", "echo({a: Array.from({length: 5000}, (_, i) => i)})", KindJS, "RangeError: echo: the arguments are 23897 bytes of JSON, over the payload limit of 4096 bytes"},
		{"getter that loops", "echo({get g() { for (;;) {} }})", KindTimeout, ""},
	}
	for _, tt := range tests {
		e := e
		if tt.kind == KindTimeout {
			e = timed
		}
		_, err := e.Run(context.Background(), tt.script)
		ee := execErr(t, err)
		assert.Equal(t, tt.kind, ee.Kind, "%s: %s", tt.name, ee.LLMJSON())
		assert.True(t, strings.HasPrefix(ee.Message, tt.message), "%s: %s", tt.name, ee.Message)
		res, err := e.Run(context.Background(), "return echo({ok: [1, 'two', null]})")
		require.NoError(t, err, "after %s", tt.name)
		assert.Equal(t, `{"ok":[1,"two",null]}`, string(res.Value))
	}
}

// TestCallerDeadline: the caller's context deadline is the run's when it
// comes first: a timeout (not internal) whose deadline_ms is the budget
// the run had, in Run, Execute and Call, whatever the run was doing.
func TestCallerDeadline(t *testing.T) {
	t.Parallel()
	e := blockingExecutor(t)
	_, err := e.Register(context.Background(), ToolSource{Name: "spin", Source: "() => { for (;;) {} }"})
	require.NoError(t, err)
	const budget = 60 * time.Millisecond
	check := func(t *testing.T, err error, name string) {
		t.Helper()
		ee := execErr(t, err)
		assert.Equal(t, KindTimeout, ee.Kind, ee.LLMJSON())
		assert.Equal(t, name, ee.Name)
		// 60 unless the machine took over 1 ms between WithTimeout and the call.
		assert.True(t, ee.DeadlineMS > 50 && ee.DeadlineMS <= 60, "deadline_ms %d", ee.DeadlineMS)
		assert.ErrorIs(t, err, ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	}
	for _, script := range []string{"while (true) {}", "wait({})", "await await_({})", "try { wait({}) } catch {} return 1",
		"await new Promise(r => setTimeout(r, 60000))"} {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			_, err := e.Run(ctx, script)
			check(t, err, RunJSToolName)
		})
	}
	t.Run("execute", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		res := e.Execute(ctx, Request{Code: "async () => { for (;;) {} }"})
		check(t, res.Err, ExecuteName)
		assert.Equal(t, fmt.Sprintf("The program timed out after %dms.", res.Err.DeadlineMS), res.Error)
	})
	t.Run("call", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		_, err := e.Call(ctx, "spin", json.RawMessage(`{}`))
		check(t, err, "spin")
	})
	t.Run("already passed", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
		defer cancel()
		_, err := e.Run(ctx, "return 1")
		assert.Equal(t, `{"kind":"timeout","name":"run_js","deadline_ms":0}`, execErr(t, err).LLMJSON())
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("later than the limit", func(t *testing.T) {
		t.Parallel()
		e := newExecutor(t, WithLimits(Limits{Deadline: 50 * time.Millisecond}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		_, err := e.Run(ctx, "for (;;) {}")
		assert.Equal(t, `{"kind":"timeout","name":"run_js","deadline_ms":50}`, execErr(t, err).LLMJSON())
	})
}

// TestCancelIsSticky: once the caller cancelled, the outcome is the
// cancellation, even when a host call fails because of it and the script
// catches that failure and returns normally. The handlers here cancel the
// caller's context themselves and fail at once, so the failure is ready
// as soon as the cancellation is.
func TestCancelIsSticky(t *testing.T) {
	t.Parallel()
	var cancelCaller atomic.Pointer[context.CancelFunc]
	fail := func() error {
		(*cancelCaller.Load())()
		return errors.New("the caller went away")
	}
	e := newExecutor(t, WithLimits(Limits{Deadline: time.Minute}),
		WithCapability(Capability{Name: "await_", Async: true, Func: fn(func(context.Context, json.RawMessage) (any, error) {
			return nil, fail()
		})}),
		WithCapability(Capability{Name: "wait", Func: fn(func(context.Context, json.RawMessage) (any, error) {
			return nil, fail()
		})}))
	_, err := e.Register(context.Background(), ToolSource{Name: "waits",
		Source: "async () => { try { await await_({}) } catch (e) { return 'caught: ' + e.message } }"})
	require.NoError(t, err)
	dispatch := func(context.Context, string, string, string) (string, error) { return "", fail() }
	cancelled := func(do func(ctx context.Context) error) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancelCaller.Store(&cancel)
		return do(ctx)
	}
	for i := range 30 {
		err := cancelled(func(ctx context.Context) error {
			return e.Execute(ctx, Request{Code: "async () => { try { await store.x() } catch (e) { return 'caught: ' + e.message } }",
				Providers: []Provider{{Name: "store"}}, Dispatch: dispatch}).Err
		})
		ee := execErr(t, err)
		assert.Equal(t, KindInternal, ee.Kind, "Execute, try %d: %s", i, ee.LLMJSON())
		assert.ErrorIs(t, err, context.Canceled)
		for _, script := range []string{
			"try { await await_({}) } catch (e) { return 'caught: ' + e.message }",
			"try { wait({}) } catch (e) { return 'caught: ' + e.message }",
		} {
			err = cancelled(func(ctx context.Context) error {
				_, err := e.Run(ctx, script)
				return err
			})
			assert.ErrorIs(t, err, context.Canceled, "Run(%q), try %d: %v", script, i, err)
		}
		err = cancelled(func(ctx context.Context) error {
			_, err := e.Call(ctx, "waits", json.RawMessage(`{}`))
			return err
		})
		assert.ErrorIs(t, err, context.Canceled, "Call, try %d: %v", i, err)
	}
	_, err = e.Run(context.Background(), "return 1")
	require.NoError(t, err, "the executor serves normally afterwards")
}
