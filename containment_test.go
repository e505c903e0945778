package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode/internal/hostile"
	"github.com/codemode-go/codemode/internal/jspos"
)

// TestHostileSourcesEndAtOnce: the sources that once ended the process (a
// Go stack overflow in the parser codemode reads them with) or held a core
// for minutes come back with an outcome of their own through Run, Execute
// and Register: never internal, never the deadline (10 s, far past what
// each takes), and a source past the bounds of what codemode reads says
// which bound in its error.
func TestHostileSourcesEndAtOnce(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}))
	ctx := context.Background()
	for name, src := range hostile.Sources() {
		_, err := e.Run(ctx, src)
		if err != nil {
			ee := execErr(t, err)
			assert.Contains(t, []ErrorKind{KindJS, KindMemoryExceeded}, ee.Kind, "Run(%s) = %s", name, ee.LLMJSON())
		}
		res := e.Execute(ctx, Request{Code: src})
		if res.Err != nil {
			assert.Contains(t, []ErrorKind{KindJS, KindMemoryExceeded}, res.Err.Kind, "Execute(%s) = %s", name, res.Error)
		}
		_, err = e.Register(ctx, ToolSource{Name: "t", Source: src})
		var re *RegisterError
		require.ErrorAs(t, err, &re, "Register(%s)", name)
		if re.Stage == StageExecution {
			assert.NotEqual(t, KindTimeout, re.Exec.Kind, "Register(%s) = %s", name, re.LLMJSON())
			assert.NotEqual(t, KindInternal, re.Exec.Kind, "Register(%s) = %s", name, re.LLMJSON())
		}
	}
	_, err := e.Run(ctx, hostile.Sources()["labels"])
	assert.Contains(t, execErr(t, err).Message, "codemode compiled the source without reading it first: it nests more than 1024 levels deep")
}

// TestPreparationCountsAgainstTheDeadline: a large source is prepared
// under its run's deadline and context. A run whose deadline passes while
// its source is prepared times out; one whose context ends is cancelled.
func TestPreparationCountsAgainstTheDeadline(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: time.Nanosecond}))
	big := strings.Repeat("var a = [1, 2, 3].map((x) => x * 2);\n", 20000) + "return 1"
	_, err := e.Run(context.Background(), big)
	assert.Equal(t, KindTimeout, execErr(t, err).Kind)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e = newExecutor(t, WithLimits(Limits{Deadline: time.Minute}))
	_, err = e.Run(ctx, big+"\n// another source")
	assert.ErrorIs(t, err, context.Canceled)
	// With time, the same source runs.
	res, err := e.Run(context.Background(), big)
	require.NoError(t, err)
	assert.Equal(t, "1", string(res.Value))
}

// TestGuardsHandNothingOver: what a script puts on a prototype takes no
// part in handing the guards' slow paths their intrinsics: a setter on
// Object.prototype.sort receives nothing (once it received the engine's
// unguarded sort, and with it a way past the deadline), an accessor on
// Array.prototype[3] does not receive Reflect.set, and one on
// Array.prototype[0] cannot make the slow paths call the script's function
// as Reflect.apply.
func TestGuardsHandNothingOver(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}))
	tests := []struct{ script, want string }{
		{`let orig
Object.defineProperty(Object.prototype, "sort", { set(v) { orig = v }, configurable: true })
try { [].concat.call(1) } catch (e) {}
delete Object.prototype.sort
return typeof orig`, `"undefined"`},
		{`let got
Object.defineProperty(Array.prototype, 3, { set(v) { got = v }, configurable: true })
const r = [].concat.call({ length: 2, 0: 'a' }, 3)
delete Array.prototype[3]
return [typeof got, r.length]`, `["undefined",2]`},
		{`let calls = 0
Object.defineProperty(Array.prototype, 0, { get() { calls++; return () => 'hijacked' }, set(v) {}, configurable: true })
const r = [].concat.call(1, 2)
delete Array.prototype[0]
return [calls, r.length]`, `[0,2]`},
		// Every name the slow paths and the web globals are handed.
		{`const seen = []
for (const k of ['originals', 'intrinsics', 'isConstructor', 'isRegExp', 'now', 'fill', 'fetch', 'dispatch', 'fail', 'typed']) {
	Object.defineProperty(Object.prototype, k, { set(v) { seen.push(k) }, get() { return undefined }, configurable: true })
}
[].concat.call(1); new URL('https://a.test/'); performance.now(); crypto.randomUUID()
return seen`, `[]`},
	}
	for _, tt := range tests {
		res, err := e.Run(context.Background(), tt.script)
		require.NoError(t, err, "Run(%q)", tt.script)
		assert.Equal(t, tt.want, string(res.Value), "Run(%q)", tt.script)
	}
	// And so the original cannot be called past the deadline.
	e = newExecutor(t, WithLimits(Limits{Deadline: 200 * time.Millisecond}))
	_, err := e.Run(context.Background(), `let orig
Object.defineProperty(Object.prototype, "sort", { set(v) { orig = v }, configurable: true })
try { [].concat.call(1) } catch (e) {}
delete Object.prototype.sort
return orig.call({ length: 2 ** 32 - 1 })`)
	assert.Equal(t, KindJS, execErr(t, err).Kind, "TypeError: orig is undefined")
}

// TestCyclicResultsAreErrors: a handler's value that refers to itself (a
// map holding itself, a pointer to an interface holding the pointer) is
// an error the script can catch, not a Go stack overflow: through a
// capability, a typed Func, a dispatch's answer and StringifyForDispatch.
func TestCyclicResultsAreErrors(t *testing.T) {
	t.Parallel()
	m := map[string]any{"x": []byte("b")}
	m["self"] = m
	var p any
	p = &p
	type node struct {
		Next *node
		Data any
	}
	loop := &node{}
	loop.Next = loop
	values := map[string]any{"map": m, "pointer": p, "struct": loop, "deep": deep(2 * maxValueDepth)}
	var opts []Option
	for name, v := range values {
		opts = append(opts, WithCapability(Capability{Name: name, Func: func(context.Context, json.RawMessage) (any, error) { return v, nil }}))
	}
	type box struct{ V any } // a Func's result type cannot refer to itself (no schema), but may hold anything
	opts = append(opts, WithCapability(Func("typed", "", func(context.Context, struct{}) (box, error) { return box{V: p}, nil })))
	e := newExecutor(t, opts...)
	for _, name := range []string{"map", "pointer", "struct", "deep", "typed"} {
		res, err := e.Run(context.Background(), "try { "+name+"({}); return 'no error' } catch (e) { return e.message }")
		require.NoError(t, err, name)
		assert.Contains(t, string(res.Value), "json: unsupported value", name)
	}
	for name, v := range values {
		_, err := StringifyForDispatch(v)
		var ne *errNesting
		assert.True(t, errors.As(err, &ne), "StringifyForDispatch(%s): %v", name, err)
	}
	dispatch := EnvelopeDispatch(NewLatch(), func(context.Context, string, string, string) (any, error) { return m, nil })
	res := e.Execute(context.Background(), Request{Code: "async () => { try { await p.t(); return 'no error' } catch (e) { return e.message } }",
		Providers: []Provider{{Name: "p", Tools: []string{"t"}}}, Dispatch: dispatch})
	require.Empty(t, res.Error)
	assert.Contains(t, string(res.Result), "json: unsupported value")
	// A value that is merely shared is no cycle.
	shared := []any{"s"}
	res2, err := StringifyForDispatch(map[string]any{"a": shared, "b": shared})
	require.NoError(t, err)
	assert.Equal(t, `{"a":["s"],"b":["s"]}`, res2)
}

// deep is a value nested n levels (maps of any).
func deep(n int) any {
	var v any = 1
	for range n {
		v = map[string]any{"v": v}
	}
	return v
}

// TestDeadlineDecidesACall: once the run's deadline has passed, a call it
// ended is never delivered: the outcome is timeout, even for a script that
// catches the call's failure (it once saw "context deadline exceeded" and
// returned a value). A dispatch and a capability that wait on their
// context, a hundred runs each.
func TestDeadlineDecidesACall(t *testing.T) {
	t.Parallel()
	wait := func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	e := newExecutor(t, WithLimits(Limits{Deadline: 20 * time.Millisecond}),
		WithCapability(Capability{Name: "slow", Async: true, Func: wait}), WithCapability(Capability{Name: "slowSync", Func: wait}))
	dispatch := func(ctx context.Context, _, _, _ string) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}
	for range 100 {
		_, err := e.Run(context.Background(), "try { await slow({}) } catch (e) { return 'caught: ' + e.message }")
		assert.Equal(t, KindTimeout, execErr(t, err).Kind)
		_, err = e.Run(context.Background(), "try { slowSync({}) } catch (e) { return 'caught: ' + e.message }")
		assert.Equal(t, KindTimeout, execErr(t, err).Kind)
		res := e.Execute(context.Background(), Request{Code: "async () => { try { await p.t() } catch (e) { return 'caught' } }",
			Providers: []Provider{{Name: "p", Tools: []string{"t"}}}, Dispatch: dispatch})
		require.NotNil(t, res.Err, "Execute = %s", res.Result)
		assert.Equal(t, KindTimeout, res.Err.Kind)
	}
}

// TestLargeProgramsAreRead: a valid program past jspos.MaxCount tokens is
// read (the engine's parser vouches for it first): it gets its shape and
// its markers, and its errors their lines. The syntax check says what the
// engine's parser says.
func TestLargeProgramsAreRead(t *testing.T) {
	t.Parallel()
	src := strings.Repeat("var rows = [1, 2, 3].map((x) => ({ x, y: x * 2 })).filter((r) => r.y > 2);\n", 200) +
		"const u = {}\nu.address.city"
	require.Greater(t, jspos.CountTokens(src), jspos.MaxCount)
	in := instrument(src, jspos.Body, nil)
	assert.Equal(t, jspos.Statements, in.m.Form())
	assert.Positive(t, in.m.Markers())
	// 10 s: reading, instrumenting and compiling 200 lines took past the
	// default 500 ms under ASan in checked mode on a loaded machine.
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}))
	_, err := e.Run(context.Background(), src)
	assert.Equal(t, "TypeError: cannot read property 'city' of undefined\n    at <anonymous> (script.js:202:11)",
		execErr(t, err).Message)
	res, err := e.Run(context.Background(), "async () => {\n"+src[:len(src)-len("const u = {}\nu.address.city")]+"return rows.length }")
	require.NoError(t, err)
	assert.Equal(t, "2", string(res.Value), "an arrow past MaxCount is called")
	for script, want := range map[string]bool{"(async () => { return 1 })": true, "return 1": false, "1 +": false,
		"/a/u; `${1}`": true, strings.Repeat("(", 100000): false} {
		assert.Equal(t, want, syntaxOK(script), "syntaxOK(%.20q)", script)
	}
}
