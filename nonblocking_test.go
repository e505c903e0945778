package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNonBlockingCapability: an async capability declared non-blocking
// runs as its call starts (a synchronous capability called right after
// sees its effect), and its Promise still settles on a later turn; its
// failures reject as an async capability's do; the ledger records it.
func TestNonBlockingCapability(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	e := newExecutor(t,
		WithCapability(Capability{Name: "bump", Async: true, NonBlocking: true,
			Func: func(_ context.Context, args json.RawMessage) (any, error) {
				if string(args) == `{"fail":true}` {
					return nil, errors.New("no such user")
				}
				return map[string]any{"n": n.Add(1)}, nil
			}}),
		WithCapability(Capability{Name: "count", Func: func(context.Context, json.RawMessage) (any, error) {
			return n.Load(), nil
		}}),
		WithCapability(Capability{Name: "typed", Async: true, NonBlocking: true,
			Params: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`),
			Func:   func(context.Context, json.RawMessage) (any, error) { return "ok", nil }}))
	ctx := context.Background()

	// Served as the call starts, settled on a later turn.
	n.Store(0)
	res, err := e.Run(ctx, `let settled = false;
const p = bump({}); p.then(() => { settled = true });
const seen = count(), before = settled;
const r = await p;
return {seen, before, after: settled, r, isPromise: p instanceof Promise}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"seen":1,"before":false,"after":true,"r":{"n":1},"isPromise":true}`, string(res.Value))
	assert.Equal(t, []ToolEffect{{Seq: 0, Tool: "bump", Effect: EffectWrite, Outcome: "ok"},
		{Seq: 1, Tool: "count", Effect: EffectWrite, Outcome: "ok"}}, calls(res.Effects))

	// Promise.all over non-blocking calls: each served in call order.
	n.Store(0)
	res, err = e.Run(ctx, `return (await Promise.all([bump({}), bump({}), bump({})])).map(r => r.n)`)
	require.NoError(t, err)
	assert.JSONEq(t, `[1,2,3]`, string(res.Value))
	assert.Equal(t, 3, res.Stats.HostCalls)

	// A failure rejects, catchable; uncaught, it is the capability's.
	res, err = e.Run(ctx, `try { await bump({fail: true}) } catch (e) { return e.message }`)
	require.NoError(t, err)
	assert.JSONEq(t, `"no such user"`, string(res.Value))
	_, err = e.Run(ctx, `await bump({fail: true}); return 1`)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindCapability, ee.Kind)
	assert.Equal(t, "bump", ee.Capability)
	assert.Equal(t, "no such user", ee.Message)

	// Arguments refused by the schema: a TypeError, and the handler never ran.
	res, err = e.Run(ctx, `try { await typed({id: "x"}) } catch (e) { return e instanceof TypeError }`)
	require.NoError(t, err)
	assert.JSONEq(t, `true`, string(res.Value))
	assert.Equal(t, OutcomeInvalidArgs, res.Effects.Calls[0].Outcome)
}

// TestNonBlockingDeadline: a handler declared non-blocking that blocks
// anyway holds the run, whose outcome is the deadline's (as after a
// synchronous call), and a cancellation in it ends the run cancelled.
func TestNonBlockingDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e := newExecutor(t, WithLimits(Limits{Deadline: 50 * time.Millisecond}),
		WithCapability(Capability{Name: "slow", Async: true, NonBlocking: true,
			Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
				select {
				case <-release:
				case <-time.After(200 * time.Millisecond):
				}
				return 1, nil
			}}))
	res, err := e.Run(context.Background(), `await slow({}); return 2`)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindTimeout, ee.Kind)
	assert.Equal(t, "slow completed before the timeout", res.Effects.Summary())

	// A cancellation while such a handler runs (cancelled once it has
	// started, released after: nothing races the clock).
	started, hold := make(chan struct{}, 1), make(chan struct{})
	c := newExecutor(t, WithLimits(Limits{Deadline: time.Minute}),
		WithCapability(Capability{Name: "held", Async: true, NonBlocking: true,
			Func: func(context.Context, json.RawMessage) (any, error) {
				started <- struct{}{}
				<-hold // ignores its context
				return 1, nil
			}}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
		close(hold)
	}()
	_, err = c.Run(ctx, `await held({}); return 2`)
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindInternal, ee.Kind)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	close(release)
}

// TestNonBlockingProvider: a provider declared non-blocking has its tools
// served as their calls start, their envelopes opened as any provider
// tool's; a governed executor still serves them on goroutines of their
// own, under its policies.
func TestNonBlockingProvider(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	dispatch := func(_ context.Context, provider, tool, args string) (string, error) {
		switch tool {
		case "bump":
			return `{"result":` + itoa(n.Add(1)) + `}`, nil
		case "count":
			return `{"result":` + itoa(n.Load()) + `}`, nil
		case "fail":
			return `{"error":"no such row"}`, nil
		}
		return "", errors.New("unknown tool " + tool)
	}
	req := Request{Providers: []Provider{{Name: "store", NonBlocking: true}}, Dispatch: dispatch}
	req.Code = `async () => {
  const p = store.bump();
  const seen = await store.count();
  let msg;
  try { await store.fail() } catch (e) { msg = e.message }
  return {first: await p, seen, msg};
}`
	e := newExecutor(t)
	res := e.Execute(context.Background(), req)
	require.Empty(t, res.Error)
	assert.JSONEq(t, `{"first":1,"seen":1,"msg":"no such row"}`, string(res.Result))
	require.NotNil(t, res.Effects)
	assert.Equal(t, 3, res.Effects.Completed)
	// The {"error"} answer is the failed call it is when served on a
	// goroutine: its outcome, and no write completed.
	var outcomes []string
	for _, c := range res.Effects.Calls {
		outcomes = append(outcomes, c.Tool+" "+c.Outcome)
	}
	assert.Equal(t, []string{"store.bump ok", "store.count ok", "store.fail error"}, outcomes)

	// Governed: the budget still counts every call.
	n.Store(0)
	g := newExecutor(t, WithGovernance(Governance{Tools: map[string]ToolPolicy{"store.bump": {Budget: 1}}}))
	res = g.Execute(context.Background(), Request{Providers: []Provider{{Name: "store", NonBlocking: true}},
		Dispatch: dispatch, Code: `async () => { await store.bump(); try { await store.bump() } catch (e) { return "refused" } return "ran" }`})
	require.Empty(t, res.Error)
	assert.JSONEq(t, `"refused"`, string(res.Result))
	assert.Equal(t, int64(1), n.Load())
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestWaitingWorker: after calls awaited one after another, a worker
// waits for the run's next call (where there are two processors); a call
// handed to it still enters its handler before the run returns, awaited
// or not, even as the run ends at once, and a handler that blocks there
// does not keep the next call from overlapping it.
func TestWaitingWorker(t *testing.T) {
	t.Parallel()
	var entered atomic.Int32
	release := make(chan struct{})
	e := newExecutor(t, WithCapability(Capability{Name: "f", Async: true,
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			entered.Add(1)
			if string(args) == `{"block":true}` {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return 1, nil
		}}))
	ctx := context.Background()
	for i := range 200 {
		entered.Store(0)
		res, err := e.Run(ctx, `await f({}); await f({}); await f({}); f({}); return 'returned early'`)
		require.NoError(t, err)
		require.JSONEq(t, `"returned early"`, string(res.Value))
		require.Eventually(t, func() bool { return entered.Load() == 4 }, 10*time.Second, time.Millisecond, "run %d", i)
	}
	// The worker that waited takes a blocking call; the next overlaps it.
	done := make(chan error, 1)
	go func() {
		res, err := e.Run(ctx, `await f({}); await f({}); const p = f({block: true}); await f({}); return "overlapped"`)
		if err == nil && string(res.Value) != `"overlapped"` {
			err = errors.New(string(res.Value))
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a call made after a blocking one waited for it")
	}
	close(release)
}

// TestNonBlockingStackBound: a non-blocking call settled inside its
// callback leaves the stack limit where the run's entry set it. A program
// that recursed, made such a call at depth, and recursed on, once had its
// limit moved down by its depth at each call, and would pass the stack it
// was given until the thread's own overflowed.
func TestNonBlockingStackBound(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Stack: 256 << 10, Deadline: 20 * time.Second}),
		WithCapability(Capability{Name: "nb", Async: true, NonBlocking: true, Unchecked: true,
			Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}))
	depth := func(call string) int {
		res, err := e.Run(context.Background(), `let max = 0
function f(n) { if (n % 50 === 0) `+call+`; max = n; return f(n + 1) + 1 }
try { f(0) } catch (e) { return e instanceof RangeError ? max : String(e) }`)
		require.NoError(t, err)
		n, err := strconv.Atoi(string(res.Value))
		require.NoError(t, err, "the recursion ended with %s", res.Value)
		return n
	}
	plain, called := depth("Math.max(1, 2)"), depth("nb({})")
	assert.Less(t, called, plain*3/2, "with non-blocking calls the recursion went %d deep, %d without", called, plain)
}

// TestNonBlockingFreesRight: a non-blocking handler that blocks anyway
// holds its run, as a synchronous one does, not the execution right:
// another run executes meanwhile.
func TestNonBlockingFreesRight(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	e := newExecutor(t, WithConcurrency(1), WithLimits(Limits{Deadline: time.Minute}),
		WithCapability(Capability{Name: "nb", Async: true, NonBlocking: true, Unchecked: true,
			Func: func(context.Context, json.RawMessage) (any, error) {
				close(entered)
				<-release
				return 1, nil
			}}))
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(context.Background(), "return await nb({})")
		done <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.Run(ctx, "return 2")
	close(release)
	require.NoError(t, err, "a run waited for the right the blocked handler held")
	assert.Equal(t, "2", string(res.Value))
	require.NoError(t, <-done)
}
