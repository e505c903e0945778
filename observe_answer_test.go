package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endRecorder is an Observer that keeps each call's end by its place.
type endRecorder struct {
	mu   sync.Mutex
	ends map[int]ToolCallEnd
}

func (r *endRecorder) RunStart(ctx context.Context, _ RunInfo) context.Context { return ctx }
func (r *endRecorder) RunEnd(context.Context, RunInfo, RunEnd)                 {}
func (r *endRecorder) ToolStart(ctx context.Context, _ ToolCallInfo) context.Context {
	return ctx
}
func (r *endRecorder) ToolEnd(_ context.Context, c ToolCallInfo, end ToolCallEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends[c.Seq] = end
}

func (r *endRecorder) take() map[int]ToolCallEnd {
	r.mu.Lock()
	defer r.mu.Unlock()
	ends := r.ends
	r.ends = map[int]ToolCallEnd{}
	return ends
}

// seen is what a program saw of one call: whether it threw, and the
// thrown error's name and message.
type seen struct {
	Threw   bool   `json:"threw"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

// seeAll calls db.q(i) (a provider tool: envelopes) or raw(i) and
// rawSync(i) (capabilities: results) for each answer in turn and returns
// what the program saw of each call.
const seeAll = `async () => {
	const out = []
	for (let i = 0; i < N; i++) {
		try { await CALL(i); out.push({threw: false}) }
		catch (e) { out.push({threw: true, name: e.name, message: e.message}) }
	}
	return out
}`

// envelopeCorpus are provider tools' answers: envelopes, failures by JS
// truthiness, duplicate names, texts the engine reads its own way, and
// answers outside the envelope.
var envelopeCorpus = []string{
	`{"result":1}`, `{"result":null}`, `{}`, ` { } `, `{"error":null}`, `{"error":false}`, `{"error":0}`,
	`{"error":-0}`, `{"error":0.0}`, `{"error":0e10}`, `{"error":""}`, `{"error":1e-400}`, `{"error":-1e-400}`,
	`{"error":"no such user"}`, `{"error":"x","result":1}`, `{"result":1,"error":"late"}`,
	`{"error":"a","error":""}`, `{"error":"","error":"b"}`, `{"error":null,"error":0,"error":[]}`,
	`{"err\u006fr":"escaped name"}`, `{"Error":"case"}`, `{"error ":"space"}`, `{"__proto__":{"error":"inherited?"}}`,
	`{"error":true}`, `{"error":1}`, `{"error":-2.5}`, `{"error":1e400}`, `{"error":-1e400}`, `{"error":5e-324}`,
	`{"error":2e-324}`, `{"error":3e-324}`, `{"error":0.1}`, `{"error":1e21}`, `{"error":1e20}`, `{"error":123e-20}`,
	`{"error":0.000001}`, `{"error":1e-7}`, `{"error":1.7976931348623157e308}`, `{"error":123456789012345680000}`,
	`{"error":9007199254740993}`, `{"error":-0.0000015}`, `{"error":4.35}`, `{"error":100}`, `{"error":1E3}`,
	`{"error":{}}`, `{"error":{"message":"m","code":7}}`, `{"error":[]}`, `{"error":[null]}`, `{"error":[[],[]]}`,
	`{"error":[1,[2,[3]],null,{},true,false,-0,"s"]}`, `{"error":{"toString":1}}`, `{"error":{"valueOf":1}}`,
	`{"error":{"toString":"x","valueOf":"y"}}`, `{"error":[1,{"toString":null}]}`, `{"error":{"a":{"toString":1}}}`,
	`{"error":"\ud800 lone"}`, `{"error":"\ud83d\ude00 pair"}`, `{"error":"\u0000nul"}`, `{"error":"\"q\" \\ \/ \b\f\n\r\t"}`,
	"{\"error\":\"\xff bad byte\"}", "{\"error\":\"\xe2\x82 cut\"}", "{\"error\":\"\xed\xa0\x80 surrogate\"}",
	"{\"error\":\"\xed\xa0\xbd\xed\xb8\x80 pair of halves\"}", "{\"error\":\"\xc0\xa2 overlong\"}",
	"{\"error\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}", "{\"result\":\"\xff\"}", "{\"error\":\"\xf4\x90\x80\x80 past\"}",
	`{"error":"` + strings.Repeat("long ", 400) + `"}`, `{"error":[` + strings.Repeat(`"0123456789",`, 200) + `{"toString":0}]}`,
	`{"result":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	`{"error":` + strings.Repeat("[", 20) + "7" + strings.Repeat("]", 20) + `}`,
	`{"error":` + strings.Repeat("[", 500) + "7" + strings.Repeat("]", 500) + `}`,
	// Outside the envelope.
	``, ` `, `null`, `1`, `"error"`, `[]`, `[{"error":"x"}]`, `{"error":"x"`, `{"error":"x"} x`, `{"error":"x"},`,
	`{"error":01}`, `{"error":1.}`, `{"error":.5}`, `{"error":+1}`, `{"error":-}`, `{"error":1e}`, `{"error":NaN}`,
	`{"error":'x'}`, `{error:"x"}`, `{"error":"x",}`, `{,}`, `{"a" "b"}`, `{"error":tru}`, `{"error":truex}`,
	`{"error":nulls}`, `{"error":"\x"}`, `{"error":"\u12"}`, `{"error":"\u12g4"}`, "{\"error\":\"tab\there\"}",
	"{\"error\":\"nul\x00\"}", "{\"error\":1}\x00", "\ufeff{}", "{\"error\":\"x\"}\v", "{\"error\":\"x\"}\f",
	"{\"error\":\"x\"}\r\n\t ", "\xff{}", `{"error":"x"}/**/`, `{"error":[1,]}`, `{"error":[,1]}`, `{"error":{"a":1,}}`,
	// The codec's tags send the text to runtime.js's open and its reviver.
	`{"error":{"__executor_binary_v1__":"Uint8Array","data":"AQI="}}`, `{"__executor_binary_v1__":"Uint8Array","data":""}`,
	`{"result":{"__executor_binary_v1__":"Uint8Array","data":"AQI="}}`, `{"error":{"__executor_handle_v1__":1}}`,
	`{"__executor_handle_v1__":1}`, `{"error":"", "x":"__executor_binary_v1__"}`, `{"error":"__executor_handle_v1__"}`,
	"{\"error\":\"\xff\", \"t\":\"__executor_binary_v1__\"}", `{"error":0, "__executor_binary_v1__":1`,
}

// resultCorpus are capabilities' results as json.RawMessage hands them
// over unchecked.
var resultCorpus = []string{
	``, ` `, `1`, `-0`, `01`, `-`, `2147483648`, `true`, `false`, `null`, `nul`, `"s"`, `{}`, `[]`, `{"a":1}`, `[1,2`,
	`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", "\"\xed\xa0\x80\"", "\"\xe2\x82\"", "\"caf\xc3\xa9\"", "\"\xf4\x90\x80\x80\"",
	"\xff", "1\x00", "\"a\x01\"", ` {"x": [1, 2.5e3, "y"]} `, `{"x":1}{}`, `1 2`, `NaN`, `Infinity`, `'s'`, `1.`, `.1`,
	`{"__executor_binary_v1__":"Uint8Array","data":"AQI="}`, `[{"__executor_binary_v1__":"Uint8Array","data":"!"}]`,
	strings.Repeat("[", 300) + strings.Repeat("]", 300), strings.Repeat("[", 300) + strings.Repeat("]", 299),
}

// textDiffers reports whether an answer's failure text may differ from
// the program's error's: the codec's reviver reads it (the text is
// `${error}` of the revived value, which the observation does not
// rebuild), or it nests arrays deeper than the engine's join has stack
// for (the program's error is then a RangeError; the observation joins).
func textDiffers(s string) bool {
	return strings.Contains(s, "__executor_binary_v1__") || strings.Contains(s, "__executor_handle_v1__") || depth(s) > 100
}

// TestObservedAnswersMatchProgram: differentially, a call's observation
// is a failure exactly when the program sees one, with the text the
// program's error has (its message, clipped as an Observer gets texts),
// for every answer of the corpora: provider tools' envelopes, and
// capabilities' results, async and sync.
func TestObservedAnswersMatchProgram(t *testing.T) {
	t.Parallel()
	rec := &endRecorder{ends: map[int]ToolCallEnd{}}
	raw := func(ctx context.Context, args json.RawMessage) (any, error) {
		var a []int
		if err := json.Unmarshal(args, &a); err != nil {
			var o struct{ I int }
			require.NoError(t, json.Unmarshal(args, &o))
			a = []int{o.I}
		}
		return json.RawMessage(resultCorpus[a[0]]), nil
	}
	e := newExecutor(t, WithObserver(rec), WithLimits(Limits{Deadline: 20 * time.Second}),
		WithCapability(Capability{Name: "raw", Async: true, Func: raw}),
		WithCapability(Capability{Name: "rawSync", Func: raw}))
	check := func(t *testing.T, corpus []string, call string, run func(code string) json.RawMessage) {
		code := strings.NewReplacer("N", strconv.Itoa(len(corpus)), "CALL", call).Replace(seeAll)
		out := run(code)
		var saw []seen
		require.NoError(t, json.Unmarshal(out, &saw))
		require.Len(t, saw, len(corpus))
		ends := rec.take()
		require.Len(t, ends, len(corpus))
		for i, answer := range corpus {
			end := ends[i]
			if !saw[i].Threw {
				assert.Equal(t, "ok", end.Outcome, "answer %q: the program saw no failure", answer)
				assert.NoError(t, end.Err, "answer %q", answer)
				continue
			}
			if !assert.Equal(t, "error", end.Outcome, "answer %q: the program saw %s: %q", answer, saw[i].Name, saw[i].Message) ||
				!assert.Error(t, end.Err) {
				continue
			}
			if !textDiffers(answer) {
				assert.Equal(t, observedText(saw[i].Message), end.Err.Error(), "answer %q", answer)
			}
		}
	}
	t.Run("envelopes", func(t *testing.T) {
		d := func(_ context.Context, _, _, args string) (string, error) {
			var a []int
			if err := json.Unmarshal([]byte(args), &a); err != nil {
				return "", err
			}
			return envelopeCorpus[a[0]], nil
		}
		check(t, envelopeCorpus, "db.q", func(code string) json.RawMessage {
			res := e.Execute(context.Background(), Request{Code: code, Providers: []Provider{{Name: "db"}}, Dispatch: d})
			require.Empty(t, res.Error)
			return res.Result
		})
	})
	for _, call := range []string{"raw", "rawSync"} {
		t.Run(call, func(t *testing.T) {
			check(t, resultCorpus, call, func(code string) json.RawMessage {
				res, err := e.Run(context.Background(), "return await ("+strings.Replace(code, call+"(i)", call+"({i})", 1)+")()")
				require.NoError(t, err)
				return res.Value
			})
		})
	}
}

// FuzzObservedAnswer: for any answer, as a provider tool's envelope and
// as a capability's result, the call's observation fails exactly when the
// program sees a failure, with its text unless textDiffers. Known
// differences, left out: an answer nested past what the sandbox's stack
// lets the engine parse (about 5,000 levels at the default; the
// observation reads it as the JSON it is).
func FuzzObservedAnswer(f *testing.F) {
	for _, s := range envelopeCorpus {
		f.Add(s)
	}
	for _, s := range resultCorpus {
		f.Add(s)
	}
	type answerKey struct{}
	rec := &endRecorder{ends: map[int]ToolCallEnd{}}
	e, err := New(WithObserver(rec), WithLimits(Limits{Deadline: 10 * time.Second}),
		WithCapability(Capability{Name: "raw", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			return json.RawMessage(ctx.Value(answerKey{}).(string)), nil
		}}))
	require.NoError(f, err)
	f.Cleanup(func() { e.Close() })
	code := strings.NewReplacer("N", "2", "CALL(i)", "(i ? raw({}) : db.q())").Replace(seeAll)
	f.Fuzz(func(t *testing.T, answer string) {
		if depth(answer) > 1000 {
			t.Skip("nested past the engine's stack")
		}
		res := e.Execute(context.WithValue(context.Background(), answerKey{}, answer), Request{Code: code,
			Providers: []Provider{{Name: "db"}},
			Dispatch:  func(context.Context, string, string, string) (string, error) { return answer, nil }})
		require.Empty(t, res.Error)
		var saw []seen
		require.NoError(t, json.Unmarshal(res.Result, &saw))
		ends := rec.take()
		for i, as := range []string{"an envelope", "a result"} {
			if !saw[i].Threw {
				require.Equal(t, "ok", ends[i].Outcome, "answer %q as %s", answer, as)
				continue
			}
			require.Equal(t, "error", ends[i].Outcome, "answer %q as %s: the program saw %q", answer, as, saw[i].Message)
			if !textDiffers(answer) {
				require.Equal(t, observedText(saw[i].Message), ends[i].Err.Error(), "answer %q as %s", answer, as)
			}
		}
	})
}

// depth is s's deepest nesting of brackets, strings or not.
func depth(s string) int {
	d, most := 0, 0
	for _, c := range []byte(s) {
		switch c {
		case '[', '{':
			d++
			most = max(most, d)
		case ']', '}':
			d--
		}
	}
	return most
}

// TestNumberText: Number.prototype.toString's forms.
func TestNumberText(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{
		0: "0", math.Copysign(0, -1): "0", 1: "1", -1: "-1", 0.1: "0.1", 100: "100", 1e20: "100000000000000000000",
		1e21: "1e+21", 1.5e21: "1.5e+21", 1e-6: "0.000001", 1e-7: "1e-7", 1.5e-7: "1.5e-7", 123e-20: "1.23e-18",
		5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity",
		123456789012345680000: "123456789012345680000", 4.35: "4.35", 0.000001234: "0.000001234",
	} {
		assert.Equal(t, want, numberText(f), "numberText(%v)", f)
	}
}

// TestObservedFailureKinds: every way a call fails that the program sees
// is an observed failure with its outcome and error: an envelope's error
// (also a replayed one), a capability's error, panic, argument TypeError
// and result that is not JSON (async, and sync under a policy), a per-call
// timeout, a budget, a rejection.
func TestObservedFailureKinds(t *testing.T) {
	t.Parallel()
	type in struct {
		N int `json:"n"`
	}
	rec := &endRecorder{ends: map[int]ToolCallEnd{}}
	e := newExecutor(t, WithObserver(rec),
		WithCapability(Capability{Name: "fails", Func: func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("disk full")
		}}),
		WithCapability(Capability{Name: "panics", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
			panic("boom")
		}}),
		WithCapability(Func("typed", "", func(_ context.Context, v in) (int, error) { return v.N, nil })),
		WithCapability(Capability{Name: "notJSON", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
			return json.RawMessage("{oops"), nil
		}}),
		WithCapability(Capability{Name: "notJSONGoverned", Func: func(context.Context, json.RawMessage) (any, error) {
			return json.RawMessage("{oops"), nil
		}}),
		WithCapability(Capability{Name: "hangs", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}),
		WithCapability(Capability{Name: "fine", Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{
			"hangs":           {Timeout: 10 * time.Millisecond},
			"notJSONGoverned": {Timeout: time.Minute},
			"fine":            {Budget: 1},
			"db.gated":        {RequiresApproval: true},
		}, Approver: func(context.Context, ToolCall) (Decision, error) { return Reject("not now"), nil }}))
	res := e.Execute(context.Background(), Request{Code: `async () => {
		const calls = [() => db.err(), () => db.outside(), () => fails({}), () => panics({}), () => typed({n: "x"}),
			() => notJSON({}), () => notJSONGoverned({}), () => hangs({}), () => fine({}), () => fine({}), () => db.gated()]
		const out = []
		for (const c of calls) { try { await c(); out.push("ok") } catch (e) { out.push(e.name) } }
		return out
	}`, Providers: []Provider{{Name: "db"}}, Dispatch: func(_ context.Context, _, tool, _ string) (string, error) {
		if tool == "outside" {
			return "not json", nil
		}
		return `{"error":"no such row"}`, nil
	}})
	require.Empty(t, res.Error)
	assert.JSONEq(t, `["Error","Error","Error","Error","TypeError","Error","Error","Error","ok","Error","Error"]`, string(res.Result))
	got := map[int]string{}
	for seq, end := range rec.take() {
		if end.Err == nil {
			got[seq] = end.Outcome
			continue
		}
		got[seq] = end.Outcome + ": " + end.Err.Error()
	}
	assert.Equal(t, map[int]string{
		0:  "error: no such row",
		1:  "error: " + MsgOutsideEnvelope,
		2:  "error: disk full",
		3:  "error: panic: boom",
		4:  got[4], // the argument check's own text
		5:  "error: " + msgInvalidResult,
		6:  "error: " + msgInvalidResult,
		7:  `timeout: tool "hangs" timed out after 10ms (its per-call timeout)`,
		8:  "ok",
		9:  `budget: tool "fine" is over its budget of 1 calls per run`,
		10: `rejected: tool "db.gated" was rejected: not now`,
	}, got)
	assert.True(t, strings.HasPrefix(got[4], "error: typed: "), got[4])
}

// TestObservedReplayedFailure: a resumed run's call answered from the
// continuation with an envelope's error is a replayed failure, and a
// rejected call a rejected one.
func TestObservedReplayedFailure(t *testing.T) {
	t.Parallel()
	rec := &endRecorder{ends: map[int]ToolCallEnd{}}
	e := newExecutor(t, WithObserver(rec), gatedWrites())
	s := &store{}
	res := e.Execute(context.Background(), Request{Code: `async () => {
		try { await store.nope() } catch (e) {}
		return await store.write(1)
	}`, Providers: storeProviders, Dispatch: s.dispatch})
	require.Empty(t, res.Error)
	require.NotNil(t, res.Paused)
	ends := rec.take()
	assert.Equal(t, "error", ends[0].Outcome)
	assert.EqualError(t, ends[0].Err, "no such tool")
	out := e.Resume(context.Background(), res.Paused.Continuation, Reject("no"), s.dispatch)
	require.NotEmpty(t, out.Error)
	ends = rec.take()
	require.Len(t, ends, 2)
	assert.Equal(t, "replayed", ends[0].Outcome)
	assert.EqualError(t, ends[0].Err, "no such tool")
	assert.Equal(t, "rejected", ends[1].Outcome)
	assert.Equal(t, fmt.Sprint(ends[1].Err), `tool "store.write" was rejected: no`)
}
