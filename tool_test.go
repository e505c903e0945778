package codemode

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"lukechampine.com/blake3"
)

const addParams = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

func addTool(name string) ToolSource {
	return ToolSource{Name: name, Description: "Add two numbers.", Params: json.RawMessage(addParams),
		Source: "({a, b}) => a + b", SelfTest: "tool({a: 1, b: 2}) === 3"}
}

func registerErr(t *testing.T, err error) *RegisterError {
	t.Helper()
	var re *RegisterError
	require.ErrorAs(t, err, &re)
	return re
}

func TestRegisterLifecycle(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(memoryLimits(4<<20)),
		WithCapability(Capability{Name: "lookup", Func: fn(func(context.Context, json.RawMessage) (any, error) { return 7, nil })}))
	timed := newExecutor(t, WithLimits(deadlineLimits(100*time.Millisecond)))
	long := strings.Repeat("a", 65)
	tests := []struct {
		name string
		src  ToolSource
		want string // RegisterError JSON, or "" for success
	}{
		{"expression", ToolSource{Name: "expr", Source: "(args) => args.x * 2"}, ""},
		{"named function", ToolSource{Name: "named", Source: "function double(args) { return args.x * 2 }"}, ""},
		{"iife", ToolSource{Name: "iife", Source: "(() => { const k = 2; return (args) => args.x * k })()"}, ""},
		{"trailing semicolon", ToolSource{Name: "semi", Source: "(args) => args.x * 2;\n"}, ""},
		{"async self-test", ToolSource{Name: "async", Source: "async (args) => { await null; return args.x }",
			SelfTest: "(await tool({x: 3})) === 3"}, ""},
		{"self-test returning a promise", ToolSource{Name: "promise", Source: "async (args) => args.x", SelfTest: "tool({x: 1})"}, ""},
		{"self-test with a capability", ToolSource{Name: "withcap", Source: "(args) => lookup({}) + args.x",
			SelfTest: "tool({x: 1}) === 8"}, ""},
		{"self-test false", ToolSource{Name: "selffalse", Source: "(args) => 1", SelfTest: "tool({}) === 2"},
			`{"stage":"self_test","message":"the self-test completed with false"}`},
		{"self-test resolving false", ToolSource{Name: "selfasyncfalse", Source: "async () => false", SelfTest: "tool({})"},
			`{"stage":"self_test","message":"the self-test completed with false"}`},
		{"self-test throws", ToolSource{Name: "selfthrow", Source: "(args) => 1", SelfTest: "throw new Error('nope')"},
			`{"stage":"self_test","message":"Error: nope\n    at <anonymous> (selftest.js:1:11)"}`},
		{"self-test falsy but not false", ToolSource{Name: "selfzero", Source: "(args) => 0", SelfTest: "tool({})"}, ""},
		// The self-test takes every shape a run does.
		{"self-test as an arrow", ToolSource{Name: "selfarrow", Source: "(args) => args.x", SelfTest: "async () => (await tool({x: 2})) === 3"},
			`{"stage":"self_test","message":"the self-test completed with false"}`},
		{"self-test in a fence", ToolSource{Name: "selffence", Source: "(args) => args.x", SelfTest: "Test:\n```js\nconst r = tool({x: 4});\nr === 4\n```"}, ""},
		{"self-test statements ending false", ToolSource{Name: "selfstmts", Source: "(args) => args.x", SelfTest: "const r = tool({x: 1})\nr === 2"},
			`{"stage":"self_test","message":"the self-test completed with false"}`},
		{"self-test syntax error", ToolSource{Name: "selfsyntax", Source: "(args) => 1", SelfTest: "Test:\n```js\nconst r = ;\n```"},
			`{"stage":"self_test","message":"SyntaxError: unexpected token in expression: ';'\n    at selftest.js:3:11"}`},
		{"empty name", ToolSource{Name: "", Source: "x => x"}, `{"stage":"invalid_name","name":"","reason":"the name is empty"}`},
		{"long name", ToolSource{Name: long, Source: "x => x"},
			`{"stage":"invalid_name","name":"` + long + `","reason":"the name is 65 characters long; at most 64 are allowed"}`},
		{"bad character", ToolSource{Name: "my.tool", Source: "x => x"},
			`{"stage":"invalid_name","name":"my.tool","reason":"the name contains '.': only [A-Za-z0-9_-] are allowed"}`},
		{"schema not an object", ToolSource{Name: "s1", Params: json.RawMessage(`[1]`), Source: "x => x"},
			`{"stage":"invalid_schema","reason":"the schema must be a JSON object"}`},
		{"schema type", ToolSource{Name: "s2", Params: json.RawMessage(`{"type":"array"}`), Source: "x => x"},
			`{"stage":"invalid_schema","reason":"the schema's \"type\" must be \"object\", not \"array\""}`},
		{"properties not an object", ToolSource{Name: "s3", Params: json.RawMessage(`{"properties":[]}`), Source: "x => x"},
			`{"stage":"invalid_schema","reason":"\"properties\" must be an object"}`},
		{"property not an object", ToolSource{Name: "s4", Params: json.RawMessage(`{"properties":{"a":1}}`), Source: "x => x"},
			`{"stage":"invalid_schema","reason":"property ` + "`a`" + ` must be a schema object"}`},
		{"required not strings", ToolSource{Name: "s5", Params: json.RawMessage(`{"properties":{"a":{}},"required":[1]}`), Source: "x => x"},
			`{"stage":"invalid_schema","reason":"\"required\" must be an array of strings"}`},
		{"required names a missing property", ToolSource{Name: "s6", Params: json.RawMessage(`{"properties":{"a":{}},"required":["b"]}`), Source: "x => x"},
			`{"stage":"invalid_schema","reason":"\"required\" names ` + "`b`" + `, which is not in \"properties\""}`},
		{"compile", ToolSource{Name: "c1", Source: "(args) => {"},
			`{"stage":"compile","message":"SyntaxError: unexpected end of input\n    at tool.js:1:12"}`},
		{"two statements", ToolSource{Name: "c2", Source: "const x = 1; (args) => x"},
			`{"stage":"compile","message":"SyntaxError: unexpected token in expression: 'const'\n    at tool.js:1:1"}`},
		{"throws while evaluating", ToolSource{Name: "c3", Source: "(() => { throw new TypeError('at load') })()"},
			`{"stage":"compile","message":"TypeError: at load\n    at <anonymous> (tool.js:1:20)\n    at <anonymous> (tool.js:1:41)"}`},
		{"number", ToolSource{Name: "n1", Source: "42"}, `{"stage":"not_a_function","evaluated_type":"number"}`},
		{"object", ToolSource{Name: "n2", Source: "({})"}, `{"stage":"not_a_function","evaluated_type":"object"}`},
		{"undefined", ToolSource{Name: "n3", Source: "undefined"}, `{"stage":"not_a_function","evaluated_type":"undefined"}`},
		{"string", ToolSource{Name: "n4", Source: "'x'"}, `{"stage":"not_a_function","evaluated_type":"string"}`},
		{"timeout instantiating", ToolSource{Name: "t1", Source: "(() => { for (;;) {} })()"},
			`{"stage":"execution","kind":"timeout","name":"t1","deadline_ms":100}`},
		{"timeout self-testing", ToolSource{Name: "t2", Source: "(a) => { for (;;) {} }", SelfTest: "tool({})"},
			`{"stage":"execution","kind":"timeout","name":"t2","deadline_ms":100}`},
		{"memory instantiating", ToolSource{Name: "m1", Source: "(() => { const a = []; for (;;) a.push('x'.repeat(99)) })()"},
			`{"stage":"execution","kind":"memory_exceeded","name":"m1","limit_bytes":4194304}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := e
			if strings.HasPrefix(tt.name, "timeout") {
				e = timed
			}
			got, err := e.Register(context.Background(), tt.src)
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.src.Name, got.Name)
				assert.Equal(t, tt.src.SelfTest != "", got.SelfTested)
				return
			}
			assert.Equal(t, tt.want, registerErr(t, err).LLMJSON())
			_, ok := e.Tool(tt.src.Name)
			assert.False(t, ok, "a failed registration stores nothing")
		})
	}
}

func TestFailedRegistrationStoresNothing(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, src := range []ToolSource{
		{Name: "a", Source: "42"},
		{Name: "b", Source: "(x) => x", SelfTest: "false"},
		{Name: "c", Source: "(x) => "},
	} {
		_, err := e.Register(context.Background(), src)
		require.Error(t, err)
	}
	assert.Equal(t, 0, e.CacheStats().Entries)
	assert.Empty(t, e.Tools())
}

func TestRegisteredTool(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	src := addTool("add")
	got, err := e.Register(context.Background(), src)
	require.NoError(t, err)
	sum := blake3.Sum256([]byte(src.Source))
	assert.Equal(t, RegisteredTool{Name: "add", Description: "Add two numbers.", Params: json.RawMessage(addParams),
		SourceHash: hex.EncodeToString(sum[:]), SelfTested: true}, got)
	meta, ok := e.Tool("add")
	assert.True(t, ok)
	assert.Equal(t, got, meta)

	_, err = e.Register(context.Background(), addTool("add"))
	assert.Equal(t, `{"stage":"duplicate","name":"add"}`, registerErr(t, err).LLMJSON())
	assert.Equal(t, `{"stage":"duplicate","name":"add"}`, registerErr(t, e.Validate(addTool("add"))).LLMJSON())
	assert.NoError(t, e.Validate(addTool("other")))
}

func TestCall(t *testing.T) {
	t.Parallel()
	// A deadline no call races (parsing 9,000 nested arrays took past
	// 200 ms in checked mode on a loaded machine); the slow tool's call
	// gets 200 ms of its own.
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}),
		WithCapability(Capability{Name: "rate", Async: true, Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
			return 1.5, nil
		})}))
	ctx := context.Background()
	for _, src := range []ToolSource{
		addTool("add"),
		{Name: "convert", Params: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number","minimum":0},"to":{"type":"string","enum":["eur","usd"]},"when":{"type":"object","properties":{"day":{"type":"integer"}}}},"required":["to","amount"]}`),
			Source: "async ({amount, to}) => ({ amount: amount * await rate({to}), to })"},
		{Name: "fails", Source: "() => { throw new RangeError('out of range') }"},
		{Name: "slow", Source: "() => { for (;;) {} }"},
		{Name: "noargs", Source: "(args) => Object.keys(args).length"},
	} {
		_, err := e.Register(ctx, src)
		require.NoError(t, err, src.Name)
	}
	tests := []struct {
		name, args string
		want       string // a value, or the ExecError's JSON
	}{
		{"add", `{"a":1,"b":2}`, `3`},
		{"add", `  {"a":1.5,"b":-2}  `, `-0.5`},
		{"convert", `{"amount":10,"to":"eur"}`, `{"amount":15,"to":"eur"}`},
		{"noargs", `{}`, `0`},
		{"missing", `{}`, `{"kind":"not_found","name":"missing"}`},
		{"add", `[1,2]`, `{"kind":"invalid_args","name":"add","reason":"the arguments must be a JSON object"}`},
		{"add", `null`, `{"kind":"invalid_args","name":"add","reason":"the arguments must be a JSON object"}`},
		{"add", ``, `{"kind":"invalid_args","name":"add","reason":"the arguments must be a JSON object"}`},
		{"add", `{"b":1}`, "{\"kind\":\"invalid_args\",\"name\":\"add\",\"reason\":\"missing required argument `a`\"}"},
		{"convert", `{}`, "{\"kind\":\"invalid_args\",\"name\":\"convert\",\"reason\":\"missing required arguments `to`, `amount`\"}"},
		{"add", `{"a":"1","b":2}`, "{\"kind\":\"invalid_args\",\"name\":\"add\",\"reason\":\"`a`: got string, want number\"}"},
		{"convert", `{"amount":-1,"to":"gbp"}`, "{\"kind\":\"invalid_args\",\"name\":\"convert\",\"reason\":\"`amount`: minimum: got -1, want 0; `to`: value must be one of 'eur', 'usd'\"}"},
		{"convert", `{"amount":1,"to":"eur","when":{"day":1.5}}`, "{\"kind\":\"invalid_args\",\"name\":\"convert\",\"reason\":\"`when.day`: got number, want integer\"}"},
		{"fails", `{}`, `{"kind":"js","name":"fails","message":"RangeError: out of range\n    at <anonymous> (tool.js:1:19)","line":1,"column":19}`},
		{"slow", `{}`, `timeout`}, // deadline_ms: what was left of the caller's 200 ms when the call began
		// The engine's parser refuses invalid UTF-8, which Go's decoders
		// accept: decided before any sandbox, as the arguments' fault.
		{"noargs", "{\"s\":\"\xff\"}", `{"kind":"invalid_args","name":"noargs","reason":"the arguments are not valid UTF-8 (byte 6 is 0xff)"}`},
		{"noargs", "{\"s\":\"\xed\xa0\x80\"}", `{"kind":"invalid_args","name":"noargs","reason":"the arguments are not valid UTF-8 (byte 6 is 0xed)"}`},
		{"noargs", "{\"s\":\"\xc0\x80\"}", `{"kind":"invalid_args","name":"noargs","reason":"the arguments are not valid UTF-8 (byte 6 is 0xc0)"}`},
		{"noargs", `{"s":"\ud800 é 😀"}`, `1`},
		// Valid JSON nested deeper than the sandbox's stack can parse.
		{"noargs", `{"a":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`,
			`{"kind":"invalid_args","name":"noargs","reason":"the sandbox cannot read the arguments: RangeError: Maximum call stack size exceeded"}`},
	}
	for _, tt := range tests {
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		if tt.name == "slow" {
			callCtx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
		}
		got, err := e.Call(callCtx, tt.name, json.RawMessage(tt.args))
		cancel()
		if tt.want == "timeout" {
			ee := execErr(t, err)
			assert.Equal(t, KindTimeout, ee.Kind)
			assert.Equal(t, tt.name, ee.Name)
			assert.True(t, ee.DeadlineMS > 0 && ee.DeadlineMS <= 200, "deadline_ms %d", ee.DeadlineMS)
			continue
		}
		if strings.HasPrefix(tt.want, `{"kind"`) {
			assert.Equal(t, tt.want, execErr(t, err).LLMJSON(), "Call(%s, %s)", tt.name, tt.args)
			continue
		}
		require.NoError(t, err, "Call(%s, %s)", tt.name, tt.args)
		assert.JSONEq(t, tt.want, string(got), "Call(%s, %s)", tt.name, tt.args)
	}
}

// TestCallLeavesArgumentsAlone: Call never writes into the caller's
// buffer, not even into its spare capacity. The arguments sit on a
// read-only page (a write would fault) with the rest of the page as
// capacity, shared by 8 goroutines calling at once.
func TestCallLeavesArgumentsAlone(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	_, err := e.Register(context.Background(), ToolSource{Name: "echo", Source: "(a) => a"})
	require.NoError(t, err)
	page, err := syscall.Mmap(-1, 0, os.Getpagesize(), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(page) })
	const text = "{\"a\":1}  \n"
	copy(page, text)
	require.NoError(t, syscall.Mprotect(page, syscall.PROT_READ))
	args := json.RawMessage(page[:len(text)])
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				got, err := e.Call(context.Background(), "echo", args)
				assert.NoError(t, err)
				assert.Equal(t, `{"a":1}`, string(got))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, text, string(page[:len(text)]))
	assert.Zero(t, page[len(text)], "nothing was written past the arguments")
}

func TestBytecodeCache(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	ctx := context.Background()

	// Tools with the same source share one entry.
	_, err := e.Register(ctx, addTool("add1"))
	require.NoError(t, err)
	_, err = e.Register(ctx, addTool("add2"))
	require.NoError(t, err)
	s := e.CacheStats()
	assert.Equal(t, 1, s.Entries)
	assert.Equal(t, uint64(1), s.Hits, "the second registration reads the first's bytecode")
	assert.Equal(t, uint64(1), s.Misses)

	// Calls never recompile.
	for i := 0; i < 5; i++ {
		_, err := e.Call(ctx, "add1", json.RawMessage(`{"a":1,"b":2}`))
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(1), e.CacheStats().Misses)

	assert.Equal(t, []string{"add1", "add2"}, names(e.Tools()))
	assert.True(t, e.Deregister("add1"))
	assert.False(t, e.Deregister("add1"))
	assert.Equal(t, 1, e.CacheStats().Entries, "still used by add2")
	_, err = e.Call(ctx, "add2", json.RawMessage(`{"a":1,"b":2}`))
	require.NoError(t, err)
	assert.True(t, e.Deregister("add2"))
	assert.Equal(t, 0, e.CacheStats().Entries, "unshared entries are freed")
	_, err = e.Call(ctx, "add2", json.RawMessage(`{"a":1,"b":2}`))
	assert.Equal(t, KindNotFound, execErr(t, err).Kind)

	// Run scripts are cached too, and a cached script behaves the same.
	before := e.CacheStats()
	for i := 0; i < 3; i++ {
		_, err := e.Run(ctx, "const x = 40;\nreturn x + nope")
		assert.Equal(t, "ReferenceError: nope is not defined\n    at <anonymous> (script.js:2:12)", execErr(t, err).Message)
	}
	after := e.CacheStats()
	assert.Equal(t, before.Misses+1, after.Misses)
	assert.Equal(t, before.Hits+2, after.Hits)
	assert.Equal(t, before.Entries+1, after.Entries)
}

func names(tools []RegisteredTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithCacheSize(4096))
	for i := 0; i < 50; i++ {
		_, err := e.Run(context.Background(), fmt.Sprintf("return %d", i))
		require.NoError(t, err)
	}
	s := e.CacheStats()
	assert.LessOrEqual(t, s.Bytes, 4096)
	assert.Greater(t, s.Entries, 1)
	assert.Less(t, s.Entries, 50, "older scripts were evicted")
	// The most recent script is still cached; the first is not.
	_, err := e.Run(context.Background(), "return 49")
	require.NoError(t, err)
	assert.Equal(t, s.Hits+1, e.CacheStats().Hits)
	_, err = e.Run(context.Background(), "return 0")
	require.NoError(t, err)
	assert.Equal(t, s.Misses+1, e.CacheStats().Misses)

	// Registered tools are never evicted, whatever the bound.
	_, err = e.Register(context.Background(), addTool("pinned"))
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		_, err := e.Run(context.Background(), fmt.Sprintf("return 'filler %d'", i))
		require.NoError(t, err)
	}
	misses := e.CacheStats().Misses
	_, err = e.Call(context.Background(), "pinned", json.RawMessage(`{"a":1,"b":1}`))
	require.NoError(t, err)
	assert.Equal(t, misses, e.CacheStats().Misses)
	_, err = New(WithCacheSize(-1))
	assert.ErrorIs(t, err, ErrInvalidLimits)
}

// TestToolHammer registers, calls and deregisters concurrently.
func TestToolHammer(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 5 * time.Second}))
	const workers, rounds = 8, 15
	var wg sync.WaitGroup
	var calls atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				name := fmt.Sprintf("t%d", (w+r)%5)
				src := ToolSource{Name: name, Params: json.RawMessage(addParams),
					Source: fmt.Sprintf("({a, b}) => a + b + %d", (w+r)%3)}
				_, err := e.Register(context.Background(), src)
				var re *RegisterError
				if err != nil && (!errors.As(err, &re) || re.Stage != StageDuplicate) {
					t.Errorf("Register: %v", err)
				}
				out, err := e.Call(context.Background(), name, json.RawMessage(`{"a":1,"b":2}`))
				var ee *ExecError
				switch {
				case err == nil:
					calls.Add(1)
					if s := string(out); s != "3" && s != "4" && s != "5" {
						t.Errorf("Call = %s", s)
					}
				case !errors.As(err, &ee) || ee.Kind != KindNotFound:
					t.Errorf("Call: %v", err)
				}
				if r%3 == 0 {
					e.Deregister(name)
				}
				_ = e.Tools()
				_ = e.CacheStats()
			}
		}()
	}
	wg.Wait()
	assert.Greater(t, calls.Load(), int64(0))
	for _, tool := range e.Tools() {
		e.Deregister(tool.Name)
	}
	assert.Equal(t, 0, e.CacheStats().Entries)
}

// TestDescribe: the default description declares the APIs in TypeScript.
func TestDescribe(t *testing.T) {
	t.Parallel()
	apis := []ToolAPI{
		{JSName: "get_weather", Description: "Get current weather.", Async: true, Parameters: json.RawMessage(
			`{"type":"object","properties":{"city":{"type":"string","description":"city name"}},"required":["city"]}`),
			Returns: json.RawMessage(`{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`)},
	}
	want := contract(false, false, true) + "\n\nAPIs (TypeScript):\n" +
		"type GetWeatherInput = {\n  /** city name */\n  city: string;\n};\n" +
		"type GetWeatherOutput = {\n  temp: number;\n};\n" +
		"/** Get current weather. */\ndeclare function get_weather(args: GetWeatherInput): Promise<GetWeatherOutput>;\n" +
		"\nExample:\nconst r = await get_weather({city: \"…\"})\nreturn { r }"
	assert.Equal(t, want, Describe(apis))
	apis[0].Async = false
	assert.Contains(t, Describe(apis), "declare function get_weather(args: GetWeatherInput): GetWeatherOutput;")
	assert.Contains(t, Describe(apis), "returns its result; a failed call throws")
	assert.Equal(t, describeContract, Describe(nil))

	// A tool that takes no input is declared and shown called without one.
	now := Describe([]ToolAPI{{JSName: "now", Async: true, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}})
	assert.Contains(t, now, "declare function now(): Promise<unknown>;")
	assert.True(t, strings.HasSuffix(now, "\nExample:\nconst r = await now()\nreturn { r }"), now)
}

// TestDescribeListing: the reference's one-line-per-API description.
func TestDescribeListing(t *testing.T) {
	t.Parallel()
	got := DescribeListing([]ToolAPI{
		{JSName: "get_weather", Description: "Get current weather.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string","enum":["c","f"]}},"required":["city"]}`)},
		{JSName: "search", Description: "Search the web.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["query"]}`)},
		{JSName: "freeform", Parameters: json.RawMessage(`{"type":"object"}`)},
		{JSName: "nested", Description: "Nested", Parameters: json.RawMessage(
			`{"properties":{"filter":{"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer"}},"mode":{"enum":["all",1]}},"required":["ids"]},"either":{"type":["string","null"]}}}`)},
	})
	lines := strings.Split(got, "\n")
	assert.True(t, strings.HasPrefix(got, describeContract+"\n\nAPIs:\n"), got)
	assert.Contains(t, lines, "- get_weather(args): Get current weather. args: {city: string, units?: c|f}")
	assert.Contains(t, lines, "- search(args): Search the web. args: {query: string, limit?: integer, tags?: string[]}")
	assert.Contains(t, lines, "- freeform(args): (no description). args: object")
	assert.Contains(t, lines, "- nested(args): Nested. args: {filter?: {ids: integer[], mode?: all|1}, either?: string|null}")
	assert.True(t, strings.HasSuffix(got, "\nExample:\nconst r = get_weather({city: \"…\"})\nreturn { r }"), got)
	assert.Equal(t, describeContract, DescribeListing(nil))

	var schema map[string]any
	require.NoError(t, json.Unmarshal(RunJSParameters(), &schema))
	assert.Equal(t, []any{"code"}, schema["required"])
}

// hostTool is a Tool for tests: NewTool's own type.
type hostTool = definedTool

// TestCodeModeToolAsync: by default the tools are async: calls overlap,
// a tool that ignores its context is abandoned at the deadline, arguments
// are checked against the tool's schema, and Invoke says which results
// are errors.
func TestCodeModeToolAsync(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{}) // the test's end, which the stuck tool does heed
	t.Cleanup(func() { close(ended) })
	// a, b, c and d meet: each returns once all four are inside, so the
	// Promise.all below completes only if the calls overlap (in sequence
	// the first would wait for the others until the deadline).
	var arrived atomic.Int32
	met := make(chan struct{})
	tool := func(name string, call func(ctx context.Context) error) hostTool {
		return hostTool{def: ToolDefinition{Name: name, Parameters: json.RawMessage(
			`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
			Returns: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
			call: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				if err := call(ctx); err != nil {
					return nil, err
				}
				return args, nil
			}}
	}
	meet := func(ctx context.Context) error {
		if arrived.Add(1) == 4 {
			close(met)
		}
		select {
		case <-met:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	stuck := func(context.Context) error { // ignores its context
		select {
		case <-time.After(3 * time.Second):
		case <-ended:
		}
		return nil
	}
	tools := []Tool{tool("a", meet), tool("b", meet), tool("c", meet), tool("d", meet), tool("stuck", stuck)}
	cm, err := NewCodeModeTool(tools, Limits{Deadline: 2 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	assert.Contains(t, cm.Description(), "returns a Promise of its result")
	assert.Contains(t, cm.Description(), "declare function a(args: AInput): Promise<AOutput>;")
	assert.Contains(t, cm.Description(), "const r = await a(")
	ctx := context.Background()

	r, err := cm.Invoke(ctx, json.RawMessage(`{"code":"const rs = await Promise.all([a({n: 1}), b({n: 2}), c({n: 3}), d({n: 4})]); return rs.map((r) => r.n)"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"result":[1,2,3,4]}`, string(r.Output), "the four calls overlap")
	assert.False(t, r.IsError)

	r, err = cm.Invoke(ctx, json.RawMessage(`{"code":"try { await a({}) } catch (e) { return [e.name, e.message] }"}`))
	require.NoError(t, err)
	assert.Equal(t, "{\"result\":[\"TypeError\",\"a: `n` is required\"]}", string(r.Output))

	r, err = cm.Invoke(ctx, json.RawMessage(`{"code":"await a({n: 'x'})"}`))
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Contains(t, string(r.Output), "a: `n`: got string, want integer")

	short, err := NewCodeModeTool(tools, Limits{Deadline: 300 * time.Millisecond})
	require.NoError(t, err)
	defer short.Close()
	start := time.Now()
	r, err = short.Invoke(ctx, json.RawMessage(`{"code":"return await stuck({n: 1})"}`))
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Equal(t, `{"kind":"timeout","name":"run_js","deadline_ms":300,"effects":{"summary":"stuck did not return (it may have taken effect) before the timeout","started":1,"completed":0,"calls":[{"seq":0,"tool":"stuck","effect":"write","outcome":"running","ms":0}]}}`,
		noTimes(r.Output))
	assert.Less(t, time.Since(start), 2*time.Second, "a tool that ignores its context does not hold the run (it sleeps 3 s)")
}

func TestCodeModeTool(t *testing.T) {
	t.Parallel()
	weather := hostTool{
		def: ToolDefinition{Name: "get-weather", Description: "Get current weather.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		call: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			var a struct{ City string }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			if a.City == "Atlantis" {
				return nil, errors.New("unknown city")
			}
			return json.RawMessage(fmt.Sprintf(`{"city":%q,"temp":21}`, a.City)), nil
		},
	}
	plain := hostTool{def: ToolDefinition{Name: "motd"}, call: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage("hello, not json"), nil
	}}
	// The reference's contract: sync-looking calls.
	cm, err := NewCodeModeTool([]Tool{weather, plain}, Limits{Deadline: 100 * time.Millisecond}, WithSyncTools())
	require.NoError(t, err)
	defer cm.Close()
	def := cm.Definition()
	assert.Equal(t, RunJSToolName, def.Name)
	assert.Equal(t, RunJSParameters(), def.Parameters)
	assert.Contains(t, def.Description, "/** Get current weather. */\ndeclare function get_weather(args: GetWeatherInput): unknown;")
	assert.Contains(t, def.Description, "declare function motd(args: MotdInput): unknown;")
	assert.Equal(t, 100*time.Millisecond, cm.Limits().Deadline)

	ctx := context.Background()
	tests := []struct{ args, want string }{
		{`{"code":"return get_weather({city: 'Paris'}).temp"}`, `{"result":21}`},
		{`{"code":"console.log(motd()); return 1"}`, `{"result":1,"logs":["hello, not json"]}`},
		{`{"code":"try { get_weather({city: 'Atlantis'}) } catch (e) { return e.message }"}`, "{\"result\":\"tool `get-weather` failed: unknown city\"}"},
		{`{"code":"get_weather({city: 'Atlantis'})"}`, "{\"kind\":\"capability\",\"name\":\"run_js\",\"capability\":\"get_weather\",\"message\":\"tool `get-weather` failed: unknown city\",\"line\":1,\"column\":1," +
			`"effects":{"summary":"get_weather failed (it may have written first)","started":1,"completed":1,"calls":[{"seq":0,"tool":"get_weather","effect":"write","outcome":"error","ms":0}]}}`},
		{`{"code":"console.log('a'); null.x"}`, `{"kind":"js","name":"run_js","message":"TypeError: cannot read property 'x' of null\n    at <anonymous> (script.js:1:24)","line":1,"column":24` + noToolRan + `,"logs":["a"]}`},
		{`{"code":"for (;;) {}"}`, `{"kind":"timeout","name":"run_js","deadline_ms":100` + noToolRan + `}`},
		{`{"script":"return 1"}`, "{\"kind\":\"invalid_args\",\"name\":\"run_js\",\"reason\":\"missing required argument `code`: the body of an async function, as a string\"" + noToolRan + "}"},
		{`{"code":42}`, "{\"kind\":\"invalid_args\",\"name\":\"run_js\",\"reason\":\"`code` must be a string\"" + noToolRan + "}"},
		{`"return 1"`, "{\"kind\":\"invalid_args\",\"name\":\"run_js\",\"reason\":\"the arguments must be a JSON object with a string `code`\"" + noToolRan + "}"},
	}
	for _, tt := range tests {
		got, err := cm.Call(ctx, json.RawMessage(tt.args))
		require.NoError(t, err, tt.args)
		assert.Equal(t, tt.want, noTimes(got), tt.args)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = cm.Call(cancelled, json.RawMessage(`{"code":"return 1"}`))
	assert.ErrorIs(t, err, context.Canceled, "an internal failure is a Go error")

	assert.Equal(t, "custom", cm.WithDescription("custom").Definition().Description)

	_, err = NewCodeModeTool([]Tool{hostTool{def: ToolDefinition{Name: "my-tool"}}, hostTool{def: ToolDefinition{Name: "my.tool"}}}, Limits{})
	re := registerErr(t, err)
	assert.Equal(t, `{"stage":"invalid_capability","name":"my_tool","reason":"tools \"my-tool\" and \"my.tool\" both map to the identifier \"my_tool\""}`, re.LLMJSON())
}

func TestSandboxTool(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	_, err := e.Register(context.Background(), ToolSource{Name: "count", Description: "Counts keys.", Source: "(a) => Object.keys(a).length"})
	require.NoError(t, err)
	st, ok := e.SandboxTool("count")
	require.True(t, ok)
	assert.Equal(t, ToolDefinition{Name: "count", Description: "Counts keys."}, st.Definition())
	out, err := st.Call(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "0", string(out), "empty arguments are {}")
	out, err = st.Call(context.Background(), json.RawMessage(`{"a":1}`))
	require.NoError(t, err)
	assert.Equal(t, "1", string(out))
	_, err = st.Call(context.Background(), json.RawMessage(`[]`))
	assert.Equal(t, KindInvalidArgs, execErr(t, err).Kind)
	_, ok = e.SandboxTool("missing")
	assert.False(t, ok)

	// Code Mode over a sandbox tool.
	cm, err := NewCodeModeTool([]Tool{st}, Limits{Deadline: 20 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	got, err := cm.Call(context.Background(), json.RawMessage(`{"code":"return count({x: 1, y: 2})"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"result":2}`, string(got))
}

// TestToolCapabilityFailures: a capability failure that escapes a tool is
// kind capability whichever way it escapes: thrown synchronously, caught
// and rethrown, or rejected.
func TestToolCapabilityFailures(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithCapability(failing("flaky", "upstream exploded", false)),
		WithCapability(failing("aflaky", "async exploded", true)))
	// The failure is placed at the call that failed, in the tool's source.
	want := func(col int) string {
		return fmt.Sprintf(`{"kind":"capability","name":"caller","capability":"flaky","message":"upstream exploded","line":1,"column":%d}`, col)
	}
	tests := []struct{ source, want string }{
		{"(args) => flaky({})", want(11)},
		{"(args) => { try { flaky({}) } catch (e) { throw e } }", want(19)},
		{"(args) => { const inner = () => flaky({}); return inner() }", want(33)},
		{"async (args) => flaky({})", want(17)},
		{"(args) => Promise.reject((() => { try { flaky({}) } catch (e) { return e } })())", want(41)},
		{"async (args) => { await aflaky({}) }",
			`{"kind":"capability","name":"caller","capability":"aflaky","message":"async exploded","line":1,"column":25}`},
		{"(args) => { try { flaky({}) } catch (e) { throw new Error('wrapped') } }",
			`{"kind":"js","name":"caller","message":"Error: wrapped\n    at <anonymous> (tool.js:1:53)","line":1,"column":53}`},
	}
	for i, tt := range tests {
		e.Deregister("caller")
		_, err := e.Register(context.Background(), ToolSource{Name: "caller", Source: tt.source})
		require.NoError(t, err, "case %d", i)
		_, err = e.Call(context.Background(), "caller", json.RawMessage(`{}`))
		assert.Equal(t, tt.want, execErr(t, err).LLMJSON(), "Call of %q", tt.source)
	}
	// Registration: a self-test that lets it escape fails as self_test.
	_, err := e.Register(context.Background(), ToolSource{Name: "selftested", Source: "(args) => flaky({})",
		SelfTest: "tool({})"})
	assert.Equal(t, `{"stage":"self_test","message":"upstream exploded"}`, registerErr(t, err).LLMJSON())
}

// TestCallRefusesUnrepresentableNumbers: a number a float64 cannot hold
// would reach the tool as Infinity; it is refused instead (found by
// FuzzCall). Numbers inside strings are text, not numbers.
func TestCallRefusesUnrepresentableNumbers(t *testing.T) {
	e := newExecutor(t)
	_, err := e.Register(context.Background(), ToolSource{Name: "echo", Params: json.RawMessage(`{"type":"object"}`), Source: "(a) => a"})
	require.NoError(t, err)
	for _, c := range []struct{ args, reason string }{
		{`{"n":1e400}`, "the number 1e400 is out of range: JavaScript cannot represent it"},
		{`{"xs":[1,{"m":-2E+999}]}`, "the number -2E+999 is out of range: JavaScript cannot represent it"},
		{`{"s":"1e400","t":"\"2e999"}`, ""},
		{`{"n":1e308,"small":1e-400}`, ""},
	} {
		_, err := e.Call(context.Background(), "echo", json.RawMessage(c.args))
		if c.reason == "" {
			assert.NoError(t, err, c.args)
			continue
		}
		var ee *ExecError
		require.ErrorAs(t, err, &ee, c.args)
		assert.Equal(t, KindInvalidArgs, ee.Kind)
		assert.Equal(t, c.reason, ee.Reason)
	}
}
