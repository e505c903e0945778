package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunValues(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	tests := []struct {
		name, script, want string
	}{
		{"arithmetic", "return 1+1", "2"},
		{"object", `return {ok:true,n:2,s:"hi"}`, `{"ok":true,"n":2,"s":"hi"}`},
		{"empty script", "", "null"},
		{"no return", "const x = 1", "null"},
		{"undefined", "return undefined", "null"},
		{"function value", "return () => 1", "null"},
		{"await", "const v = await Promise.resolve(41); return v + 1", "42"},
		{"await chain", "let n = 0; for (let i = 0; i < 10; i++) n += await i; return n", "45"},
		{"async helper", "const f = async (x) => x * 2; return await f(21)", "42"},
		{"returned promise", "return Promise.resolve('p')", `"p"`},
		{"caught rejection", "try { await Promise.reject(new Error('no')) } catch (e) { return e.message }", `"no"`},
		{"nested return", "for (const x of [1, 2, 3]) { if (x === 2) { return x } }", "2"},
		{"user labels", "outer: for (;;) { for (;;) { break outer } } return 'out'", `"out"`},
		{"label named like ours", "__codemode_x: { break __codemode_x } return 1", "1"},
		{"eval", "return eval('1+2')", "3"},
		{"new Function", "return new Function('a', 'return a * 3')(5)", "15"},
		{"this is global", "return this === globalThis", "true"},
		{"nul in a string", "return 'a\\u0000b'.length", "3"},
		{"unicode", "return 'héllo ✓ 🔥'", `"héllo ✓ 🔥"`},
		{"lone surrogate", "return '\\ud800'", `"\ud800"`},
		{"typed arrays", "return Array.from(new Uint8Array([1, 2, 300]))", "[1,2,44]"},
		{"map and set", "const m = new Map([[1, 'a']]); const s = new Set([1, 1, 2]); return [m.get(1), s.size]", `["a",2]`},
		{"weakmap", "const w = new WeakMap(); const k = {}; w.set(k, 1); return w.get(k)", "1"},
		{"regexp", "return 'a1b22c333'.match(/\\d+/g)", `["1","22","333"]`},
		{"date", "return new Date(Date.UTC(2026, 0, 2)).toISOString()", `"2026-01-02T00:00:00.000Z"`},
		{"json", `return JSON.parse('{"a":[1,{"b":null}]}')`, `{"a":[1,{"b":null}]}`},
		{"proxy", "const p = new Proxy({}, { get: (_, k) => k.toUpperCase() }); return p.abc", `"ABC"`},
		{"bigint arithmetic", "return String(2n ** 70n)", `"1180591620717411303424"`},
		{"class", "class A { #x = 2; get x() { return this.#x } } return new A().x", "2"},
		{"generator", "function* g() { yield 1; yield 2 } return [...g()]", "[1,2]"},
		{"nan and infinity", "return [NaN, Infinity, -0]", "[null,null,0]"},
		{"date value", "return new Date(0)", `"1970-01-01T00:00:00.000Z"`},
		{"toJSON", "return { toJSON() { return 'custom' } }", `"custom"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.Run(context.Background(), tt.script)
			require.NoError(t, err, "Run(%q)", tt.script)
			assert.JSONEq(t, tt.want, string(res.Value), "Run(%q) = %s; want %s", tt.script, res.Value, tt.want)
		})
	}
}

// TestRunGolden runs testdata/golden/*.js and compares with the .json next
// to each.
func TestRunGolden(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	files, err := filepath.Glob("testdata/golden/*.js")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			want, err := os.ReadFile(strings.TrimSuffix(file, ".js") + ".json")
			require.NoError(t, err)
			res, err := e.Run(context.Background(), string(src))
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(res.Value))
		})
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	tests := []struct {
		name, script string
		want         ExecError
	}{
		{"reference error", "let a = 1;\nfoo();", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "ReferenceError: foo is not defined\n    at <anonymous> (script.js:2:1)", Line: 2, Column: 1}},
		{"type error in a function", "function f() {\n  return null.x\n}\nreturn f()", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "TypeError: cannot read property 'x' of null\n    at f (script.js:2:15)\n    at <anonymous> (script.js:4:8)", Line: 2, Column: 15}},
		{"first-line column", "  undefinedName", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "ReferenceError: undefinedName is not defined\n    at <anonymous> (script.js:1:3)", Line: 1, Column: 3}},
		{"syntax error", "let x = 1;\nlet y = ;", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "SyntaxError: unexpected token in expression: ';'\n    at script.js:2:9", Line: 2, Column: 9}},
		{"thrown string", "throw 'boom'", ExecError{Kind: KindJS, Name: RunJSToolName, Message: "Uncaught boom"}},
		{"thrown object", "throw {code: 1}", ExecError{Kind: KindJS, Name: RunJSToolName, Message: `Uncaught {"code":1}`}},
		{"thrown number", "throw 42", ExecError{Kind: KindJS, Name: RunJSToolName, Message: "Uncaught 42"}},
		{"thrown undefined", "throw undefined", ExecError{Kind: KindJS, Name: RunJSToolName, Message: "Uncaught undefined"}},
		{"thrown symbol", "throw Symbol('s')", ExecError{Kind: KindJS, Name: RunJSToolName, Message: "Uncaught Symbol(s)"}},
		{"custom error class", "class MyError extends Error { constructor(m) { super(m); this.name = 'MyError' } }\nthrow new MyError('mine')",
			ExecError{Kind: KindJS, Name: RunJSToolName, Message: "MyError: mine\n    at MyError (script.js:1:48)\n    at <anonymous> (script.js:2:7)", Line: 1, Column: 48}},
		{"error without message", "throw new RangeError()", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "RangeError\n    at <anonymous> (script.js:1:11)", Line: 1, Column: 11}},
		{"rejected await", "await Promise.reject(new TypeError('late'))", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "TypeError: late\n    at <anonymous> (script.js:1:26)", Line: 1, Column: 26}},
		{"bigint result", "return 10n", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "TypeError: BigInt are forbidden in JSON.stringify"}},
		{"cyclic result", "const a = {}; a.a = a; return a", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "TypeError: circular reference"}},
		{"out of memory text is plain js", "throw new Error('out of memory')", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "Error: out of memory\n    at <anonymous> (script.js:1:11)", Line: 1, Column: 11}},
		{"pending promise", "return new Promise(() => {})", ExecError{Kind: KindPendingPromise, Name: RunJSToolName}},
		{"payload", "return 'x'.repeat(1 << 20)", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "RangeError: the result is 1048578 bytes of JSON, over the payload limit of 1048576 bytes"}},
		{"invalid utf-8", "return 1 \xff\xfe", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "SyntaxError: invalid UTF-8 sequence\n    at script.js:1:10", Line: 1, Column: 10}},
		{"nul byte in source", "a\x00b", ExecError{Kind: KindJS, Name: RunJSToolName,
			Message: "SyntaxError: expecting ';'\n    at script.js:1:2", Line: 1, Column: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := e.Run(context.Background(), tt.script)
			got := execErr(t, err)
			assert.Equal(t, tt.want.LLMJSON(), got.LLMJSON(), "Run(%q)", tt.script)
		})
	}
}

// TestWrapperCannotBeEscaped: a body that closes the async wrapper early
// and reopens one of its own is a syntax error, whatever shape it takes.
func TestWrapperCannotBeEscaped(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, script := range []string{
		"}); (async () => {",
		"}}); (async () => {",
		"}}); (async () => { {",
		"}}})(); (async () => {{{",
		"} } })(); globalThis.escaped = 1; (async () => { __x: {",
		"}",
		"}}",
		"return 1 }}",
		"/*",
		"`",
		"{",
	} {
		_, err := e.Run(context.Background(), script)
		ee := execErr(t, err)
		assert.Equal(t, KindJS, ee.Kind, "Run(%q) = %s; want a js error", script, ee.LLMJSON())
		assert.True(t, strings.HasPrefix(ee.Message, "SyntaxError: "), "Run(%q) = %s; want a SyntaxError", script, ee.Message)
	}
}

// TestHostile runs testdata/hostile/*.js, each declaring the error kind it
// must end in on its first line, and checks the executor keeps working.
func TestHostile(t *testing.T) {
	t.Parallel()
	limited := newExecutor(t, WithLimits(memoryLimits(8<<20)))
	timed := newExecutor(t, WithLimits(deadlineLimits(200*time.Millisecond)))
	files, err := filepath.Glob("testdata/hostile/*.js")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			first, _, _ := strings.Cut(string(src), "\n")
			want, ok := strings.CutPrefix(first, "// want: ")
			require.True(t, ok, "%s: first line must be `// want: <kind>`", file)
			e := limited
			if want == string(KindTimeout) {
				e = timed
			}
			_, err = e.Run(context.Background(), string(src))
			ee := execErr(t, err)
			assert.Equal(t, ErrorKind(want), ee.Kind, "%s: %s", file, ee.LLMJSON())
			switch ee.Kind {
			case KindMemoryExceeded:
				assert.Equal(t, int64(8<<20), ee.LimitBytes)
			case KindTimeout:
				assert.Equal(t, int64(200), ee.DeadlineMS)
			}

			res, err := e.Run(context.Background(), "return 1+1")
			require.NoError(t, err, "the executor must keep working after %s", file)
			assert.Equal(t, "2", string(res.Value))
		})
	}
}

// TestTimeoutIsSticky: once the deadline fired the run is a timeout,
// whatever the script does afterwards.
func TestTimeoutIsSticky(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 50 * time.Millisecond}))
	for _, script := range []string{
		"try { for (;;) {} } catch (e) { return 'caught ' + e }",
		"try { for (;;) {} } finally { return 'finally' }",
		"const p = new Promise((r) => { for (;;) {} }); return 'after'",
	} {
		_, err := e.Run(context.Background(), script)
		ee := execErr(t, err)
		assert.Equal(t, KindTimeout, ee.Kind, "Run(%q) = %s", script, ee.LLMJSON())
		assert.True(t, errors.Is(err, ErrTimeout))
		assert.True(t, errors.Is(err, context.DeadlineExceeded))
		assert.False(t, errors.Is(err, context.Canceled))
		assert.Equal(t, `{"kind":"timeout","name":"run_js","deadline_ms":50}`, ee.LLMJSON())
	}
}

// TestMemoryIsSticky: a caught out-of-memory error still ends the run as
// memory_exceeded; a script's own "out of memory" error does not.
func TestMemoryIsSticky(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(memoryLimits(8<<20)))
	_, err := e.Run(context.Background(), `
		let hog = []
		try { for (;;) hog.push(new Array(1e5).fill(1)) } catch (e) { hog = null }
		return 'recovered'`)
	ee := execErr(t, err)
	assert.Equal(t, `{"kind":"memory_exceeded","name":"run_js","limit_bytes":8388608}`, ee.LLMJSON())

	_, err = e.Run(context.Background(), "throw new InternalError('out of memory')")
	assert.Equal(t, KindJS, execErr(t, err).Kind)
}

func TestNoAmbientAuthority(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res, err := e.Run(context.Background(), `
		return ['require', 'process', 'std', 'os', 'fetch', 'XMLHttpRequest', 'WebSocket', 'scriptArgs',
		        'print', 'Deno', 'Bun', 'module', 'exports', 'importScripts', 'WeakRef']
			.filter((n) => typeof globalThis[n] !== 'undefined')`)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(res.Value))

	res, err = e.Run(context.Background(), `
		return [typeof require, typeof process, typeof std, typeof os, typeof fetch,
		        typeof XMLHttpRequest, typeof WebSocket, typeof scriptArgs]`)
	require.NoError(t, err)
	assert.JSONEq(t, `["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]`, string(res.Value))

	res, err = e.Run(context.Background(), "try { await import('os'); return 'loaded' } catch (e) { return e.name + ': ' + e.message }")
	require.NoError(t, err)
	assert.Equal(t, `"ReferenceError: could not load module 'os'"`, string(res.Value))
}

// TestFreshGlobals: nothing one run writes is visible to the next.
func TestFreshGlobals(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	_, err := e.Run(context.Background(), `
		globalThis.leak = 'secret'
		var leakedVar = 1
		Object.prototype.polluted = true
		Array.prototype.push = null
		JSON.stringify = () => '"hijacked"'
		console.log = null
		return 1`)
	require.NoError(t, err)
	res, err := e.Run(context.Background(), `
		const r = []
		r.push(typeof leak, typeof leakedVar, typeof ({}).polluted)
		console.log('still works')
		return r`)
	require.NoError(t, err)
	assert.JSONEq(t, `["undefined","undefined","undefined"]`, string(res.Value))
	assert.Equal(t, []string{"still works"}, res.Logs)
}

func TestConsole(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res, err := e.Run(context.Background(), `
		console.log('hi', {a: 1}, [1, 'x'], undefined, null, 5, true)
		console.info('i'); console.warn('w'); console.error('e'); console.debug('d')
		console.log()
		console.log('multi\nline')
		console.log(Symbol('s'), () => 1, 10n)
		const c = {}; c.c = c; console.log(c)
		console.log({ toJSON() { throw new Error('no') } })
		return 1`)
	require.NoError(t, err)
	assert.Equal(t, []string{
		`hi {"a":1} [1,"x"] undefined null 5 true`,
		"[info] i", "[warn] w", "[error] e", "[debug] d",
		"",
		"multi\nline",
		"Symbol(s) () => 1 10",
		"[object Object]",
		"[object Object]",
	}, res.Logs)
}

func TestLogFloodIsBounded(t *testing.T) {
	t.Parallel()
	// 100,000 calls: a 10 s deadline for ASan in checked mode on a loaded
	// machine (it passed 500 ms so).
	e := newExecutor(t, WithLimits(Limits{Logs: 100, Deadline: 10 * time.Second}))
	res, err := e.Run(context.Background(), `
		for (let i = 0; i < 100000; i++) console.log('line ' + String(i).padStart(4, '0'))
		return 'done'`)
	require.NoError(t, err)
	// Each line is 9 bytes plus one for its end: ten fit in 100.
	require.Len(t, res.Logs, 11)
	assert.Equal(t, "line 0000", res.Logs[0])
	assert.Equal(t, "line 0009", res.Logs[9])
	assert.Equal(t, "[codemode: 99990 more log lines dropped: the 100-byte log limit was reached]", res.Logs[10])

	res, err = e.Run(context.Background(), "console.log('x'.repeat(1000)); console.log('short'); return 1")
	require.NoError(t, err)
	assert.Equal(t, []string{"short", "[codemode: 1 more log lines dropped: the 100-byte log limit was reached]"}, res.Logs)
}

func TestFailedRunKeepsLogs(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res, err := e.Run(context.Background(), "console.log('before'); throw new Error('after')")
	require.Error(t, err)
	require.NotNil(t, res)
	assert.Nil(t, res.Value)
	assert.Equal(t, []string{"before"}, res.Logs)
}

// unreadDeep ends the first line of an error of a source nested past the
// bound of what codemode reads before compiling.
const unreadDeep = " (codemode compiled the source without reading it first: it nests more than 1024 levels deep)"

func TestBadInputNeverCrashes(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}))

	// 10 MiB to prepare and compile: a minute's margin for the race
	// detector and checked mode on a loaded machine (it took 11.5 s so).
	slow := newExecutor(t, WithLimits(Limits{Deadline: time.Minute}))
	big := strings.Repeat("// filler line of a very long script\n", (10<<20)/37+1) + "return 'end'"
	require.GreaterOrEqual(t, len(big), 10<<20)
	res, err := slow.Run(context.Background(), big)
	require.NoError(t, err)
	assert.Equal(t, `"end"`, string(res.Value))

	tests := []struct {
		script string
		value  string    // the result, or
		kind   ErrorKind // the error kind
		msg    string    // and its message's first line
	}{
		{script: "\x00", kind: KindJS, msg: "SyntaxError: unexpected token in expression: ''"},
		{script: "\x00\x00return 1", kind: KindJS, msg: "SyntaxError: unexpected token in expression: ''"},
		{script: "return 'a\x00b'", value: `"a\u0000b"`},
		{script: "return 1 // \x00 in a comment", value: "1"},
		{script: `return 'a\u{20BB7}b\u{10FFFF}c'`, value: "\"a\U00020BB7b\U0010FFFFc\""}, // goja's parser panicked on it
		{script: "\xc3\x28", kind: KindJS, msg: "SyntaxError: invalid UTF-8 sequence"},
		{script: "\xed\xa0\x80", kind: KindJS, msg: "SyntaxError: unexpected character"},
		{script: "return '\xff'", kind: KindJS, msg: "SyntaxError: invalid UTF-8 sequence"},
		// Past the bounds of what codemode reads (package jspos), the
		// engine's parser decides, and the error says which bound.
		{script: strings.Repeat("(", 100000), kind: KindJS, msg: "RangeError: Maximum call stack size exceeded" + unreadDeep},
		{script: strings.Repeat("[", 100000), kind: KindJS, msg: "RangeError: Maximum call stack size exceeded" + unreadDeep},
		{script: strings.Repeat("(", 400000), kind: KindJS, msg: "RangeError: Maximum call stack size exceeded" + unreadDeep},
	}
	for _, tt := range tests {
		res, err := e.Run(context.Background(), tt.script)
		if tt.kind == "" {
			require.NoError(t, err, "Run(%.40q)", tt.script)
			assert.Equal(t, tt.value, string(res.Value), "Run(%.40q)", tt.script)
			continue
		}
		ee := execErr(t, err)
		assert.Equal(t, tt.kind, ee.Kind, "Run(%.40q) = %s", tt.script, ee.LLMJSON())
		first, _, _ := strings.Cut(ee.Message, "\n")
		assert.Equal(t, tt.msg, first, "Run(%.40q)", tt.script)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: time.Minute}))

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := e.Run(ctx, "for (;;) {}")
	ee := execErr(t, err)
	assert.Equal(t, KindInternal, ee.Kind)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.False(t, errors.Is(err, ErrTimeout))

	_, err = e.Run(ctx, "return 1")
	assert.True(t, errors.Is(err, context.Canceled), "an already cancelled context: %v", err)

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = e.Run(ctx, "for (;;) {}")
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)

	// A cancel that arrives after a run must not touch the next run.
	ctx, cancel = context.WithCancel(context.Background())
	_, err = e.Run(ctx, "return 1")
	require.NoError(t, err)
	cancel()
	res, err := e.Run(context.Background(), "let n = 0; for (let i = 0; i < 1e6; i++) n += i; return n")
	require.NoError(t, err)
	assert.Equal(t, "499999500000", string(res.Value))
}

func TestClose(t *testing.T) {
	t.Parallel()
	e, err := New(WithLimits(Limits{Deadline: time.Minute}))
	require.NoError(t, err)

	started := make(chan struct{})
	done := make(chan error)
	go func() {
		close(started)
		_, err := e.Run(context.Background(), "for (;;) {}")
		done <- err
	}()
	<-started
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, e.Close())
	err = <-done
	assert.True(t, errors.Is(err, ErrClosed), "a run in progress when Close is called: %v", err)

	require.NoError(t, e.Close(), "Close is idempotent")
	_, err = e.Run(context.Background(), "return 1")
	assert.True(t, errors.Is(err, ErrClosed), "%v", err)
	assert.Equal(t, KindInternal, execErr(t, err).Kind)
}

func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	const goroutines, runs = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*runs)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range runs {
				script := fmt.Sprintf("await null; console.log('g%d'); return {g: %d, i: %d, sum: [1,2,3].reduce((a, b) => a + b)}", g, g, i)
				res, err := e.Run(context.Background(), script)
				if err != nil {
					errs <- err
					continue
				}
				want := fmt.Sprintf(`{"g":%d,"i":%d,"sum":6}`, g, i)
				if string(res.Value) != want || len(res.Logs) != 1 || res.Logs[0] != fmt.Sprintf("g%d", g) {
					errs <- fmt.Errorf("Run(%q) = %s %q; want %s", script, res.Value, res.Logs, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	assert.Equal(t, DefaultLimits(), e.Limits())
	assert.Equal(t, Limits{Memory: 32 << 20, Stack: 512 << 10, Payload: 1 << 20, Logs: 64 << 10, Deadline: 500 * time.Millisecond}, DefaultLimits())

	e2 := newExecutor(t, WithLimits(Limits{Memory: 4 << 20, Deadline: time.Second}))
	assert.Equal(t, Limits{Memory: 4 << 20, Stack: 512 << 10, Payload: 1 << 20, Logs: 64 << 10, Deadline: time.Second}, e2.Limits())

	assert.GreaterOrEqual(t, MaxStack(), DefaultStack, "the default stack must be allowed")
	for _, bad := range []Limits{
		{Memory: -1}, {Stack: -1}, {Payload: -1}, {Logs: -1}, {Deadline: -time.Second},
		{Memory: MinMemory - 1}, {Stack: MinStack - 1}, {Stack: MaxStack() + 1},
	} {
		_, err := New(WithLimits(bad))
		assert.ErrorIs(t, err, ErrInvalidLimits, "New(WithLimits(%+v))", bad)
	}
}

// TestStackLimit: recursion depth follows Limits.Stack.
func TestStackLimit(t *testing.T) {
	t.Parallel()
	depth := func(stack int) int {
		e := newExecutor(t, WithLimits(Limits{Stack: stack}))
		res, err := e.Run(context.Background(), "let d = 0; function f() { d++; f() } try { f() } catch (e) { return d }")
		require.NoError(t, err)
		var n int
		require.NoError(t, json.Unmarshal(res.Value, &n))
		return n
	}
	small, large := depth(64<<10), depth(1<<20)
	assert.Greater(t, small, 10)
	assert.Greater(t, large, 8*small, "16x the stack should allow far deeper recursion (%d vs %d)", large, small)
}

func TestExecErrorJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  ExecError
		want string
	}{
		{ExecError{Kind: KindNotFound, Name: "add"}, `{"kind":"not_found","name":"add"}`},
		{ExecError{Kind: KindTimeout, Name: "add", DeadlineMS: 500}, `{"kind":"timeout","name":"add","deadline_ms":500}`},
		{ExecError{Kind: KindMemoryExceeded, Name: "add", LimitBytes: 1024}, `{"kind":"memory_exceeded","name":"add","limit_bytes":1024}`},
		{ExecError{Kind: KindJS, Name: "run_js", Message: "TypeError: x"}, `{"kind":"js","name":"run_js","message":"TypeError: x"}`},
		{ExecError{Kind: KindInvalidArgs, Name: "add", Reason: "missing `a`"}, `{"kind":"invalid_args","name":"add","reason":"missing ` + "`a`" + `"}`},
		{ExecError{Kind: KindCapability, Name: "run_js", Capability: "query", Message: "down"}, `{"kind":"capability","name":"run_js","capability":"query","message":"down"}`},
		{ExecError{Kind: KindPendingPromise, Name: "run_js"}, `{"kind":"pending_promise","name":"run_js"}`},
		{ExecError{Kind: KindInternal, Message: "codemode: broke"}, `{"kind":"internal","message":"codemode: broke"}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(&tt.err)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(got))
		assert.Equal(t, tt.want, tt.err.LLMJSON())
		var back ExecError
		require.NoError(t, json.Unmarshal(got, &back))
		assert.Equal(t, tt.err, back)
		assert.True(t, strings.HasPrefix(tt.err.Error(), "codemode: "), tt.err.Error())
	}
	_, err := json.Marshal(&ExecError{Kind: "bogus"})
	assert.Error(t, err)
}

// TestRunCachesBytecode: a script's first run compiles it and caches the
// bytecode, whether the script finishes in its first slice or waits on
// timers and host calls; the second run reads the cache.
func TestRunCachesBytecode(t *testing.T) {
	t.Parallel()
	slow := Capability{Name: "later", Async: true, Func: fn(func(context.Context, json.RawMessage) (any, error) {
		return 7, nil
	})}
	e := newExecutor(t, WithCapability(slow))
	ctx := context.Background()
	runs := []struct{ name, script, want string }{
		{"synchronous", "return 1 + 1", "2"},
		{"awaits a timer", "await new Promise(r => setTimeout(r, 1)); return 3", "3"},
		{"awaits a host call", "return await later({})", "7"},
	}
	for _, r := range runs {
		for i, wantHits := range []uint64{0, 1} {
			before := e.CacheStats()
			res, err := e.Run(ctx, r.script)
			require.NoError(t, err, r.name)
			assert.Equal(t, r.want, string(res.Value), r.name)
			after := e.CacheStats()
			assert.Equal(t, wantHits, after.Hits-before.Hits, "%s: hits of run %d", r.name, i+1)
			assert.Equal(t, 1-wantHits, after.Misses-before.Misses, "%s: misses of run %d", r.name, i+1)
		}
	}
	assert.Equal(t, len(runs), e.CacheStats().Entries)

	// Execute programs wait on their dispatch: cached all the same, and
	// so is the entry their providers make, which other programs share.
	dispatch := func(context.Context, string, string, string) (string, error) { return `{"result":{"ok":true}}`, nil }
	executes := []struct {
		code               string
		wantHits, wantMiss uint64
	}{
		{"async () => (await store.get()).ok", 0, 2},
		{"async () => (await store.get()).ok", 2, 0},
		{"async () => !(await store.get()).ok === false", 1, 1},
	}
	for i, x := range executes {
		before := e.CacheStats()
		res := e.Execute(ctx, Request{
			Code:      x.code,
			Providers: []Provider{{Name: "store", Tools: []string{"get"}}},
			Dispatch:  dispatch,
		})
		require.Nil(t, res.Err)
		assert.Equal(t, "true", string(res.Result))
		after := e.CacheStats()
		assert.Equal(t, x.wantHits, after.Hits-before.Hits, "Execute %d: hits", i+1)
		assert.Equal(t, x.wantMiss, after.Misses-before.Misses, "Execute %d: misses", i+1)
	}
	assert.Equal(t, len(runs)+3, e.CacheStats().Entries)
}

// TestAwaitFreeBodiesRunAsAsyncBodies: a body with no await runs in a plain
// function (see wrapScript), and its outcome is the async body's: the
// same script with a comment naming await (which keeps the async
// wrapper) gives the same value, error and logs, thenables and throws
// after queued jobs included.
func TestAwaitFreeBodiesRunAsAsyncBodies(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	ctx := context.Background()
	// (Not compared: a body that replaces Promise.prototype.then for good
	// and returns a promise. The engine's async function calls the
	// replacement once more than V8 does on that return (Node 20: once);
	// the plain wrapper calls it once, as Node.)
	for _, script := range []string{
		`return {ok: true, n: 2}`,
		`return 1 + 1`,
		``,
		`return Promise.resolve(3)`,
		`return Promise.reject(new Error("no"))`,
		`return {then(resolve) { resolve(5) }}`,
		`return {then(resolve, reject) { reject(new TypeError("refused")) }}`,
		`return {then: 4, x: 1}`,
		`return {get then() { console.log("then read"); return undefined }, y: 2}`,
		`return {get then() { throw new RangeError("getter threw") }}`,
		`return Object.create({then(r) { r("from the prototype") }})`,
		`Object.prototype.then = function (r) { delete Object.prototype.then; r(7) }; return {}`,
		`return new Proxy({a: 1}, {get(t, k) { console.log("get " + String(k)); return t[k] }})`,
		`return [1, 2, {then: null}]`,
		`Promise.resolve().then(() => console.log("job ran")); throw new Error("boom")`,
		`Promise.resolve().then(() => console.log("job ran")); return 1`,
		`setTimeout(() => console.log("timer"), 0); return 2`,
		`throw 42`,
		`null.x`,
		`"use strict"; x = 1`,
		`return (async () => 9)()`,
		`return typeof this`,
		`const p = Promise.resolve(1); p.then = (f) => f(2); return p`,
		`class P extends Promise { then(f, r) { return super.then((v) => f(v * 10), r) } }; return P.resolve(1)`,
		`var \u0061wait = 1; return \u0061wait`, // await spelt with an escape: reserved in the async body
	} {
		got, gotErr := e.Run(ctx, script)
		want, wantErr := e.Run(ctx, script+"\n// await")
		require.Equal(t, wantErr == nil, gotErr == nil, "%s: %v against %v", script, gotErr, wantErr)
		if wantErr != nil {
			assert.Equal(t, wantErr.Error(), gotErr.Error(), script)
		}
		if want == nil {
			assert.Nil(t, got, script)
			continue
		}
		assert.Equal(t, string(want.Value), string(got.Value), script)
		assert.Equal(t, want.Logs, got.Logs, script)
	}
}

// TestKeyMemo: the memo's key is the script's HMAC key, whichever scripts
// share its entries, and scripts past the bound are keyed but not kept.
func TestKeyMemo(t *testing.T) {
	t.Parallel()
	m := keyMemo{seed: maphash.MakeSeed()}
	scripts := make([]string, 0, 3*keyMemoSize)
	for i := range 3 * keyMemoSize { // every entry is shared
		scripts = append(scripts, "return "+strconv.Itoa(i))
	}
	scripts = append(scripts, "return await 1", `return "\u0061"`)
	for round := range 2 {
		for _, s := range scripts {
			k, sync := m.key(s)
			require.Equal(t, scriptKey("run", s), k, "round %d: %s", round, s)
			require.Equal(t, awaitFree(s), sync, s)
		}
	}
	big := strings.Repeat("x", keyMemoMax+1)
	k, sync := m.key(big)
	assert.Equal(t, scriptKey("run", big), k)
	assert.True(t, sync)
	for i := range m.entries {
		if e := m.entries[i].Load(); e != nil {
			assert.LessOrEqual(t, len(e.src), keyMemoMax)
		}
	}
}

// TestProgramKeyMemo: the memo's key for an Execute program is its HMAC
// key, whichever programs share its entries, and the same code over other
// providers (other names, another count, another order) gets its own.
func TestProgramKeyMemo(t *testing.T) {
	t.Parallel()
	m := keyMemo{seed: maphash.MakeSeed()}
	sets := [][]Provider{nil, {{Name: "a"}}, {{Name: "b"}}, {{Name: "a"}, {Name: "b"}}, {{Name: "b"}, {Name: "a"}}}
	codes := make([]string, 0, 2*keyMemoSize)
	for i := range 2 * keyMemoSize { // every entry is shared
		codes = append(codes, "async () => "+strconv.Itoa(i))
	}
	seen := map[[32]byte]bool{}
	for round := range 2 {
		for _, c := range codes {
			for _, ps := range sets {
				k := m.program(c, ps)
				require.Equal(t, programKey(c, ps), k, "round %d: %s over %v", round, c, ps)
				if round == 0 {
					require.False(t, seen[k], "%s over %v shares a key", c, ps)
					seen[k] = true
				}
			}
		}
	}
	big := strings.Repeat("x", keyMemoMax+1)
	assert.Equal(t, programKey(big, sets[1]), m.program(big, sets[1]))
	for i := range m.entries {
		if e := m.entries[i].Load(); e != nil {
			assert.LessOrEqual(t, len(e.src), keyMemoMax)
		}
	}
}
