package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dispatchCall is one call a recording dispatch saw.
type dispatchCall struct{ Provider, Tool, ArgsJSON string }

// recorder is a DispatchFunc answering {"result": null} that records calls.
type recorder struct {
	mu    sync.Mutex
	calls []dispatchCall
}

func (r *recorder) dispatch(_ context.Context, provider, tool, argsJSON string) (string, error) {
	r.mu.Lock()
	r.calls = append(r.calls, dispatchCall{provider, tool, argsJSON})
	r.mu.Unlock()
	return `{"result":null}`, nil
}

func (r *recorder) seen() []dispatchCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dispatchCall(nil), r.calls...)
}

// result asserts a successful Execute and returns its result JSON.
func result(t *testing.T, res ExecuteResult) string {
	t.Helper()
	require.Empty(t, res.Error)
	require.NotNil(t, res.Logs)
	return string(res.Result)
}

func TestProviderNames(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, name := range ReservedProviderNames {
		res := e.Execute(context.Background(), Request{Code: "async () => 1", Providers: []Provider{{Name: name}}})
		assert.Contains(t, res.Error, "is reserved", name)
	}
	bad := []string{"", "2x", "a b", "é", "a-b", "a.b"}
	for _, name := range bad {
		res := e.Execute(context.Background(), Request{Code: "async () => 1", Providers: []Provider{{Name: name}}})
		assert.Contains(t, res.Error, "must be ASCII letters", name)
	}
	for _, name := range []string{"async", "await", "let", "static", "arguments", "eval", "yield", "enum", "implements"} {
		res := e.Execute(context.Background(), Request{Code: "async () => 1", Providers: []Provider{{Name: name}}})
		assert.Contains(t, res.Error, "on the list this executor refuses", name)
	}
	res := e.Execute(context.Background(), Request{Code: "async () => 1", Providers: []Provider{{Name: "__codemode_x"}}})
	assert.Contains(t, res.Error, "is reserved")
	// Names outside every rule work, even ones that shadow globals.
	for _, name := range []string{"$", "_", "a1", "JSON", "Object", "undefinedish", "store$2"} {
		res := e.Execute(context.Background(), Request{Code: "async () => typeof " + name, Providers: []Provider{{Name: name}}})
		assert.Equal(t, `"object"`, result(t, res), name)
	}
}

func TestEnvelope(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	tests := []struct {
		name   string
		answer string
		err    error
		want   string
	}{
		{"result", `{"result":{"a":[1,"x"]}}`, nil, `{"ok":{"a":[1,"x"]}}`},
		{"null result", `{"result":null}`, nil, `{"ok":null}`},
		{"no result", `{}`, nil, `{}`},
		{"another object", `{"value":1}`, nil, `{}`},
		{"falsy error", `{"error":"","result":2}`, nil, `{"ok":2}`},
		{"error", `{"error":"the row is locked"}`, nil, `{"caught":"the row is locked"}`},
		{"error beside a result", `{"error":"no","result":1}`, nil, `{"caught":"no"}`},
		{"json string", `"just a string"`, nil, `{"caught":"The dispatch answered outside the result envelope."}`},
		{"number", `42`, nil, `{"caught":"The dispatch answered outside the result envelope."}`},
		{"array", `[1]`, nil, `{"caught":"The dispatch answered outside the result envelope."}`},
		{"null", `null`, nil, `{"caught":"The dispatch answered outside the result envelope."}`},
		{"not json", `{result: 1`, nil, `{"caught":"The dispatch answered outside the result envelope."}`},
		{"empty", ``, nil, `{"caught":"The dispatch answered outside the result envelope."}`},
		{"go error", ``, errors.New("connection refused"), `{"caught":"connection refused"}`},
		{"tool not found", ``, ToolNotFoundError{Tool: "x"}, `{"caught":"Tool \"x\" not found"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := e.Execute(context.Background(), Request{
				Code: `async () => {
					try { return { ok: await store.x() } } catch (e) { return { caught: e.message, isError: e instanceof Error } }
				}`,
				Providers: []Provider{{Name: "store"}},
				Dispatch:  func(context.Context, string, string, string) (string, error) { return tt.answer, tt.err },
			})
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(result(t, res)), &got))
			if _, ok := got["caught"]; ok {
				assert.Equal(t, true, got["isError"])
				delete(got, "isError")
			}
			want, _ := json.Marshal(got)
			assert.JSONEq(t, tt.want, string(want))
		})
	}

	res := e.Execute(context.Background(), Request{
		Code:      `async () => { try { await store.anything() } catch (e) { return e.message } }`,
		Providers: []Provider{{Name: "store"}},
	})
	assert.Equal(t, `"Tool \"anything\" not found"`, result(t, res), "no Dispatch at all")
}

// TestEnvelopeOpenedInC holds the envelope's opening in C (bridge_host.c,
// open_envelope) to runtime.js's open, which still opens any answer naming
// the codec's binary or handle tag: each answer is given as it is (C) and
// with the tag added where it changes nothing the envelope means (JS),
// and a program reads both, plain and with getters on Object.prototype
// that an envelope without its own "error" or "result" reaches. Caught
// values, messages, error classes and an uncaught failure's attribution
// must be equal.
func TestEnvelopeOpenedInC(t *testing.T) {
	t.Parallel()
	const tag = `"__t":"__executor_binary_v1__"`
	tagged := func(answer string) string {
		switch {
		case answer == "{}":
			return "{" + tag + "}"
		case strings.HasPrefix(answer, "{"):
			return "{" + tag + "," + answer[1:]
		case answer == "[]":
			return `["__executor_binary_v1__"]`
		case strings.HasPrefix(answer, "["):
			return `["__executor_binary_v1__",` + answer[1:]
		case strings.HasPrefix(answer, `"`):
			return `"__executor_binary_v1__` + answer[1:]
		}
		panic(answer)
	}
	answers := []string{
		`{"result":{"a":[1,"x"]}}`, `{"result":null}`, `{}`, `{"value":1}`, `{"result":"\u0000nul"}`,
		`{"error":"","result":2}`, `{"error":0,"result":3}`, `{"error":false}`, `{"error":null,"result":"x"}`,
		`{"error":"the row is locked"}`, `{"error":"no","result":1}`, `{"error":true}`, `{"error":1.5}`,
		`{"error":{"code":7}}`, `{"error":[1,[2,3]]}`, `{"error":"\ud800 lone"}`, `{"error":"é ✓ 😀"}`,
		`{"__proto__":{"error":"inherited"},"result":1}`, `{"result":1,"result":2}`, `{"error":"a","error":""}`,
		`[1]`, `[]`, `"just a string"`, `{"result":1`, `{"error":"x"} trailing`,
	}
	e := newExecutor(t)
	dispatch := func(_ context.Context, _, tool, _ string) (string, error) {
		answer := answers[int(tool[1]-'a')]
		if tool[0] == 'j' {
			return tagged(answer), nil
		}
		return answer, nil
	}
	prototypes := map[string]string{
		"plain": ``,
		"getters": `Object.defineProperty(Object.prototype, 'error', {get() { return this.value === 1 ? 'from a getter' : undefined }, configurable: true});
			Object.defineProperty(Object.prototype, 'result', {get() { return 'inherited result' }, configurable: true});`,
		"throwing": `Object.defineProperty(Object.prototype, 'error', {get() { throw new RangeError('getter threw') }, configurable: true});`,
	}
	for name, setup := range prototypes {
		for i, answer := range answers {
			tool := string(rune('a' + i))
			code := `async () => {
				` + setup + `
				const read = async (call) => {
					try { return { ok: await call() } } catch (e) { return { caught: String(e && e.message), class: e && e.constructor && e.constructor.name } }
				};
				return { c: await read(() => store.c` + tool + `()), j: await read(() => store.j` + tool + `()) };
			}`
			res := e.Execute(context.Background(), Request{Code: code, Providers: []Provider{{Name: "store"}}, Dispatch: dispatch})
			require.Empty(t, res.Error, "%s %s", name, answer)
			var got struct{ C, J any }
			require.NoError(t, json.Unmarshal(res.Result, &got))
			assert.Equal(t, got.J, got.C, "%s: %s", name, answer)
			// Uncaught, a failure is attributed to the tool alike.
			outcome := func(prefix string) (string, string) {
				res := e.Execute(context.Background(), Request{
					Code:      `async () => { ` + setup + ` return await store.` + prefix + tool + `() }`,
					Providers: []Provider{{Name: "store"}}, Dispatch: dispatch})
				return string(res.Result), strings.ReplaceAll(res.Error, "store."+prefix+tool, "store.?")
			}
			cr, ce := outcome("c")
			jr, je := outcome("j")
			assert.Equal(t, jr, cr, "%s: %s", name, answer)
			assert.Equal(t, je, ce, "%s: %s", name, answer)
		}
	}
	// The C path's outcomes themselves, where the spec gives them.
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			const out = [];
			for (const t of ['cj', 'cn', 'co', 'cl']) { try { out.push(await store[t]()) } catch (e) { out.push(e.message) } }
			return out;
		}`,
		Providers: []Provider{{Name: "store"}}, Dispatch: dispatch})
	assert.Equal(t, `["the row is locked","[object Object]","1,2,3","true"]`, result(t, res))
}

// TestProviderCallKeepsRuntimeSemantics pins what a provider tool's call
// gave when runtime.js encoded its arguments and opened its answer (the
// outcomes below are the ones 5bdb59a gives, where no C was involved):
// answers that are not strict UTF-8 read as JS strings read them (each bad
// byte U+FFFD, an encoded surrogate kept), `${e}` of an error calls its
// toString, "error" is read twice on a failure and once otherwise, then
// once on an object result and never on a primitive, the call's promise
// resolves after the same number of microtask turns, and names that reach
// the payload bound do not move the argument's encoding out of the
// sandbox's memory.
func TestProviderCallKeepsRuntimeSemantics(t *testing.T) {
	t.Parallel()
	// The payload-bound case grows its argument's JSON to the memory
	// limit: a deadline no loaded or sanitized machine comes near.
	e := newExecutor(t, WithLimits(Limits{Deadline: 20 * time.Second}))
	const countThen = `let n = 0; Object.defineProperty(Object.prototype, 'then', {get() { n++; return undefined }, configurable: true});
		const r = await store.x(); delete Object.prototype.then; `
	tests := []struct{ name, answer, code, result, err string }{
		{"bad utf-8 result", "{\"result\":\"\xff\xfe\"}", `return [...(await store.x())].map(c => c.charCodeAt(0))`, `[65533,65533]`, ""},
		{"bad utf-8 error", "{\"error\":\"\xff\"}", `try { await store.x() } catch (e) { return [...e.message].map(c => c.charCodeAt(0)) }`, `[65533]`, ""},
		{"overlong", "{\"result\":\"\xc0\x80\"}", `return [...(await store.x())].map(c => c.charCodeAt(0))`, `[65533,65533]`, ""},
		{"encoded surrogate", "{\"result\":\"\xed\xa0\x80\"}", `return [...(await store.x())].map(c => c.charCodeAt(0))`, `[55296]`, ""},
		{"utf-8", "{\"result\":\"é✓😀\"}", `return [...(await store.x())].map(c => c.codePointAt(0))`, `[233,10003,128512]`, ""},
		{"toString throws", `{}`, `Object.defineProperty(Object.prototype, 'error', {get() { const e = new Error('msg'); e.toString = () => { throw new RangeError('tostr threw') }; return e }, configurable: true});
			try { await store.x(); return 'no' } catch (e) { return [e.constructor.name, e.message] }`, `["RangeError","tostr threw"]`, ""},
		{"error read twice on a failure", `{}`, `let n = 0; Object.defineProperty(Object.prototype, 'error', {get() { n++; return 'boom' }, configurable: true});
			try { await store.x() } catch (e) { delete Object.prototype.error; return [n, e.message] }`, `[2,"boom"]`, ""},
		{"error read once otherwise", `{"result":1}`, `let n = 0; Object.defineProperty(Object.prototype, 'error', {get() { n++; return undefined }, configurable: true});
			const r = await store.x(); delete Object.prototype.error; return [n, r]`, `[1,1]`, ""},
		{"then of an object", `{"result":{"a":1}}`, countThen + `return [n, r]`, `[1,{"a":1}]`, ""},
		{"then of a primitive", `{"result":5}`, countThen + `return [n, r]`, `[0,5]`, ""},
		{"then of a revived object", `{"result":{"b":{"__executor_binary_v1__":"Uint8Array","data":"AQI="}}}`, countThen + `return [n, [...r.b]]`, `[1,[1,2]]`, ""},
		{"microtask turns", `{"result":1}`, `const log = []; const p = store.x().then(() => log.push('tool'));
			Promise.resolve().then(() => log.push('a')).then(() => log.push('b')).then(() => log.push('c')).then(() => log.push('d'));
			await p; await null; await null; return log`, `["a","b","c","d","tool"]`, ""},
		{"names at the payload bound", `{"result":1}`, `const big = '\x01'.repeat(2e7); return await store['y'.repeat(1 << 20)](big)`,
			"", "The program exceeded the memory limit of 33554432 bytes."},
	}
	for _, tt := range tests {
		res := e.Execute(context.Background(), Request{Code: "async () => { " + tt.code + " }", Providers: []Provider{{Name: "store"}},
			Dispatch: func(context.Context, string, string, string) (string, error) { return tt.answer, nil }})
		assert.Equal(t, tt.err, res.Error, tt.name)
		assert.Equal(t, tt.result, string(res.Result), tt.name)
	}
}

// TestEnvelopeOpenKilled: a getter the opening reaches on Object.prototype
// that spins or grows ends the run at its limit, as any program code does.
func TestEnvelopeOpenKilled(t *testing.T) {
	t.Parallel()
	for getter, want := range map[string]string{
		"for (;;) {}": "The program timed out after 200ms.",
		"const a = []; for (;;) a.push(new Array(1e5))": "The program exceeded the memory limit of 33554432 bytes.",
	} {
		deadline := 200 * time.Millisecond
		if strings.Contains(want, "memory") {
			deadline = 20 * time.Second // room for a sanitized build to grow
		}
		e := newExecutor(t, WithLimits(Limits{Deadline: deadline}))
		res := e.Execute(context.Background(), Request{
			Code:      "async () => { Object.defineProperty(Object.prototype, 'error', {get() { " + getter + " }}); return await store.x() }",
			Providers: []Provider{{Name: "store"}},
			Dispatch:  func(context.Context, string, string, string) (string, error) { return `{}`, nil },
		})
		assert.Equal(t, want, res.Error, getter)
		assert.Nil(t, res.Result, getter)
	}
}

// TestProviderArgumentsMatchCodec holds a provider call's arguments, which
// C encodes (json_text, the codec's plain-data writer) where they are plain
// data, to the runtime's codec (stringifyForDispatch), which encodes the
// rest: each value sent as {x: v} and as {get x() {...}}, whose accessor
// sends the whole argument to the codec, must reach the dispatch as the
// same text, with the same logs (the corpus TestCodecPlainMatchesEngine
// holds results to: codecExprs).
func TestProviderArgumentsMatchCodec(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	exprs := codecExprs()
	type outcome struct {
		Args   string
		Result string
		Error  string
		Logs   []string
	}
	run := func(code string, object bool) outcome {
		var args string
		res := e.Execute(context.Background(), Request{Code: code, Providers: []Provider{{Name: "store", ObjectArgs: object}},
			Dispatch: func(_ context.Context, _, _, a string) (string, error) { args = a; return `{"result":1}`, nil }})
		return outcome{args, string(res.Result), res.Error, res.Logs}
	}
	for _, x := range exprs {
		for _, object := range []bool{false, true} {
			plain := run(fmt.Sprintf("async () => { const v = (%s); return await store.x({x: v}) }", x), object)
			codec := run(fmt.Sprintf("async () => { const v = (%s); return await store.x({get x() { return v }}) }", x), object)
			assert.Equal(t, codec, plain, "arguments %s (options object: %v)", x, object)
		}
	}
	// What a call sends when its payload has no JSON (an options object
	// that is a symbol): the text of undefined, as the reference's
	// template literal gives it.
	want := outcome{Args: "undefined", Result: "1", Logs: []string{}}
	assert.Equal(t, want, run("async () => await store.x(Symbol())", true))
	want.Args = "[null,1]"
	assert.Equal(t, want, run("async () => await store.x(Symbol(), 1)", false))
	want.Args = "{}"
	assert.Equal(t, want, run("async () => await store.x()", true))
}

func TestEnvelopeDispatch(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	latch := NewLatch()
	d := EnvelopeDispatch(latch, func(_ context.Context, provider, tool, argsJSON string) (any, error) {
		calls.Add(1)
		switch tool {
		case "raw":
			return json.RawMessage(`{"pre" : "encoded"}`), nil
		case "bytes":
			return map[string]any{"avatar": []byte{0xff, 0}, "list": [][]byte{{1}, nil}}, nil
		case "struct":
			return struct {
				Name  string `json:"name"`
				Photo []byte `json:"photo,omitempty"`
				Skip  string `json:"-"`
			}{Name: "ada", Photo: []byte("hi"), Skip: "x"}, nil
		case "fail":
			return nil, errors.New(`quote " and <tags>`)
		case "nothing":
			return nil, nil
		case "silent":
			return nil, errors.New("")
		case "unencodable":
			return make(chan int), nil
		}
		return nil, ToolNotFoundError{Tool: tool}
	})
	tests := []struct{ tool, want string }{
		{"raw", `{"result":{"pre" : "encoded"}}`},
		{"bytes", `{"result":{"avatar":{"__executor_binary_v1__":"Uint8Array","data":"/wA="},"list":[{"__executor_binary_v1__":"Uint8Array","data":"AQ=="},null]}}`},
		{"struct", `{"result":{"name":"ada","photo":{"__executor_binary_v1__":"Uint8Array","data":"aGk="}}}`},
		{"fail", `{"error":"quote \" and <tags>"}`},
		{"nothing", `{"result":null}`},
		{"silent", `{"error":"the tool failed"}`}, // "" would be falsy: a success
		{"missing", `{"error":"Tool \"missing\" not found"}`},
	}
	for _, tt := range tests {
		got, err := d(context.Background(), "store", tt.tool, "[]")
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, tt.tool)
	}
	got, err := d(context.Background(), "store", "unencodable", "[]")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got, `{"error":"the tool's result cannot be encoded: `), got)

	n := calls.Load()
	latch.Close()
	got, err = d(context.Background(), "store", "raw", "[]")
	require.NoError(t, err)
	assert.Equal(t, `{"error":"Execution has already completed."}`, got)
	assert.Equal(t, n, calls.Load(), "a closed latch never reaches the responder")
	assert.False(t, latch.Active())
	var zero Latch
	assert.True(t, zero.Active())
}

// TestLatchReadsAsTheCallLeaves: a Latch is read as of the moment a call
// left the sandbox, whenever its goroutine reaches the check.
func TestLatchReadsAsTheCallLeaves(t *testing.T) {
	t.Parallel()
	latch := NewLatch()
	closed := make(chan struct{})
	var ran sync.Map
	env := EnvelopeDispatch(latch, func(_ context.Context, _, tool, _ string) (any, error) {
		ran.Store(tool, true)
		if tool == "closer" {
			latch.Close()
			close(closed)
		}
		return tool, nil
	})
	aDone := make(chan string, 1)
	res := newExecutor(t).Execute(context.Background(), Request{
		Code: `async () => {
			store.early()                 // leaves before the latch closes
			await store.closer()          // closes it
			try { return await store.late() } catch (e) { return e.message }
		}`,
		Providers: []Provider{{Name: "store", Tools: []string{"early", "closer", "late"}}},
		Dispatch: func(ctx context.Context, provider, tool, argsJSON string) (string, error) {
			if tool != "early" {
				return env(ctx, provider, tool, argsJSON)
			}
			<-closed // reach the check only after Close
			answer, err := env(ctx, provider, tool, argsJSON)
			aDone <- answer
			return answer, err
		},
	})
	assert.Equal(t, `"Execution has already completed."`, result(t, res), "a call made after Close is refused")
	select {
	case answer := <-aDone:
		assert.Equal(t, `{"result":"early"}`, answer, "a call made before Close is admitted")
	case <-time.After(10 * time.Second):
		t.Fatal("the early call never reached the latch")
	}
	_, late := ran.Load("late")
	assert.False(t, late, "the late call never reaches the responder")
}

func TestCodec(t *testing.T) {
	t.Parallel()
	s, err := StringifyForDispatch(json.RawMessage(`{ "kept" :  "as is" }`))
	require.NoError(t, err)
	assert.Equal(t, `{ "kept" :  "as is" }`, s)
	s, err = StringifyForDispatch([]any{[]byte(nil), []byte{}, "<&>"})
	require.NoError(t, err)
	assert.Equal(t, `[null,{"__executor_binary_v1__":"Uint8Array","data":""},"<&>"]`, s)

	v, err := ParseForDispatch(`{"a":[{"__executor_binary_v1__":"Float32Array","data":"AACAPw=="}],"h":{"__executor_handle_v1__":3},"n":1.5}`)
	require.NoError(t, err)
	m := v.(map[string]any)
	assert.Equal(t, []any{[]byte{0, 0, 0x80, 0x3f}}, m["a"])
	assert.Equal(t, Handle{id: 3}, m["h"])
	assert.Equal(t, 1.5, m["n"])
	back, err := StringifyForDispatch(m["h"])
	require.NoError(t, err)
	assert.Equal(t, `{"__executor_handle_v1__":3}`, back)

	args, err := ParseDispatchArguments(`["ada",7,{"__executor_binary_v1__":"ArrayBuffer","data":"AQID"}]`)
	require.NoError(t, err)
	assert.Equal(t, []any{"ada", float64(7), []byte{1, 2, 3}}, args)
	args, err = ParseDispatchArguments(`"one"`)
	require.NoError(t, err)
	assert.Equal(t, []any{"one"}, args)
	_, err = ParseDispatchArguments(`{`)
	assert.Error(t, err)
	v, err = ParseForDispatch(`{"__executor_binary_v1__":"Uint8Array","data":"not base64!"}`)
	require.NoError(t, err)
	assert.IsType(t, map[string]any{}, v, "an envelope that does not decode stays an object")
}

// TestBinaryCodecInSandbox sends every binary type out and back.
func TestBinaryCodecInSandbox(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	var got sync.Map
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			const buf = new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]).buffer
			const values = {
				ArrayBuffer: buf,
				DataView: new DataView(buf, 2, 4),
				Int8Array: new Int8Array([-1, 2]),
				Uint8Array: new Uint8Array(buf, 1, 3),
				Uint8ClampedArray: new Uint8ClampedArray([300, -5]),
				Int16Array: new Int16Array([-2, 3]),
				Uint16Array: new Uint16Array([65535]),
				Int32Array: new Int32Array([-7]),
				Uint32Array: new Uint32Array([4294967295]),
				Float16Array: new Float16Array([1.5]),
				Float32Array: new Float32Array([1]),
				Float64Array: new Float64Array([-0.5]),
				BigInt64Array: new BigInt64Array([-1n]),
				BigUint64Array: new BigUint64Array([2n ** 64n - 1n]),
				subarray: new Uint16Array([1, 2, 3, 4]).subarray(1, 3),
			}
			const back = await store.echo({ values, nested: [[values.Int8Array]] })
			const out = {}
			for (const [k, v] of Object.entries(back.values)) {
				out[k] = [Object.prototype.toString.call(v), ArrayBuffer.isView(v) ? Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) : Array.from(new Uint8Array(v))]
			}
			out.nested = back.nested[0][0] instanceof Int8Array
			return out
		}`,
		Providers: []Provider{{Name: "store"}},
		Dispatch: func(_ context.Context, _, _, argsJSON string) (string, error) {
			got.Store("args", argsJSON)
			var args []json.RawMessage
			if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
				return "", err
			}
			return `{"result":` + string(args[0]) + `}`, nil
		},
	})
	var out map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(result(t, res)), &out))
	want := map[string]string{
		"ArrayBuffer":       `["[object ArrayBuffer]",[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]]`,
		"DataView":          `["[object DataView]",[2,3,4,5]]`,
		"Int8Array":         `["[object Int8Array]",[255,2]]`,
		"Uint8Array":        `["[object Uint8Array]",[1,2,3]]`,
		"Uint8ClampedArray": `["[object Uint8ClampedArray]",[255,0]]`,
		"Int16Array":        `["[object Int16Array]",[254,255,3,0]]`,
		"Uint16Array":       `["[object Uint16Array]",[255,255]]`,
		"Int32Array":        `["[object Int32Array]",[249,255,255,255]]`,
		"Uint32Array":       `["[object Uint32Array]",[255,255,255,255]]`,
		"Float16Array":      `["[object Float16Array]",[0,62]]`,
		"Float32Array":      `["[object Float32Array]",[0,0,128,63]]`,
		"Float64Array":      `["[object Float64Array]",[0,0,0,0,0,0,224,191]]`,
		"BigInt64Array":     `["[object BigInt64Array]",[255,255,255,255,255,255,255,255]]`,
		"BigUint64Array":    `["[object BigUint64Array]",[255,255,255,255,255,255,255,255]]`,
		"subarray":          `["[object Uint16Array]",[2,0,3,0]]`,
	}
	for k, w := range want {
		assert.JSONEq(t, w, string(out[k]), k)
	}
	assert.Equal(t, "true", string(out["nested"]))
	args, _ := got.Load("args")
	assert.Contains(t, args, `"Uint8Array":{"__executor_binary_v1__":"Uint8Array","data":"AQID"}`, "a view sends only its visible bytes")
	assert.Contains(t, args, `"subarray":{"__executor_binary_v1__":"Uint16Array","data":"AgADAA=="}`)

	// The result of a program goes through the codec too.
	res = e.Execute(context.Background(), Request{Code: "async () => ({ b: new Uint8Array([5, 6]) })"})
	assert.Equal(t, `{"b":{"__executor_binary_v1__":"Uint8Array","data":"BQY="}}`, result(t, res))
}

// TestCodecIsTamperProof: replacing built-ins does not change how calls
// are encoded.
func TestCodecIsTamperProof(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	rec := &recorder{}
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			JSON.stringify = () => '"hijacked"'
			JSON.parse = () => ({ result: 'hijacked' })
			Uint8Array.prototype.toBase64 = () => 'hijacked'
			Map.prototype.get = () => undefined
			Object.prototype.then = undefined
			return await store.x(new Uint8Array([1]))
		}`,
		Providers: []Provider{{Name: "store"}},
		Dispatch:  rec.dispatch,
	})
	assert.Equal(t, `null`, result(t, res))
	assert.Equal(t, []dispatchCall{{"store", "x", `[{"__executor_binary_v1__":"Uint8Array","data":"AQ=="}]`}}, rec.seen())
}

func TestProxyBehaviour(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	rec := &recorder{}
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			const r = {}
			r.symbol = store[Symbol.iterator]
			r.then = store.then
			r.toString = typeof store.toString
			store.own = 5
			r.own = store.own
			r.tool = typeof store.anything
			r.awaited = (await store) === store
			await store.toString()
			return r
		}`,
		Providers: []Provider{{Name: "store"}},
		Dispatch:  rec.dispatch,
	})
	assert.JSONEq(t, `{"own":5,"tool":"function","toString":"function","awaited":true}`, result(t, res))
	assert.Equal(t, []dispatchCall{{"store", "toString", "[]"}}, rec.seen())
}

func TestPayloadBound(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Payload: 200}))
	rec := &recorder{}
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			try { await store.big('x'.repeat(300)) } catch (e) { return e.message }
		}`,
		Providers: []Provider{{Name: "store"}},
		Dispatch:  rec.dispatch,
	})
	assert.Equal(t, `"The tool call is 312 bytes (provider, tool and arguments), over the payload limit of 200 bytes; it was not delivered."`, result(t, res))
	assert.Empty(t, rec.seen(), "the call is never delivered")

	res = e.Execute(context.Background(), Request{Code: "async () => 'y'.repeat(300)"})
	assert.Equal(t, "RangeError: the result is 302 bytes of JSON, over the payload limit of 200 bytes", res.Error)
	require.NotNil(t, res.Err)
	assert.Equal(t, KindJS, res.Err.Kind)

	// The dispatch's answer is not measured; a program may return less.
	res = e.Execute(context.Background(), Request{
		Code:      "async () => (await store.x()).length",
		Providers: []Provider{{Name: "store"}},
		Dispatch: func(context.Context, string, string, string) (string, error) {
			return `{"result":"` + strings.Repeat("z", 500) + `"}`, nil
		},
	})
	assert.Equal(t, `500`, result(t, res))
}

func TestExecuteFailures(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(memoryLimits(4<<20)))
	timed := newExecutor(t, WithLimits(deadlineLimits(100*time.Millisecond)))
	res := timed.Execute(context.Background(), Request{Code: "async () => { for (;;) {} }"})
	assert.Equal(t, "The program timed out after 100ms.", res.Error)
	tests := []struct{ code, want string }{
		{"async () => { console.log('before'); throw new TypeError('bad') }", "TypeError: bad\n    at <anonymous> (program.js:1:48)"},
		{"async () => {\n  null.x\n}", "TypeError: cannot read property 'x' of null\n    at <anonymous> (program.js:2:8)"},
		{"async () => { let }", "SyntaxError: variable name expected\n    at program.js:1:1"},
		{"async () => { const a = []; for (;;) a.push('x'.repeat(100)) }", "The program exceeded the memory limit of 4194304 bytes."},
		{"async () => new Promise(() => {})", "The program's promise can never settle: nothing it waits on is outstanding."},
		{"async () => 1 });(async () => { return 2", "SyntaxError: Unexpected token '}'\n    at program.js:1:15"},
		{"async () => 1;", ""},
	}
	for _, tt := range tests {
		res := e.Execute(context.Background(), Request{Code: tt.code})
		assert.Equal(t, tt.want, res.Error, "Execute(%q)", tt.code)
		assert.NotNil(t, res.Logs)
	}
	res = e.Execute(context.Background(), Request{Code: "async () => { console.log('kept'); throw new Error('x') }"})
	assert.Equal(t, []string{"kept"}, res.Logs, "logs come back with a failure")

	require.NoError(t, e.Close())
	res = e.Execute(context.Background(), Request{Code: "async () => 1"})
	assert.Equal(t, "codemode: execute: codemode: executor closed", res.Error)
	assert.True(t, errors.Is(res.Err, ErrClosed))
}

func TestFireAndForget(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 2 * time.Second}))
	var entered, finished atomic.Int32
	release := make(chan struct{})
	dispatch := func(ctx context.Context, provider, tool, argsJSON string) (string, error) {
		entered.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		finished.Add(1)
		return `{"result":"late"}`, nil
	}
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			store.a(); store.b()
			setTimeout(() => store.never(), 50)
			return 'early'
		}`,
		Providers: []Provider{{Name: "store"}},
		Dispatch:  dispatch,
	})
	assert.Equal(t, `"early"`, result(t, res))
	// Execute returns once both calls are handed to their handlers (a
	// goroutine each, past the point of no return); the handlers' first
	// statements may run a moment later.
	assert.Eventually(t, func() bool { return entered.Load() == 2 }, 5*time.Second, time.Millisecond,
		"both calls reach the dispatch")
	close(release)
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, int32(2), entered.Load(), "a timer set for after the return never fires")
	assert.Equal(t, int32(2), finished.Load(), "an un-awaited call keeps running after the run")

	// A call made after the program settled, by a job still queued, meets
	// the completion text and never reaches the dispatch.
	rec := &recorder{}
	res = e.Execute(context.Background(), Request{
		Code: `async () => {
			globalThis.late = (async () => { await null; await null; try { await store.after() } catch (e) { console.log(e.message) } })()
			return 'settled'
		}`,
		Providers: []Provider{{Name: "store"}},
		Dispatch:  rec.dispatch,
	})
	assert.Equal(t, `"settled"`, result(t, res))
	assert.Empty(t, rec.seen())
}

// TestDispatchContextEnds: the context a provider call is served with ends
// with the run once no provider call is in its handler, long before the
// deadline (left to the deadline, every run's context and timer stayed
// live until then); a call the program did not await keeps it until the
// last such call returns.
func TestDispatchContextEnds(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: time.Minute}))
	var served context.Context
	res := e.Execute(context.Background(), Request{
		Code:      "async () => (await store.x()).id",
		Providers: []Provider{{Name: "store"}},
		Dispatch: func(ctx context.Context, _, _, _ string) (string, error) {
			served = ctx
			return `{"result":{"id":1}}`, nil
		},
	})
	assert.Equal(t, "1", result(t, res))
	require.NotNil(t, served)
	assert.ErrorIs(t, served.Err(), context.Canceled, "ended with the run")

	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	contexts := make(chan context.Context, 2)
	res = e.Execute(context.Background(), Request{
		Code:      "async () => { store.a(); store.b(); return 1 }",
		Providers: []Provider{{Name: "store"}},
		Dispatch: func(ctx context.Context, _, tool, _ string) (string, error) {
			contexts <- ctx
			select {
			case <-release[tool]:
			case <-time.After(time.Minute): // the test's bound, not a limit
			}
			return `{"result":null}`, nil
		},
	})
	assert.Equal(t, "1", result(t, res))
	var calls []context.Context
	for range 2 {
		select {
		case ctx := <-contexts:
			calls = append(calls, ctx)
		case <-time.After(30 * time.Second):
			t.Fatal("the un-awaited calls never reached the dispatch")
		}
	}
	for _, ctx := range calls {
		assert.NoError(t, ctx.Err(), "a call in its handler after the run")
	}
	close(release["a"])
	close(release["b"])
	for _, ctx := range calls {
		select {
		case <-ctx.Done():
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		case <-time.After(30 * time.Second):
			t.Fatal("the context outlives the run's last call")
		}
	}
}

// TestHandlerProfilerLabels: a provider call's handler runs with the
// caller's profiler labels (pprof.Do), as on a goroutine the caller's
// own goroutine started, though handler goroutines are reused.
func TestHandlerProfilerLabels(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, v := range []string{"first", "second"} {
		var profile bytes.Buffer
		pprof.Do(context.Background(), pprof.Labels("codemode-test", v), func(ctx context.Context) {
			res := e.Execute(ctx, Request{
				Code:      "async () => (await store.x()).id",
				Providers: []Provider{{Name: "store"}},
				Dispatch: func(context.Context, string, string, string) (string, error) {
					return `{"result":{"id":1}}`, pprof.Lookup("goroutine").WriteTo(&profile, 1)
				},
			})
			assert.Equal(t, "1", result(t, res))
		})
		// debug=1 groups goroutines by stack and labels: the handler's
		// group names this test's function and carries its labels.
		var labels string
		for _, group := range strings.Split(profile.String(), "\n\n") {
			if strings.Contains(group, "TestHandlerProfilerLabels.func") && strings.Contains(group, "pprof.(*Profile).WriteTo") {
				_, rest, _ := strings.Cut(group, "# labels: ")
				labels, _, _ = strings.Cut(rest, "\n")
			}
		}
		assert.Equal(t, `{"codemode-test":"`+v+`"}`, labels)
	}
}

func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}))
	start := time.Now()
	res := e.Execute(context.Background(), Request{
		Code:      "async () => (await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((i) => store.slow(i)))).length",
		Providers: []Provider{{Name: "store"}},
		Dispatch: func(ctx context.Context, _, _, _ string) (string, error) {
			time.Sleep(200 * time.Millisecond)
			return `{"result":1}`, nil
		},
	})
	assert.Equal(t, `8`, result(t, res))
	// 1.6 s one after another; the margin over 200 ms is for a loaded machine.
	assert.Less(t, time.Since(start), 800*time.Millisecond, "parallel calls run concurrently")
}

func TestRetainedHandles(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: time.Second}))
	var handle atomic.Pointer[Handle]
	var dispatched atomic.Int32
	dispatch := EnvelopeDispatch(NewLatch(), func(_ context.Context, _, tool, argsJSON string) (any, error) {
		dispatched.Add(1)
		args, err := ParseDispatchArguments(argsJSON)
		if err != nil {
			return nil, err
		}
		if h, ok := args[0].(Handle); ok {
			handle.Store(&h)
		}
		return "subscribed", nil
	})
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			let ticks = 0
			setInterval(() => { ticks++ }, 1)
			const onEvent = async (event, bytes) => {
				if (event.kind === 'peek') return ticks > 0
				console.log('event', event.kind)
				if (event.kind === 'boom') throw new RangeError('bad event')
				if (event.kind === 'call') return await store.fromHandle()
				return { seen: event.kind, ticks: ticks > 0, len: bytes.length, isBytes: bytes instanceof Uint8Array }
			}
			return await store.subscribe(onEvent)
		}`,
		Providers:     []Provider{{Name: "store"}},
		Dispatch:      dispatch,
		RetainHandles: true,
	})
	assert.Equal(t, `"subscribed"`, result(t, res))
	require.NotNil(t, res.Retained)
	r := res.Retained
	h := handle.Load()
	require.NotNil(t, h)

	require.Eventually(t, func() bool { // let the interval tick (a loaded machine may take a while)
		v, err := r.Call(context.Background(), *h, map[string]any{"kind": "peek"}, []byte{})
		return err == nil && v == true
	}, 10*time.Second, 5*time.Millisecond)
	v, err := r.Call(context.Background(), *h, map[string]any{"kind": "ping"}, []byte{1, 2, 3})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"seen": "ping", "ticks": true, "len": float64(3), "isBytes": true}, v)

	_, err = r.Call(context.Background(), *h, map[string]any{"kind": "boom"}, []byte{})
	ee := execErr(t, err)
	assert.Equal(t, KindJS, ee.Kind)
	assert.True(t, strings.HasPrefix(ee.Message, "RangeError: bad event"), ee.Message)

	n := dispatched.Load()
	_, err = r.Call(context.Background(), *h, map[string]any{"kind": "call"}, []byte{})
	ee = execErr(t, err)
	assert.True(t, strings.HasPrefix(ee.Message, "Error: Execution has already completed."), ee.Message)
	assert.Equal(t, n, dispatched.Load(), "a call from a retained sandbox never reaches the dispatch")
	assert.Equal(t, []string{"event ping", "event boom", "event call"}, r.Logs())

	_, err = r.Call(context.Background(), Handle{id: 999}, nil)
	assert.Contains(t, execErr(t, err).Message, "no function behind handle 999")

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	_, err = r.Call(context.Background(), *h, map[string]any{"kind": "ping"}, []byte{})
	assert.ErrorIs(t, err, ErrRetainedClosed)
	assert.ErrorIs(t, r.Err(), ErrRetainedClosed)

	// Without RetainHandles the sandbox is gone at once.
	res = e.Execute(context.Background(), Request{
		Code: "async () => store.subscribe(() => 1)", Providers: []Provider{{Name: "store"}}, Dispatch: dispatch,
	})
	assert.Equal(t, `"subscribed"`, result(t, res))
	assert.Nil(t, res.Retained)
}

func TestRetainedBounds(t *testing.T) {
	t.Parallel()
	// The deadline leaves the programs that must succeed room on a loaded
	// machine; the idle bound is longer than it.
	e := newExecutor(t, WithLimits(Limits{Deadline: 250 * time.Millisecond}), WithRetainIdle(500*time.Millisecond))
	var handle atomic.Pointer[Handle]
	dispatch := EnvelopeDispatch(nil, func(_ context.Context, _, _, argsJSON string) (any, error) {
		args, _ := ParseDispatchArguments(argsJSON)
		h := args[0].(Handle)
		handle.Store(&h)
		return nil, nil
	})
	run := func(code string) *Retained {
		res := e.Execute(context.Background(), Request{Code: code, Providers: []Provider{{Name: "store"}}, Dispatch: dispatch, RetainHandles: true})
		require.Empty(t, res.Error)
		require.NotNil(t, res.Retained)
		return res.Retained
	}

	// The idle bound closes a sandbox nobody calls, timers or not.
	r := run("async () => { setInterval(() => {}, 1); await store.keep(() => 1) }")
	select {
	case <-r.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the idle bound did not close the sandbox")
	}
	assert.ErrorIs(t, r.Err(), ErrRetainedClosed)

	// A handle call that runs past the deadline kills the sandbox.
	r = run("async () => { await store.keep(() => { for (;;) {} }) }")
	_, err := r.Call(context.Background(), *handle.Load())
	assert.ErrorIs(t, err, ErrRetainedClosed)
	<-r.Done()

	// So does a timer that does. The handle arms it, so that it fires in
	// the retained sandbox, never before the program settled.
	r = run("async () => { await store.keep(() => { setTimeout(() => { for (;;) {} }, 5); return 1 }) }")
	v, err := r.Call(context.Background(), *handle.Load())
	require.NoError(t, err)
	assert.Equal(t, float64(1), v)
	<-r.Done()
	assert.ErrorIs(t, r.Err(), ErrTimeout)
	assert.ErrorIs(t, r.Err(), ErrRetainedClosed)

	// Closing the executor closes retained sandboxes.
	e2, err := New(WithRetainIdle(time.Hour))
	require.NoError(t, err)
	res := e2.Execute(context.Background(), Request{Code: "async () => { await store.keep(() => 1) }", Providers: []Provider{{Name: "store"}}, Dispatch: dispatch, RetainHandles: true})
	require.NotNil(t, res.Retained)
	require.NoError(t, e2.Close())
	<-res.Retained.Done()
	assert.ErrorIs(t, res.Retained.Err(), ErrRetainedClosed)
}

// TestHandleCrossesBack: a Handle in a tool's result arrives as the
// program's own function.
func TestHandleCrossesBack(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			const f = (x) => x * 2
			const back = await store.roundTrip(f)
			return [back === f, back(21)]
		}`,
		Providers: []Provider{{Name: "store"}},
		Dispatch: EnvelopeDispatch(nil, func(_ context.Context, _, _, argsJSON string) (any, error) {
			args, err := ParseDispatchArguments(argsJSON)
			if err != nil {
				return nil, err
			}
			return args[0], nil
		}),
	})
	assert.Equal(t, `[true,42]`, result(t, res))
}

// TestDispatchFailureAttribution: a tool failure the program lets escape
// is kind capability, attributed to "provider.tool" with the dispatch's
// own message, however it failed; ExecuteResult.Error reads as the Error
// the program saw.
func TestDispatchFailureAttribution(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Payload: 4096}), WithCapability(failing("flaky", "upstream exploded", false)))
	goErr := func(context.Context, string, string, string) (string, error) { return "", errors.New("db down") }
	envelope := EnvelopeDispatch(nil, func(_ context.Context, _, tool, _ string) (any, error) {
		return nil, ToolNotFoundError{Tool: tool}
	})
	outside := func(context.Context, string, string, string) (string, error) { return `"just a string"`, nil }
	const payloadText = "Error: The tool call is 5010 bytes (provider, tool and arguments), over the payload limit of " +
		"4096 bytes; it was not delivered.\n    at dispatch (native)\n    at <anonymous> (program.js:1:19)"
	tests := []struct {
		name, code string
		dispatch   DispatchFunc
		kind       ErrorKind
		capability string
		message    string // the ExecError's message
		error      string // ExecuteResult.Error
	}{
		{"go error", "async () => await store.x()", goErr, KindCapability, "store.x", "db down", "Error: db down"},
		{"envelope error", "async () => { await store.lookup(1) }", envelope, KindCapability, "store.lookup",
			`Tool "lookup" not found`, `Error: Tool "lookup" not found`},
		{"outside the envelope", "async () => store.x()", outside, KindCapability, "store.x", MsgOutsideEnvelope,
			"Error: " + MsgOutsideEnvelope},
		{"no dispatch", "async () => store.missing()", nil, KindCapability, "store.missing", `Tool "missing" not found`,
			`Error: Tool "missing" not found`},
		{"caught and rethrown", "async () => { try { await store.x() } catch (e) { throw e } }", goErr, KindCapability,
			"store.x", "db down", "Error: db down"},
		{"second provider", "async () => { await store.x(); }", goErr, KindCapability, "store.x", "db down", "Error: db down"},
		{"capability in a program", "async () => flaky({})", nil, KindCapability, "flaky", "upstream exploded",
			"Error: upstream exploded"},
		{"wrapped is js", "async () => { try { await store.x() } catch (e) { throw new Error('no: ' + e.message) } }", goErr,
			KindJS, "", "Error: no: db down\n    at <anonymous> (program.js:1:76)", "Error: no: db down\n    at <anonymous> (program.js:1:76)"},
		{"over the payload is js", "async () => store.x('" + strings.Repeat("a", 5000) + "')", goErr, KindJS, "",
			payloadText, payloadText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := e.Execute(context.Background(), Request{Code: tt.code, Providers: []Provider{{Name: "store"}, {Name: "other"}},
				Dispatch: tt.dispatch})
			require.NotNil(t, res.Err, "Execute(%q)", tt.code)
			assert.Equal(t, tt.kind, res.Err.Kind)
			assert.Equal(t, ExecuteName, res.Err.Name)
			assert.Equal(t, tt.capability, res.Err.Capability)
			assert.Equal(t, tt.message, res.Err.Message)
			assert.Equal(t, tt.error, res.Error)
		})
	}
}

// TestRetainedCallOutcomes: a retained call has its own deadline: a
// promise that can never settle ends at once as pending_promise, one that
// could but does not ends at the deadline as timeout, and the sandbox
// lives on after both; code that runs past the deadline or the memory
// limit is killed with its kind, and the sandbox with it.
func TestRetainedCallOutcomes(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(deadlineLimits(1500*time.Millisecond)))
	var handles sync.Map
	dispatch := EnvelopeDispatch(nil, func(_ context.Context, _, tool, argsJSON string) (any, error) {
		args, err := ParseDispatchArguments(argsJSON)
		if err != nil {
			return nil, err
		}
		handles.Store(tool, args[0].(Handle))
		return nil, nil
	})
	res := e.Execute(context.Background(), Request{
		Code: `async () => {
			await store.never(() => new Promise(() => {}))
			await store.ticking(() => { setInterval(() => {}, 5); return new Promise(() => {}) })
			await store.echo((x) => x)
			await store.spin(() => { for (;;) {} })
			await store.grow(() => { const a = []; for (;;) a.push('x'.repeat(1000)) })
		}`,
		Providers: []Provider{{Name: "store"}}, Dispatch: dispatch, RetainHandles: true,
	})
	require.Empty(t, res.Error)
	r := res.Retained
	require.NotNil(t, r)
	defer r.Close()
	handle := func(name string) Handle {
		h, ok := handles.Load(name)
		require.True(t, ok, name)
		return h.(Handle)
	}
	ctx := context.Background()

	start := time.Now()
	_, err := r.Call(ctx, handle("never"))
	assert.Equal(t, `{"kind":"pending_promise","name":"execute"}`, execErr(t, err).LLMJSON())
	assert.Less(t, time.Since(start), 750*time.Millisecond, "nothing outstanding: at once, not at the deadline")

	v, err := r.Call(ctx, handle("echo"), "still here")
	require.NoError(t, err)
	assert.Equal(t, "still here", v)

	start = time.Now()
	_, err = r.Call(ctx, handle("ticking"))
	assert.Equal(t, `{"kind":"timeout","name":"execute","deadline_ms":1500}`, execErr(t, err).LLMJSON())
	assert.ErrorIs(t, err, ErrTimeout)
	assert.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond)
	assert.NotErrorIs(t, err, ErrRetainedClosed, "nothing ran away: the sandbox lives")

	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = r.Call(cctx, handle("ticking"))
	cancel()
	ee := execErr(t, err)
	assert.Equal(t, KindTimeout, ee.Kind)
	assert.LessOrEqual(t, ee.DeadlineMS, int64(50), "the caller's deadline is sooner")

	cctx, cancel = context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = r.Call(cctx, handle("ticking"))
	assert.Equal(t, KindInternal, execErr(t, err).Kind)
	assert.ErrorIs(t, err, context.Canceled)

	v, err = r.Call(ctx, handle("echo"), 7)
	require.NoError(t, err)
	assert.Equal(t, float64(7), v)

	_, err = r.Call(ctx, handle("spin"))
	assert.Equal(t, `{"kind":"timeout","name":"execute","deadline_ms":1500}`, execErr(t, err).LLMJSON())
	assert.ErrorIs(t, err, ErrTimeout)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, ErrRetainedClosed)
	<-r.Done()
	assert.ErrorIs(t, r.Err(), ErrRetainedClosed)

	// A memory kill: a deadline far beyond what the bomb needs.
	e2 := newExecutor(t, WithLimits(memoryLimits(8<<20)))
	res = e2.Execute(ctx, Request{Code: `async () => { await store.grow(() => { const a = []; for (;;) a.push('x'.repeat(1000)) }) }`,
		Providers: []Provider{{Name: "store"}}, Dispatch: dispatch, RetainHandles: true})
	require.Empty(t, res.Error)
	_, err = res.Retained.Call(ctx, handle("grow"))
	assert.Equal(t, `{"kind":"memory_exceeded","name":"execute","limit_bytes":8388608}`, execErr(t, err).LLMJSON())
	assert.ErrorIs(t, err, ErrRetainedClosed)
	<-res.Retained.Done()
	var kill *ExecError
	require.ErrorAs(t, res.Retained.Err(), &kill)
	assert.Equal(t, KindMemoryExceeded, kill.Kind)
}

// TestProgramHead: the head a cached run's positions use is the one the
// source has.
func TestProgramHead(t *testing.T) {
	for _, ps := range [][]Provider{nil, {{Name: "store"}}, {{Name: "a"}, {Name: "github"}}} {
		src, head := programSource("x", ps, [32]byte{1})
		assert.Equal(t, head, programHead(ps))
		assert.Equal(t, "x", string(src[head:head+1]))
	}
}

// TestNilContext: every entry point given a nil context refuses it with
// kind invalid_args matching ErrNilContext, before anything runs, instead
// of a nil-pointer panic in the caller's goroutine.
func TestNilContext(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	var nilCtx context.Context // what a caller's bug passes
	kind := KindInvalidArgs    // the Executor's: arguments refused before any sandbox
	check := func(what string, err error) {
		t.Helper()
		var ee *ExecError
		if assert.ErrorIs(t, err, ErrNilContext, what) && assert.ErrorAs(t, err, &ee, what) {
			assert.Equal(t, kind, ee.Kind, what)
		}
	}
	_, err := e.Run(nilCtx, "return 1")
	check("Run", err)
	res := e.Execute(nilCtx, Request{Code: "async () => 1"})
	check("Execute", res.Err)
	assert.Equal(t, "execute: invalid arguments: a nil Context (pass context.Background())", res.Error)
	assert.Equal(t, []string{}, res.Logs)
	check("Resume", e.Resume(nilCtx, []byte("{}"), Decision{}, nil).Err)
	_, err = e.Register(nilCtx, ToolSource{Name: "one", Source: "() => 1"})
	check("Register", err)
	_, err = e.Register(context.Background(), ToolSource{Name: "one", Source: "() => 1"})
	require.NoError(t, err)
	_, err = e.Call(nilCtx, "one", json.RawMessage(`{}`))
	check("Call", err)

	var handle atomic.Pointer[Handle]
	res = e.Execute(context.Background(), Request{
		Code:      "async () => { await store.keep(() => 2) }",
		Providers: []Provider{{Name: "store"}},
		Dispatch: EnvelopeDispatch(nil, func(_ context.Context, _, _, argsJSON string) (any, error) {
			args, err := ParseDispatchArguments(argsJSON)
			if err == nil {
				if h, ok := args[0].(Handle); ok {
					handle.Store(&h)
				}
			}
			return nil, err
		}),
		RetainHandles: true,
	})
	require.Empty(t, res.Error)
	require.NotNil(t, res.Retained)
	defer res.Retained.Close()
	require.NotNil(t, handle.Load())
	_, err = res.Retained.Call(nilCtx, *handle.Load())
	check("Retained.Call", err)
	v, err := res.Retained.Call(context.Background(), *handle.Load())
	require.NoError(t, err)
	assert.Equal(t, 2.0, v, "the sandbox still serves")

	base, err := NewCodeModeTool(nil, Limits{})
	require.NoError(t, err)
	defer base.Close()
	cm := base.Granted("g") // the path that wraps the context first
	kind = KindInternal     // CodeModeTool's Go errors: not the model's to repair
	_, err = cm.Invoke(nilCtx, json.RawMessage(`{"code":"return 1"}`))
	check("CodeModeTool.Invoke", err)
	_, err = cm.Call(nilCtx, json.RawMessage(`{"code":"return 1"}`))
	check("CodeModeTool.Call", err)
	_, err = cm.Resume(nilCtx, []byte("{}"), Decision{})
	check("CodeModeTool.Resume", err)
}

// TestNilInputs: a nil Option, a nil Tool and a nil *Retained are
// refused or act as documented, never a nil-pointer panic.
func TestNilInputs(t *testing.T) {
	t.Parallel()
	_, err := New(WithLimits(Limits{}), nil)
	assert.EqualError(t, err, "codemode: a nil Option")
	_, err = NewCodeModeTool(nil, Limits{}, nil)
	assert.EqualError(t, err, "codemode: a nil Option")
	tool := NewTool(ToolDefinition{Name: "t"}, func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil })
	_, err = NewCodeModeTool([]Tool{tool, nil}, Limits{})
	var re *RegisterError
	if assert.ErrorAs(t, err, &re) {
		assert.Equal(t, StageInvalidCapability, re.Stage)
		assert.Contains(t, re.Error(), "tools[1] is nil")
	}

	e := newExecutor(t)
	res := e.Execute(context.Background(), Request{Code: "async () => 1"})
	require.Nil(t, res.Retained, "no RetainHandles")
	_, err = res.Retained.Call(context.Background(), Handle{})
	assert.ErrorIs(t, err, ErrRetainedClosed)
	assert.ErrorIs(t, res.Retained.Err(), ErrRetainedClosed)
	assert.NoError(t, res.Retained.Close())
	assert.Nil(t, res.Retained.Logs())
	select {
	case <-res.Retained.Done():
	default:
		t.Error("a nil Retained's Done is not closed")
	}
}
