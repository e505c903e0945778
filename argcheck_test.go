package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const searchParams = `{"type":"object","properties":{"query":{"type":"string","description":"what to find"},` +
	`"limit":{"type":"integer"},"tags":{"type":"array"}},"required":["query"]}`

// TestArgumentsChecked: a call whose argument fails the capability's
// Params throws a catchable TypeError naming it and the path, sync and
// async alike, and the handler never runs.
func TestArgumentsChecked(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	handler := fn(func(_ context.Context, args json.RawMessage) (any, error) {
		calls.Add(1)
		return json.RawMessage(args), nil
	})
	e := newExecutor(t,
		WithCapability(Capability{Name: "search", Params: json.RawMessage(searchParams), Func: handler}),
		WithCapability(Capability{Name: "search_async", Async: true, Params: json.RawMessage(searchParams), Func: handler}),
		WithCapability(Capability{Name: "list", Params: json.RawMessage(`{"type":"object","properties":{"state":{"enum":["open","closed"]},"n":{"type":"integer","minimum":1}}}`), Func: handler}),
		WithCapability(Capability{Name: "raw", Unchecked: true, Params: json.RawMessage(searchParams), Func: handler}))
	ctx := context.Background()
	tests := []struct{ code, want string }{
		{"return search({query: 'go', limit: 2})", `{"query":"go","limit":2}`},
		{"return search({query: 'go', extra: {deep: [1]}})", `{"query":"go","extra":{"deep":[1]}}`},
		{"return search({query: 'go', limit: 2.0})", `{"query":"go","limit":2}`},
		{"try { search({limit: 2}) } catch (e) { return [e instanceof TypeError, e.message] }", "[true,\"search: `query` is required\"]"},
		{"try { search({query: 1}) } catch (e) { return e.message }", "\"search: `query`: got number, want string\""},
		{"try { search({query: 'a', limit: 'x'}) } catch (e) { return e.message }", "\"search: `limit`: got string, want integer\""},
		{"try { search({query: 'a', limit: 1.5}) } catch (e) { return e.message }", "\"search: `limit`: got number, want integer\""},
		{"try { search({query: 'a', tags: 'x'}) } catch (e) { return e.message }", "\"search: `tags`: got string, want array\""},
		{"try { await search_async({}) } catch (e) { return [e instanceof TypeError, e.message] }", "[true,\"search_async: `query` is required\"]"},
		{"return await search_async({query: 'q'})", `{"query":"q"}`},
		{"try { list({state: 'x'}) } catch (e) { return e.message }", "\"list: `state`: value must be one of 'open', 'closed'\""},
		{"try { list({n: 0}) } catch (e) { return e.message }", "\"list: `n`: minimum: got 0, want 1\""},
		{"return list({state: 'open', n: 3})", `{"state":"open","n":3}`},
		{"return raw({limit: 'anything'})", `{"limit":"anything"}`},
	}
	for _, tt := range tests {
		calls.Store(0)
		res, err := e.Run(ctx, tt.code)
		require.NoError(t, err, tt.code)
		assert.Equal(t, tt.want, string(res.Value), tt.code)
	}
	// A failing call reaches no handler; uncaught, it is the script's
	// TypeError (kind js), not the capability's failure.
	calls.Store(0)
	_, err := e.Run(ctx, "search({})")
	var ee *ExecError
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, KindJS, ee.Kind)
	assert.Equal(t, "TypeError: search: `query` is required\n    at search (native)\n    at <anonymous> (script.js:1:1)", ee.Message)
	assert.Zero(t, calls.Load())
}

// TestCapabilitySchemaRefused: a Params that is no schema refuses the
// capability.
func TestCapabilitySchemaRefused(t *testing.T) {
	t.Parallel()
	ok := fn(func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	_, err := New(WithCapability(Capability{Name: "bad", Params: json.RawMessage(`{"type":"string"}`), Func: ok}))
	var re *RegisterError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, StageInvalidSchema, re.Stage)
	assert.Equal(t, "bad", re.Name)
}

// TestArgPlanAgrees: the fast path never passes what the library refuses,
// and decides what it can the way the library does.
func TestArgPlanAgrees(t *testing.T) {
	t.Parallel()
	schemas := []string{
		searchParams,
		`{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"number"},"c":{"type":"boolean"},"d":{"type":"object"}},"required":["a","b"],"additionalProperties":false}`,
		`{"type":"object","properties":{"x":{}}}`,
		`{"type":"object","properties":{"state":{"enum":["open","closed",null]},"n":{"type":"integer","minimum":1,"maximum":10},"r":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},"s":{"type":"string","minLength":2,"maxLength":3},"flag":{"enum":[true,1]}}}`,
	}
	args := []string{`{}`, `{"query":"q"}`, `{"query":null}`, `{"query":"q","limit":3}`, `{"query":"q","limit":3.5}`, `{"query":"q","limit":3e2}`,
		`{"a":"s","b":1}`, `{"a":null,"b":1.5,"c":true,"d":{}}`, `{"a":1,"b":1}`, `{"a":"s","b":"1"}`, `{"a":"s","b":1,"z":1}`,
		`{"a":"s"}`, `{"x":[1,{"y":2}]}`, `{"query":"q","query":"r"}`, `{"c":false,"a":"","b":-0}`, `{"tags":[],"query":""}`,
		`{"state":"open"}`, `{"state":"other"}`, `{"state":null}`, `{"n":1}`, `{"n":0}`, `{"n":10.0}`, `{"n":11}`, `{"r":0}`, `{"r":0.5}`, `{"r":1}`,
		`{"s":"ab"}`, `{"s":"a"}`, `{"s":"abcd"}`, `{"s":"é✓"}`, `{"s":"\u00e9\u2713"}`, `{"flag":true}`, `{"flag":1.0}`, `{"flag":false}`}
	var sc schemaCache
	for _, s := range schemas {
		c, err := sc.compileCheck(json.RawMessage(s))
		require.Nil(t, err)
		require.NotNil(t, c.plan, s)
		for _, a := range args {
			lib := c.p.violations(json.RawMessage(a)) == "" && requiredPresent(c, a)
			if c.plan.valid([]byte(a)) {
				assert.True(t, lib, "the plan passes %s against %s, the library does not", a, s)
			}
			assert.Equal(t, lib, c.problem(json.RawMessage(a)) == "", "%s against %s", a, s)
		}
	}
}

func requiredPresent(c *argCheck, args string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return false
	}
	for _, r := range c.p.required {
		if _, ok := obj[r]; !ok {
			return false
		}
	}
	return true
}

// FuzzArgPlan: whatever the arguments, the plan passes only what is JSON
// and what the library accepts.
func FuzzArgPlan(f *testing.F) {
	for _, s := range []string{`{}`, `{"query":"q"}`, `{"query":"q","limit":1-2}`, `{"query":"q","limit":01}`, `{"query":"q","tags":[1,{"a":"]"}]}`,
		`{"query":"a\"b"}`, `{"query":"q",}`, `{"query":"q"}x`, `{"query":"q","limit":1e}`, `{"query":"q","limit":-}`} {
		f.Add(s)
	}
	var sc schemaCache
	c, err := sc.compileCheck(json.RawMessage(searchParams))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		if !c.plan.valid([]byte(args)) {
			return
		}
		if !json.Valid([]byte(args)) {
			t.Fatalf("the plan passes %q, which is not JSON", args)
		}
		if c.p.violations(json.RawMessage(args)) != "" || !requiredPresent(c, args) {
			t.Fatalf("the plan passes %q, which the library refuses", args)
		}
	})
}
