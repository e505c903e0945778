//go:build cgo

package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeCaps are a store's read and write, marked in the policy, and an
// unmarked tool (a write by default).
func storeCaps() []Option {
	get := Capability{Name: "store_get", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
		return map[string]int{"n": 1}, nil
	}}
	put := Capability{Name: "store_put", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
		return true, nil
	}}
	mail := Capability{Name: "mail", Func: func(context.Context, json.RawMessage) (any, error) { return nil, nil }}
	fail := Capability{Name: "broken", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("no such row")
	}}
	return []Option{WithCapability(get), WithCapability(put), WithCapability(mail), WithCapability(fail),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"store_get": {Effect: EffectRead}}}),
		WithLimits(Limits{Deadline: 300 * time.Millisecond})}
}

// noToolRan is the ledger of a run_js failure whose program called no
// tool, as its output carries it.
const noToolRan = `,"effects":{"summary":"no tool ran","started":0,"completed":0}`

// msRE matches a ledger's elapsed times.
var msRE = regexp.MustCompile(`"ms":[0-9.e-]+`)

// noTimes is output with its ledger's times set to 0.
func noTimes(output []byte) string { return msRE.ReplaceAllString(string(output), `"ms":0`) }

// calls is the ledger's calls without their times.
func calls(e *Effects) []ToolEffect {
	out := make([]ToolEffect, len(e.Calls))
	for i, c := range e.Calls {
		c.Elapsed = 0
		out[i] = c
	}
	return out
}

// TestEffectsLedger: what each run's ledger says, and its summary, for the
// ways a run ends.
func TestEffectsLedger(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, storeCaps()...)
	ctx := context.Background()

	// Reads, a write, then a loop past the deadline.
	res, err := e.Run(ctx, `await store_get({id: 1}); await store_put({id: 1}); for (;;) {}`)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindTimeout, ee.Kind)
	assert.Equal(t, []ToolEffect{
		{Seq: 0, Tool: "store_get", Effect: EffectRead, Outcome: "ok"},
		{Seq: 1, Tool: "store_put", Effect: EffectWrite, Outcome: "ok"},
	}, calls(res.Effects))
	assert.Equal(t, "store_put completed before the timeout", res.Effects.Summary())
	assert.Equal(t, &Effects{Calls: res.Effects.Calls, Started: 2, Completed: 2, WritesCompleted: 1,
		Written: []string{"store_put"}, End: KindTimeout}, res.Effects)
	assert.True(t, res.Effects.Wrote())

	// A loop before any call.
	res, err = e.Run(ctx, `for (;;) {}`)
	require.ErrorAs(t, err, &ee)
	assert.Nil(t, res.Effects)
	assert.Equal(t, "no tool ran", res.Effects.Summary())
	assert.False(t, res.Effects.Wrote())

	// Only reads, then a throw.
	res, err = e.Run(ctx, `await store_get({}); await store_get({}); throw new Error("x")`)
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "only reads ran", res.Effects.Summary())

	// A write left running (not awaited), a sync unmarked tool, a failing
	// write, in a run that succeeds.
	res, err = e.Run(ctx, `mail({}); await broken({}).catch(() => 0); return 1`)
	require.NoError(t, err)
	assert.Equal(t, []ToolEffect{
		{Seq: 0, Tool: "mail", Effect: EffectWrite, Outcome: "ok"},
		{Seq: 1, Tool: "broken", Effect: EffectWrite, Outcome: "error"},
	}, calls(res.Effects))
	assert.Equal(t, "mail completed; broken failed (it may have written first)", res.Effects.Summary())

	// A refused run: no tool ran.
	r := e.Execute(ctx, Request{Code: `async () => { for (;;) {} }`})
	assert.Equal(t, KindTimeout, r.Err.Kind)
	assert.Equal(t, "no tool ran", r.Effects.Summary())
}

// TestEffectsRunning: a write still in its handler at the run's end is
// running, and the summary says it may have taken effect.
func TestEffectsRunning(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := Capability{Name: "slow_put", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
		<-release // ignoring its context: it outlives the run
		return nil, nil
	}}
	e := newExecutor(t, WithCapability(slow), WithLimits(Limits{Deadline: 200 * time.Millisecond}))
	defer close(release)
	res, err := e.Run(context.Background(), `slow_put({}); await new Promise(() => {}); for (;;) {}`)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, []ToolEffect{{Seq: 0, Tool: "slow_put", Effect: EffectWrite, Outcome: OutcomeRunning}},
		calls(res.Effects))
	assert.Equal(t, 1, res.Effects.WritesRunning)
	assert.Equal(t, "slow_put did not return (it may have taken effect) before "+endName(ee.Kind),
		res.Effects.Summary())
}

// TestEffectsBounded: a 100,000-call program's ledger keeps the first and
// the last calls and counts the rest.
func TestEffectsBounded(t *testing.T) {
	t.Parallel()
	get := Capability{Name: "get", Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}
	e := newExecutor(t, WithCapability(get), WithLimits(Limits{Deadline: 60 * time.Second}),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"*": {Effect: EffectRead}}}))
	res, err := e.Run(context.Background(), `let n = 0; for (let i = 0; i < 100000; i++) n += get({}); return n`)
	require.NoError(t, err)
	assert.JSONEq(t, `100000`, string(res.Value))
	eff := res.Effects
	require.Len(t, eff.Calls, LedgerHead+LedgerTail)
	assert.Equal(t, 100000-LedgerHead-LedgerTail, eff.Omitted)
	assert.Equal(t, 100000, eff.Started)
	assert.Equal(t, 100000, eff.Completed)
	for i, c := range eff.Calls {
		want := i
		if i >= LedgerHead {
			want = 100000 - LedgerHead - LedgerTail + i
		}
		assert.Equal(t, want, c.Seq)
		assert.Equal(t, "ok", c.Outcome)
	}
	assert.Equal(t, "only reads ran", eff.Summary())
	j, err := json.Marshal(eff)
	require.NoError(t, err)
	assert.Less(t, len(j), 6<<10, "the ledger's JSON is bounded")
}

// TestEffectsGoverned: calls refused by governance never ran; a paused
// run's replayed calls ran before the pause.
func TestEffectsGoverned(t *testing.T) {
	t.Parallel()
	put := Capability{Name: "put", Async: true, Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}
	e := newExecutor(t, WithCapability(put), WithGovernance(Governance{Tools: map[string]ToolPolicy{"put": {Budget: 1}}}))
	res, err := e.Run(context.Background(), `await put({}); try { await put({}) } catch { } return 2`)
	require.NoError(t, err)
	assert.Equal(t, []ToolEffect{
		{Seq: 0, Tool: "put", Effect: EffectWrite, Outcome: "ok"},
		{Seq: 1, Tool: "put", Effect: EffectWrite, Outcome: "budget"},
	}, calls(res.Effects))
	assert.Equal(t, 1, res.Effects.Started)

	// Paused at an approval, resumed: the first call is replayed (it ran).
	key := []byte(strings.Repeat("k", 32))
	e2 := newExecutor(t, WithCapability(put), WithGovernance(Governance{Key: key,
		Tools: map[string]ToolPolicy{"approve": {RequiresApproval: true}, "put": {}}}),
		WithCapability(Capability{Name: "approve", Async: true, Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}))
	res, err = e2.Run(context.Background(), `await put({}); await approve({}); return 3`)
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	assert.Equal(t, []ToolEffect{
		{Seq: 0, Tool: "put", Effect: EffectWrite, Outcome: "ok"},
		{Seq: 1, Tool: "approve", Effect: EffectWrite, Outcome: "paused"},
	}, calls(res.Effects))
	r := e2.Resume(context.Background(), res.Paused.Continuation, Reject("no"), nil)
	assert.Equal(t, []ToolEffect{
		{Seq: 0, Tool: "put", Effect: EffectWrite, Outcome: "replayed"},
		{Seq: 1, Tool: "approve", Effect: EffectWrite, Outcome: "rejected"},
	}, calls(r.Effects))
	assert.Equal(t, "put completed", r.Effects.Summary())
}

// TestEffectsFetch: fetch is in the ledger as "fetch", a read for the
// safe methods and a write for the others.
func TestEffectsFetch(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithOutbound(RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})))
	res, err := e.Run(context.Background(), `await fetch("https://a.example/"); await fetch("https://a.example/", {method: "POST", body: "x"}); return 1`)
	require.NoError(t, err)
	assert.Equal(t, []ToolEffect{
		{Seq: 0, Tool: "fetch", Effect: EffectRead, Outcome: "ok"},
		{Seq: 1, Tool: "fetch", Effect: EffectWrite, Outcome: "ok"},
	}, calls(res.Effects))
}

// TestEffectsExecute: a provider tool's calls are "provider.tool", marked
// by that name.
func TestEffectsExecute(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithGovernance(Governance{Tools: map[string]ToolPolicy{"store.get": {Effect: EffectRead}}}),
		WithLimits(Limits{Deadline: 300 * time.Millisecond}))
	r := e.Execute(context.Background(), Request{
		Code:      `async () => { await store.get({}); await store.put({}); for (;;) {} }`,
		Providers: []Provider{{Name: "store"}},
		Dispatch:  func(context.Context, string, string, string) (string, error) { return `{"result":1}`, nil },
	})
	require.NotNil(t, r.Err)
	assert.Equal(t, KindTimeout, r.Err.Kind)
	assert.Equal(t, []ToolEffect{
		{Seq: 0, Tool: "store.get", Effect: EffectRead, Outcome: "ok"},
		{Seq: 1, Tool: "store.put", Effect: EffectWrite, Outcome: "ok"},
	}, calls(r.Effects))
	assert.Equal(t, "store.put completed before the timeout", r.Effects.Summary())
}

// TestEffectsCodeModeTool: the model reads the ledger in the output of a
// failure (always) and of a result whose program called a tool.
func TestEffectsCodeModeTool(t *testing.T) {
	t.Parallel()
	get := FuncTool("store_get", "Read.", func(context.Context, struct{}) (int, error) { return 1, nil })
	put := FuncTool("store_put", "Write.", func(context.Context, struct{}) (bool, error) { return true, nil })
	tool, err := NewCodeModeTool([]Tool{get, put}, Limits{Deadline: 300 * time.Millisecond},
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"store_get": {Effect: EffectRead}}}))
	require.NoError(t, err)
	t.Cleanup(func() { tool.Close() })
	invoke := func(code string) map[string]any {
		args, _ := json.Marshal(map[string]string{"code": code})
		r, err := tool.Invoke(context.Background(), args)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(r.Output, &out), "%s", r.Output)
		return out
	}
	out := invoke(`await store_get({}); await store_put({}); for (;;) {}`)
	assert.Equal(t, "timeout", out["kind"])
	eff := out["effects"].(map[string]any)
	assert.Equal(t, "store_put completed before the timeout", eff["summary"])
	assert.Equal(t, []any{"store_get", "store_put"}, []any{eff["calls"].([]any)[0].(map[string]any)["tool"],
		eff["calls"].([]any)[1].(map[string]any)["tool"]})

	out = invoke(`for (;;) {}`)
	assert.Equal(t, map[string]any{"summary": "no tool ran", "started": 0.0, "completed": 0.0}, out["effects"])

	out = invoke(`return await store_get({})`)
	assert.Equal(t, map[string]any{"result": 1.0}, out, "a value's output carries no ledger")
}

func TestEffectPolicyValidated(t *testing.T) {
	t.Parallel()
	_, err := New(WithGovernance(Governance{Tools: map[string]ToolPolicy{"x": {Effect: "delete"}}}))
	require.ErrorIs(t, err, ErrInvalidLimits)
	assert.Contains(t, err.Error(), `effect "delete" is neither "read" nor "write"`)
}

func ExampleEffects() {
	put := Capability{Name: "store_put", Async: true, Func: func(context.Context, json.RawMessage) (any, error) { return true, nil }}
	get := Capability{Name: "store_get", Async: true, Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}
	e, _ := New(WithCapability(get), WithCapability(put), WithLimits(Limits{Deadline: 100 * time.Millisecond}),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"store_get": {Effect: EffectRead}}}))
	defer e.Close()
	res, err := e.Run(context.Background(), `await store_get({}); await store_put({}); for (;;) {}`)
	fmt.Println(err)
	fmt.Println(res.Effects.Summary())
	for _, c := range res.Effects.Calls {
		fmt.Println(c.Seq, c.Tool, c.Effect, c.Outcome)
	}
	// Output:
	// codemode: run_js: timed out after 100ms
	// store_put completed before the timeout
	// 0 store_get read ok
	// 1 store_put write ok
}

// BenchmarkLedger is the ledger's own cost per host call: a call made and
// ended, in a run of one call and of many, and the snapshot at its end
// spread over them (the clock's readings apart: two per call).
func BenchmarkLedger(b *testing.B) {
	now := monoNow()
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var l ledger
				for seq := range n {
					l.begin(seq, "store_get", EffectWrite, false, now)
					l.end(seq, "store_get", true, "ok", now)
				}
				if l.snapshot(now, nil, nil) == nil {
					b.Fatal("no ledger")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}

// TestEffectsInvalidArgs: a call whose arguments its schema refuses never
// reached its tool.
func TestEffectsInvalidArgs(t *testing.T) {
	t.Parallel()
	var ran int
	put := Capability{Name: "put", Async: true, Params: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Func: func(context.Context, json.RawMessage) (any, error) { ran++; return 1, nil }}
	e := newExecutor(t, WithCapability(put))
	res, err := e.Run(context.Background(), `try { await put({}) } catch (e) { } throw new Error("x")`)
	require.Error(t, err)
	assert.Equal(t, []ToolEffect{{Seq: 0, Tool: "put", Effect: EffectWrite, Outcome: OutcomeInvalidArgs}}, calls(res.Effects))
	assert.Equal(t, "no tool ran", res.Effects.Summary())
	assert.Zero(t, ran)
}

// TestLedgerNames: a name is found again past the scanned few (a program
// naming tools by a computed key names as many as it likes).
func TestLedgerNames(t *testing.T) {
	t.Parallel()
	var l ledger
	for round := range 2 {
		for i := range 3 * scanNames {
			assert.Equal(t, int32(i), l.name("t"+strconv.Itoa(i)), "round %d", round)
		}
	}
	assert.Len(t, l.names, 3*scanNames)
}
