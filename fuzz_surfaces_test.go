package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/fuzzcheck"
)

// fuzzLimits keep every fuzzed run short; a hang is anything past
// hangBound (the deadline with room for a loaded machine under -race).
var fuzzLimits = codemode.Limits{Memory: 8 << 20, Deadline: 100 * time.Millisecond, Payload: 64 << 10, Logs: 4 << 10}

const hangBound = 10 * time.Second

// calmLimits are for targets whose programs cannot loop (only the answer,
// the schema varies): a deadline a loaded machine never reaches, so any
// timeout would be a hang the fuzzed input caused.
var calmLimits = codemode.Limits{Memory: 8 << 20, Deadline: 5 * time.Second, Payload: 64 << 10, Logs: 4 << 10}

func fuzzExecutor(f *testing.F, opts ...codemode.Option) *codemode.Executor {
	e, err := codemode.New(append([]codemode.Option{codemode.WithLimits(fuzzLimits)}, opts...)...)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	return e
}

// scriptKind reports whether a script (not the host) can cause kind.
func scriptKind(k codemode.ErrorKind) bool {
	switch k {
	case codemode.KindJS, codemode.KindTimeout, codemode.KindMemoryExceeded, codemode.KindPendingPromise, codemode.KindCapability,
		codemode.KindInvalidArgs:
		return true
	}
	return false
}

// FuzzExecute: a program and its provider declarations (names, tools,
// schemas — what an MCP server or a model controls), the dispatch echoing
// each call. The outcome is a value (valid JSON), a refusal naming the bad
// declaration, or a typed error a program can cause — never internal
// (Execute turns a Go panic into one), and never later than the deadline
// allows.
func FuzzExecute(f *testing.F) {
	seeds := []struct{ code, providers string }{
		{"async () => 1", "[]"},
		{"async () => await store.get({id: 1})", `[{"Name":"store","Tools":["get"],"ObjectArgs":true}]`},
		{"async () => Promise.all([a.x(1), a.y([2])])", `[{"Name":"a","Tools":["x","y"]}]`},
		{"async () => { try { return await a.b.c() } catch (e) { return e.message } }", `[{"Name":"a","Tools":["b.c"],"APIs":[{"Name":"b.c","Params":{"type":"object"}}]}]`},
		{"async () => { for (;;) {} }", `[{"Name":"loop","Tools":[]}]`},
		{"async () => x.y", `[{"Name":"x","Tools":["y"],"APIs":[{"Name":"y","Params":{"type":"object","properties":{"n":{"type":"integer"}}},"Returns":{"type":"string"}}]}]`},
		{"async () => 1", `[{"Name":"console","Tools":[]}]`},
		{"async () => 1", `[{"Name":"a b","Tools":["\u0000"]}]`},
		{"return await p.t(new Uint8Array([1,2]))", `[{"Name":"p","Tools":["t"]}]`},
	}
	for _, s := range seeds {
		f.Add(s.code, s.providers)
	}
	e := fuzzExecutor(f)
	dispatch := codemode.EnvelopeDispatch(nil, func(_ context.Context, provider, tool, args string) (any, error) {
		if tool == "fail" {
			return nil, errors.New("failed")
		}
		return json.RawMessage(args), nil
	})
	f.Fuzz(func(t *testing.T, code, providers string) {
		var ps []codemode.Provider
		if json.Unmarshal([]byte(providers), &ps) != nil {
			ps = nil
		}
		for i := range ps { // host source is the host's, not the fuzzer's
			ps[i].Prelude, ps[i].ProxySource = "", ""
		}
		start := time.Now()
		res := e.Execute(context.Background(), codemode.Request{Code: code, Providers: ps, Dispatch: dispatch})
		if d := time.Since(start); d > hangBound {
			t.Fatalf("Execute took %v past a %v deadline", d, fuzzLimits.Deadline)
		}
		if res.Retained != nil {
			t.Fatal("a request without RetainHandles kept its sandbox")
		}
		switch {
		case res.Err != nil:
			if !scriptKind(res.Err.Kind) {
				t.Fatalf("Execute(%q, %s) = %s: not a kind a program causes", code, providers, res.Err.LLMJSON())
			}
			if res.Error == "" || res.Result != nil {
				t.Fatalf("a failure with Error %q and Result %q", res.Error, res.Result)
			}
		case res.Error != "": // a refused request: nothing ran
			if res.Result != nil {
				t.Fatalf("refused (%s) with a result", res.Error)
			}
		default:
			if !json.Valid(res.Result) {
				t.Fatalf("Execute(%q) = %q: not JSON", code, res.Result)
			}
		}
	})
}

// FuzzDispatchCodec: whatever the protocol's JSON holds, what the codec
// reads it writes back, and reads back equal; ParseDispatchArguments
// always gives a slice.
func FuzzDispatchCodec(f *testing.F) {
	for _, s := range []string{`null`, `[1,"a",{"b":[true]}]`, `{"id":7}`,
		`{"__executor_binary_v1__":"Uint8Array","data":"AQID"}`, `[{"__executor_handle_v1__":3}]`,
		`{"__executor_binary_v1__":"DataView","data":"!!"}`, `{"__executor_handle_v1__":1,"x":2}`, `"\u00e9\ud83d\ude00"`, `1e308`, `-0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := codemode.ParseForDispatch(s)
		args, aerr := codemode.ParseDispatchArguments(s)
		if (err == nil) != (aerr == nil) {
			t.Fatalf("ParseForDispatch err %v, ParseDispatchArguments err %v", err, aerr)
		}
		if err != nil {
			return
		}
		if a, ok := v.([]any); ok {
			if !reflect.DeepEqual(a, args) {
				t.Fatalf("arguments %#v, value %#v", args, v)
			}
		} else if len(args) != 1 || !reflect.DeepEqual(args[0], v) {
			t.Fatalf("arguments %#v for the single value %#v", args, v)
		}
		out, err := codemode.StringifyForDispatch(v)
		if err != nil {
			t.Fatalf("StringifyForDispatch(%#v) of %q: %v", v, s, err)
		}
		back, err := codemode.ParseForDispatch(out)
		if err != nil {
			t.Fatalf("ParseForDispatch(%q), written from %q: %v", out, s, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("%q → %#v → %q → %#v", s, v, out, back)
		}
		again, err := codemode.StringifyForDispatch(back)
		if err != nil || again != out {
			t.Fatalf("written twice: %q then %q (%v)", out, again, err)
		}
	})
}

// FuzzDispatchAnswer: any text a dispatch answers with reaches the
// program as a value, an Error it catches (a truthy "error", its text when
// it is a string; MsgOutsideEnvelope for a text that is not a JSON
// object), never anything else.
func FuzzDispatchAnswer(f *testing.F) {
	for _, s := range []string{`{"result":1}`, `{"error":"no"}`, `{}`, `[]`, `"x"`, `null`, ``, `{"result":`, `{"result":{"__executor_binary_v1__":"Uint8Array","data":"AQID"}}`,
		`{"result":{"__executor_handle_v1__":1}}`, `{"error":{"nested":true}}`, `{"result":1,"error":"both"}`, "{\"result\":\"\xff\"}", `{"result":1e999}`} {
		f.Add(s)
	}
	e := fuzzExecutor(f, codemode.WithLimits(calmLimits))
	const code = `async () => {
  try {
    const v = await t.call();
    return {ok: v === undefined ? "undefined" : v};
  } catch (e) {
    return {caught: String(e && e.message)};
  }
}`
	f.Fuzz(func(t *testing.T, answer string) {
		res := e.Execute(context.Background(), codemode.Request{Code: code, Providers: []codemode.Provider{{Name: "t", Tools: []string{"call"}}},
			Dispatch: func(context.Context, string, string, string) (string, error) { return answer, nil }})
		if res.Error != "" {
			if res.Err != nil && res.Err.Kind == codemode.KindMemoryExceeded {
				return // an answer too large for the sandbox
			}
			t.Fatalf("answer %q: the program did not finish: %s", answer, res.Error)
		}
		var out struct {
			OK     json.RawMessage `json:"ok"`
			Caught *string         `json:"caught"`
		}
		if err := json.Unmarshal(res.Result, &out); err != nil {
			t.Fatalf("answer %q: result %q: %v", answer, res.Result, err)
		}
		var obj map[string]json.RawMessage
		isObject := json.Unmarshal([]byte(answer), &obj) == nil && obj != nil
		if !isObject {
			if out.Caught == nil || *out.Caught != codemode.MsgOutsideEnvelope {
				t.Fatalf("answer %q (no object): %s, want the program to catch %q", answer, res.Result, codemode.MsgOutsideEnvelope)
			}
			return
		}
		raw, hasErr := obj["error"]
		switch {
		case hasErr && truthy(raw):
			if out.Caught == nil {
				t.Fatalf("answer %q: %s, want a caught error", answer, res.Result)
			}
			var msg string
			if json.Unmarshal(raw, &msg) == nil && *out.Caught != msg {
				t.Fatalf("answer %q: caught %q, want %q", answer, *out.Caught, msg)
			}
		case out.Caught != nil && *out.Caught != codemode.MsgOutsideEnvelope: // the engine's JSON.parse may refuse what Go's reads (nesting)
			t.Fatalf("answer %q (no truthy error): the program caught %q", answer, *out.Caught)
		}
	})
}

// truthy is JavaScript's truthiness of a JSON value: what makes an
// envelope's "error" throw.
func truthy(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true // a number past float64 (1e999) is Infinity: truthy
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0
	}
	return true
}

// FuzzValidate: arbitrary parameter schemas are accepted or refused with
// a RegisterError (never a panic), in bounded time, and never load
// anything from outside the document; a schema Validate accepts checks
// arguments in bounded time too.
func FuzzValidate(f *testing.F) {
	for _, s := range []struct{ schema, args string }{
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`, `{"n":2}`},
		{`{"$ref":"https://example.com/s.json"}`, `{}`},
		{`{"$ref":"file:///etc/passwd"}`, `{}`},
		{`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `{}`},
		{`{"type":"object","patternProperties":{"^(a+)+$":{"type":"string"}}}`, `{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!":1}`},
		{`{"type":"object","properties":{"xs":{"type":"array","uniqueItems":true}}}`, `{"xs":[1,2,3,1]}`},
		{`{"anyOf":[{"type":"object"},{"not":{}}],"format":"email"}`, `{}`},
		{`[]`, `{}`}, {`true`, `{}`}, {`{"type":"nonsense"}`, `{}`},
	} {
		f.Add(s.schema, s.args)
	}
	e := fuzzExecutor(f, codemode.WithLimits(calmLimits))
	f.Fuzz(func(t *testing.T, schema, args string) {
		src := codemode.ToolSource{Name: "t", Description: "t", Params: json.RawMessage(schema), Source: "(a) => a"}
		start := time.Now()
		err := e.Validate(src)
		if d := time.Since(start); d > hangBound {
			t.Fatalf("Validate took %v on %q", d, schema)
		}
		if err != nil {
			var re *codemode.RegisterError
			if !errors.As(err, &re) || re.Stage != codemode.StageInvalidSchema {
				t.Fatalf("Validate(%q) = %v, want a RegisterError of stage invalid_schema", schema, err)
			}
			return
		}
		if _, err := e.Register(context.Background(), src); err != nil {
			t.Fatalf("Register after Validate accepted %q: %v", schema, err)
		}
		defer e.Deregister("t")
		start = time.Now()
		_, err = e.Call(context.Background(), "t", json.RawMessage(args))
		if d := time.Since(start); d > hangBound {
			t.Fatalf("Call took %v on %q with %q", d, schema, args)
		}
		checkCallError(t, args, err)
	})
}

// checkCallError: a call fails only as the arguments' refusal or a
// script's failure.
func checkCallError(t *testing.T, args string, err error) {
	if err == nil {
		return
	}
	var ee *codemode.ExecError
	if !errors.As(err, &ee) || !scriptKind(ee.Kind) {
		t.Fatalf("Call(%q) = %v: not a kind the arguments or the tool cause", args, err)
	}
}

// FuzzCall: arguments a model sends a registered tool are checked against
// its schema before any sandbox exists; what passes reaches the tool as
// the same JSON value.
func FuzzCall(f *testing.F) {
	for _, s := range []string{`{"q":"a","n":1}`, `{"q":"a"}`, `{}`, `[]`, `null`, `{"q":1}`, `{"q":"a","n":1.5}`, `{"q":"a","tags":["x","y"],"extra":{}}`,
		`{"q":"\ud800"}`, "{\"q\":\"\xff\"}", `{"q":"a","n":1e400}`, `{"q":"a"} {"q":"b"}`, ``} {
		f.Add(s)
	}
	e := fuzzExecutor(f)
	if _, err := e.Register(context.Background(), codemode.ToolSource{Name: "search", Description: "echo",
		Params: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","maxLength":64},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["q"]}`),
		Source: "(args) => args"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		out, err := e.Call(context.Background(), "search", json.RawMessage(args))
		checkCallError(t, args, err)
		if err != nil {
			return
		}
		var in, back any
		if json.Unmarshal([]byte(args), &in) != nil {
			t.Fatalf("Call accepted %q, which is not JSON", args)
		}
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("Call(%q) = %q: %v", args, out, err)
		}
		if !reflect.DeepEqual(in, back) {
			t.Fatalf("Call(%q) = %q: the tool saw other arguments", args, out)
		}
	})
}

// FuzzShapes: the shapes models write — a body, the body fenced, the body
// as an arrow — come to the same result (fuzzcheck.Shapes).
func FuzzShapes(f *testing.F) {
	for _, s := range []string{"return 1", "const x = 10; x * 2", "return [1, 2].map((n) => n * 2)", "async function main() { return 5 }",
		"() => 5", "let s = 0; for (let i = 0; i < 3; i++) s += i; return s", "throw new Error('no')", "return await Promise.resolve(Math.random())",
		"return new Date().toISOString()", "({a: 1})", "return Symbol()", "await new Promise(() => {})", "}", "return 1 // done"} {
		f.Add(s)
	}
	e := fuzzExecutor(f)
	f.Fuzz(func(t *testing.T, body string) {
		if strings.ContainsRune(body, 0) {
			return
		}
		fuzzcheck.Shapes(t, e, body)
	})
}

// TestNonASCIIIdentifierEnds: a body whose statements end in identifiers
// that are not ASCII or are escaped (the parser measures those in its own
// encoding) is shaped at the right offsets: the crasher FuzzExecute found,
// and its relatives.
func TestNonASCIIIdentifierEnds(t *testing.T) {
	e := newTestExecutor(t)
	for _, c := range []struct{ src, value, err string }{
		{"A0ʋ\rԦ", "", "ReferenceError: A0ʋ is not defined"},
		{"const ʋ = 1\nʋ", "1", ""},
		{"const 中文字 = 2\n中文字", "2", ""},
		{"const \\u0041 = 3\n\\u0041", "3", ""},
		{"const \\u{42}\\u{43} = 4\nBC", "4", ""},
		{"const x = {ʋʋʋ: 5}\nx.ʋʋʋ", "5", ""},
		{"const 𝑥 = 6\n𝑥", "6", ""},
		{"(ʋ) => ʋ", "null", ""},
		{"const f = (中) => 中 * 2;\nf(3.5)", "7", ""},
	} {
		res, err := e.Run(context.Background(), c.src)
		if c.err != "" {
			var ee *codemode.ExecError
			if !errors.As(err, &ee) || ee.Kind != codemode.KindJS || !strings.HasPrefix(ee.Message, c.err) {
				t.Errorf("Run(%q) = %v, want %s", c.src, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Run(%q): %v", c.src, err)
			continue
		}
		if string(res.Value) != c.value {
			t.Errorf("Run(%q) = %s, want %s", c.src, res.Value, c.value)
		}
	}
}

func newTestExecutor(t *testing.T) *codemode.Executor {
	e, err := codemode.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestInvalidUTF8Source: invalid UTF-8 in a source (a comment, a string)
// does not move the shape's insertions: the arrow is still called (found
// by FuzzShapes).
func TestInvalidUTF8Source(t *testing.T) {
	e := newTestExecutor(t)
	for _, c := range []struct{ src, want string }{
		{"async () => {return 0//\xe5\n}", "0"},
		{"(() => 5)//\xe5", "5"},
		{"return 0//\xe5", "0"},
		{"async () => { /* \xff\xfe */ return 3 }", "3"},
		{"async function main() { return 4 } // \xc3", "4"},
		{"const x = 1 /*\xc3*/ + 1; x", "2"},
	} {
		res, err := e.Run(context.Background(), c.src)
		if err != nil {
			t.Errorf("Run(%q): %v", c.src, err)
			continue
		}
		if string(res.Value) != c.want {
			t.Errorf("Run(%q) = %s, want %s", c.src, res.Value, c.want)
		}
	}
}
