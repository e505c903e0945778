package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sessionRun runs script in s and returns its value's JSON, or fails.
func sessionRun(t *testing.T, s *Session, script string) string {
	t.Helper()
	res, err := s.Run(context.Background(), script)
	require.NoError(t, err, script)
	return string(res.Value)
}

// sessionFails runs script in s and returns its error, which must be an
// *ExecError.
func sessionFails(t *testing.T, s *Session, script string) *ExecError {
	t.Helper()
	_, err := s.Run(context.Background(), script)
	require.Error(t, err, script)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	return ee
}

func newSession(t *testing.T, e *Executor) *Session {
	t.Helper()
	s, err := e.NewSession()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestSessionKeepsDeclarations(t *testing.T) {
	t.Parallel()
	s := newSession(t, newExecutor(t))
	assert.Equal(t, "1", sessionRun(t, s, `
const a = 1
let b = [1, 2], {c, d: [e = 5]} = {c: 3, d: []}
var v = 'v'
function twice(x) { return x * 2 }
class C { get three() { return 3 } }
return a`))
	assert.Equal(t, `[1,[1,2],3,5,"v",4,3]`, sessionRun(t, s, "return [a, b, c, e, v, twice(2), new C().three]"))
	// Globals set by hand persist too, and a later run builds on an
	// earlier one's values.
	sessionRun(t, s, "globalThis.g = 'set'; b.push(3)")
	assert.Equal(t, `["set",[1,2,3]]`, sessionRun(t, s, "return [g, b]"))
	// A function declared in one run sees the globals of the runs after.
	sessionRun(t, s, "function total() { return b.reduce((x, y) => x + y, 0) }")
	sessionRun(t, s, "b.push(10)")
	assert.Equal(t, "16", sessionRun(t, s, "return total()"))
	// What a run declares below its top level is its own.
	sessionRun(t, s, "{ let inner = 1 } for (let i = 0; i < 1; i++) {} const f = () => { const local = 1 }")
	assert.Equal(t, `["undefined","undefined","undefined"]`, sessionRun(t, s, "return [typeof inner, typeof i, typeof local]"))
	// A program written as one arrow is called, as in Run: its
	// declarations are its own.
	assert.Equal(t, "7", sessionRun(t, s, "async () => { const mine = 7; return mine }"))
	assert.Equal(t, `"undefined"`, sessionRun(t, s, "return typeof mine"))
	// A lone function declaration is declared, not called.
	assert.Equal(t, "null", sessionRun(t, s, "function lone() { throw new Error('called') }"))
	assert.Equal(t, `"function"`, sessionRun(t, s, "return typeof lone"))
	// Await at the top level, with declarations after it.
	assert.Equal(t, "42", sessionRun(t, s, "const w = await Promise.resolve(41); return w + 1"))
	assert.Equal(t, "41", sessionRun(t, s, "return w"))
	// A last expression is the result, as in Run.
	assert.Equal(t, "43", sessionRun(t, s, "const z = w + 2\nz"))
}

// TestSessionRedeclaration: a name declared again fails the run before it
// runs, as a second input to Node's REPL does (let, const and class
// names), or replaces the earlier one (var and function names).
func TestSessionRedeclaration(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	e := newExecutor(t, WithCapability(Capability{Name: "mark", Func: func(context.Context, json.RawMessage) (any, error) {
		calls.Add(1)
		return nil, nil
	}}))
	s := newSession(t, e)
	sessionRun(t, s, "let x = 1; const y = 2; class K {} var v = 1; function f() { return 1 }")
	for _, src := range []string{"mark(); let x = 3", "mark(); const y = 3", "mark(); class K {}", "mark(); let v = 1",
		"mark(); let f = 1", "mark(); var x = 1", "mark(); function y() {}"} {
		ee := sessionFails(t, s, src)
		assert.Equal(t, KindJS, ee.Kind, src)
		assert.Contains(t, ee.Message, "SyntaxError", src)
	}
	assert.Zero(t, calls.Load(), "a redeclaration fails the run before any of it runs")
	assert.Equal(t, "[1,2,1]", sessionRun(t, s, "return [x, y, f()]"))
	sessionRun(t, s, "var v = 2; function f() { return 2 }")
	assert.Equal(t, "[2,2]", sessionRun(t, s, "return [v, f()]"))
	// As in Node's REPL for an input that awaits, a const so declared may
	// be assigned by a later run.
	sessionRun(t, s, "y = 5")
	assert.Equal(t, "5", sessionRun(t, s, "return y"))
}

// TestSessionRunsAreTransactions: the case. Run 1 defines a
// function and loads records through a tool; run 2 uses both without a
// tool call; run 3 is killed by its deadline halfway through mutating an
// array; run 4 sees the array as run 2 left it.
func TestSessionRunsAreTransactions(t *testing.T) {
	t.Parallel()
	var loads atomic.Int32
	e := newExecutor(t, WithLimits(Limits{Deadline: 300 * time.Millisecond}),
		WithCapability(Capability{Name: "load", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
			loads.Add(1)
			return []map[string]int{{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}}, nil
		}}))
	s := newSession(t, e)
	sessionRun(t, s, "const records = await load(); function sum(rs) { return rs.reduce((a, r) => a + r.n, 0) }")
	assert.Equal(t, "10", sessionRun(t, s, "records.push({n: 5}); return sum(records) - 5"))
	assert.Equal(t, int32(1), loads.Load())

	ee := sessionFails(t, s, `
globalThis.half = 'built'
for (let i = 0; i < records.length; i++) {
	records[i].n = -1
	if (i === 2) for (;;) {}
}`)
	assert.Equal(t, KindTimeout, ee.Kind)
	assert.Equal(t, `[[1,2,3,4,5],"undefined"]`, sessionRun(t, s, "return [records.map((r) => r.n), typeof half]"))
	assert.Equal(t, int32(1), loads.Load(), "no tool call repeated")
}

func TestSessionFailuresRollBack(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 2 * time.Second, Memory: 32 << 20}))
	s := newSession(t, e)
	sessionRun(t, s, "const list = [1]; globalThis.count = 1")
	check := func(why string) {
		t.Helper()
		assert.Equal(t, `[[1],1,"undefined","undefined"]`, sessionRun(t, s, "return [list, count, typeof extra, typeof tick]"), why)
	}
	ee := sessionFails(t, s, "list.push(2); count++; let extra = 1; throw new Error('boom')")
	assert.Equal(t, KindJS, ee.Kind)
	check("thrown")
	ee = sessionFails(t, s, "list.push(2); count++; const big = []; for (;;) big.push('x'.repeat(1 << 16) + big.length)")
	assert.Equal(t, KindMemoryExceeded, ee.Kind)
	check("memory")
	ee = sessionFails(t, s, "list.push(2); count++; setTimeout(() => { globalThis.tick = 1 }, 1); return new Promise(() => {})")
	assert.Equal(t, KindPendingPromise, ee.Kind)
	check("stalled")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := s.Run(ctx, "list.push(2); count++; for (;;) {}")
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	check("cancelled")
	ee = sessionFails(t, s, "list.push(2); count++; return {bad: 1n}")
	check("an unencodable result: " + string(ee.Kind))
	// The first run of a session that fails leaves no sandbox: the next
	// opens a fresh one.
	s2 := newSession(t, e)
	sessionFails(t, s2, "globalThis.first = 1; throw 1")
	assert.Equal(t, `"undefined"`, sessionRun(t, s2, "return typeof first"))
}

// TestSessionDropsTimers: a run's timers end with it, whether it kept its
// work or not.
func TestSessionDropsTimers(t *testing.T) {
	t.Parallel()
	s := newSession(t, newExecutor(t))
	sessionRun(t, s, "setTimeout(() => { globalThis.late = 1 }, 1); setInterval(() => {}, 1); globalThis.n = 0")
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, `"undefined"`, sessionRun(t, s, "return typeof late"))
	// A run's own timers work as in any run.
	assert.Equal(t, "3", sessionRun(t, s, "await new Promise((r) => setTimeout(r, 5)); n += 3; return n"))
}

func TestSessionsAreIsolated(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	a, b := newSession(t, e), newSession(t, e)
	sessionRun(t, a, "const secret = 'a'; globalThis.mine = 'a'")
	assert.Equal(t, `["undefined","undefined"]`, sessionRun(t, b, "return [typeof secret, typeof mine]"))
	res, err := e.Run(context.Background(), "return [typeof secret, typeof mine]")
	require.NoError(t, err)
	assert.Equal(t, `["undefined","undefined"]`, string(res.Value))
	// b may declare the same name.
	sessionRun(t, b, "const secret = 'b'")
	assert.Equal(t, `"a"`, sessionRun(t, a, "return secret"))
	assert.Equal(t, `"b"`, sessionRun(t, b, "return secret"))
}

func TestSessionCallAndStats(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	_, err := e.Register(context.Background(), ToolSource{Name: "bump", Source: "(args) => { globalThis.bumps = (globalThis.bumps || 0) + args.by; return bumps }"})
	require.NoError(t, err)
	s := newSession(t, e)
	sessionRun(t, s, "globalThis.bumps = 10")
	v, err := s.Call(context.Background(), "bump", json.RawMessage(`{"by": 2}`))
	require.NoError(t, err)
	assert.Equal(t, "12", string(v))
	res, err := s.Run(context.Background(), "return bumps")
	require.NoError(t, err)
	assert.Equal(t, "12", string(res.Value))
	assert.Positive(t, res.Stats.Elapsed)
	_, err = s.Call(context.Background(), "nope", nil)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindNotFound, ee.Kind)
}

func TestSessionClose(t *testing.T) {
	t.Parallel()
	e, err := New()
	require.NoError(t, err)
	s, err := e.NewSession()
	require.NoError(t, err)
	sessionRun(t, s, "const a = 1")
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = s.Run(context.Background(), "return 1")
	assert.ErrorIs(t, err, ErrSessionClosed)

	// The executor's Close stops a session's run in progress and frees it.
	s2, err := e.NewSession()
	require.NoError(t, err)
	sessionRun(t, s2, "const b = 1")
	done := make(chan error, 1)
	go func() {
		_, err := s2.Run(context.Background(), "for (;;) {}")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, e.Close())
	err = <-done
	assert.True(t, errors.Is(err, ErrClosed), "%v", err)
	_, err = s2.Run(context.Background(), "return b")
	assert.Error(t, err)
	_, err = e.NewSession()
	assert.ErrorIs(t, err, ErrClosed)
}

// TestSessionExecute: Execute requests in a session keep what their
// statements declare, their providers may differ from run to run, and
// they see what Run declared.
func TestSessionExecute(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	s := newSession(t, e)
	var seen []string
	dispatch := func(run string) DispatchFunc {
		return func(_ context.Context, provider, tool, args string) (string, error) {
			seen = append(seen, run+":"+provider+"."+tool+args)
			return `{"result":{"rows":[1,2,3]}}`, nil
		}
	}
	res := s.Execute(context.Background(), Request{Code: "const data = await db.query('q'); function rows() { return data.rows }",
		Providers: []Provider{{Name: "db", Tools: []string{"query"}}}, Dispatch: dispatch("1")})
	require.Nil(t, res.Err, res.Error)
	sessionRun(t, s, "const doubled = rows().map((x) => x * 2)")
	res = s.Execute(context.Background(), Request{Code: "async () => { await kv.put(doubled); return [rows(), doubled, typeof db] }",
		Providers: []Provider{{Name: "kv", Tools: []string{"put"}}}, Dispatch: dispatch("3")})
	require.Nil(t, res.Err, res.Error)
	assert.Equal(t, `[[1,2,3],[2,4,6],"undefined"]`, string(res.Result))
	assert.Equal(t, []string{`1:db.query["q"]`, `3:kv.put[[2,4,6]]`}, seen)
	// A failed Execute rolls back as a Run does.
	res = s.Execute(context.Background(), Request{Code: "doubled.push(8); throw new Error('no')", Dispatch: dispatch("4")})
	require.NotNil(t, res.Err)
	assert.Equal(t, "[2,4,6]", sessionRun(t, s, "return doubled"))
	res = s.Execute(context.Background(), Request{Code: "async () => 1", RetainHandles: true})
	require.NotNil(t, res.Err)
	assert.Equal(t, KindInvalidArgs, res.Err.Kind)
}
