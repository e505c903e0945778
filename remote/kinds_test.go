package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// holders are programs that each hold 5 MiB of a memory budget while
// they wait on the capability hold, until released.
type holders struct {
	held    chan struct{}
	release chan struct{}
}

func newHolders() *holders {
	return &holders{held: make(chan struct{}, 64), release: make(chan struct{}, 64)}
}

func (h *holders) capability() codemode.Capability {
	return codemode.Capability{Name: "hold", Async: true, Unchecked: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
		h.held <- struct{}{}
		select {
		case <-h.release:
			return 1, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// holding is a holder of mib MiB.
func holding(mib int) string {
	return "const b = new Uint8Array(" + strconv.Itoa(mib) + " << 20).fill(1); await hold(); return b[0]"
}

// fill starts holders of mib MiB on r until one fails for want of room
// (that error is returned) or n hold; it returns a function that releases
// them and waits for their ends.
func (h *holders) fill(t *testing.T, r codemode.Runner, n, mib int) (refusal error, release func()) {
	t.Helper()
	done := make(chan error, n+1)
	held := 0
	for held < n && refusal == nil {
		go func() {
			_, err := r.Run(context.Background(), holding(mib))
			done <- err
		}()
		select {
		case <-h.held:
			held++
		case refusal = <-done:
			require.Error(t, refusal, "a holder ended before it held")
		}
	}
	return refusal, func() {
		for range held {
			h.release <- struct{}{}
		}
		for range held {
			assert.NoError(t, <-done, "a holder")
		}
	}
}

// spin cancels, from inside the program's first tool call, the context it
// runs under, and fails the call once it has ended.
type spin struct {
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (s *spin) context() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	return ctx
}

func (s *spin) stop(ctx context.Context) error {
	s.mu.Lock()
	s.cancel()
	s.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}

// TestErrorKindsSameAsInProcess: every kind of error, and every error
// identity, a program can end with, produced in process and through the
// daemon (its client, Execute and Run, Resume, a retained sandbox's
// calls): the same outcome, byte for byte, an Err of the same Kind and
// fields, the same Error and LLMJSON, and the same answers from errors.Is
// for every codemode and context error. Once, every memory_budget error
// through the daemon matched no ErrMemoryBudget and read
// "codemode: run_js:  (536870912 bytes)".
func TestErrorKindsSameAsInProcess(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	gated := &codemode.Governance{Key: key, Tools: map[string]codemode.ToolPolicy{"db.write": {RequiresApproval: true}}}
	failing := codemode.Capability{Name: "fetch", Unchecked: true, Func: func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("db down")
	}}
	stopper := &spin{}
	stopping := codemode.Capability{Name: "stop", Async: true, Unchecked: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, stopper.stop(ctx)
	}}
	dispatch := func(ctx context.Context, _, tool, args string) (string, error) {
		switch tool {
		case "down":
			return `{"error":"db down"}`, nil
		case "stop":
			return "", stopper.stop(ctx)
		}
		return `{"result":{"total":10}}`, nil
	}
	db := []codemode.Provider{{Name: "db"}}
	execute := func(code string) func(*testing.T, resumer) any {
		return func(t *testing.T, r resumer) any {
			return executedOf(r.Execute(context.Background(), codemode.Request{Code: code, Providers: db, Dispatch: dispatch}), nil)
		}
	}
	run := func(script string) func(*testing.T, resumer) any {
		return func(t *testing.T, r resumer) any { return ranOf(r.Run(context.Background(), script)) }
	}
	// paused pauses a governed program at its write, after a read.
	paused := func(t *testing.T, r resumer) []byte {
		res := r.Execute(context.Background(), codemode.Request{Code: `async () => { const a = await db.read(1); return await db.write(a) }`,
			Providers: db, Dispatch: dispatch})
		require.NotNil(t, res.Paused, "%+v", res)
		return res.Paused.Continuation
	}
	budget := codemode.MinMemoryBudget(8 << 20)
	hs := newHolders()
	for _, tc := range []struct {
		name    string
		opts    twinOptions
		produce func(*testing.T, resumer) any
		kind    codemode.ErrorKind // what the in-process twin must give: the row tests something
		is      []string
		timing  bool // a deadline in milliseconds that scheduling decides
		serial  bool // it shares state with another row: one twin at a time
	}{
		{name: "js", produce: execute(`async () => { console.log('before'); throw new TypeError('bad') }`), kind: codemode.KindJS},
		{name: "js, a syntax error", produce: execute(`async () => {`), kind: codemode.KindJS},
		{name: "js, Run", produce: run(`console.log('before'); throw new TypeError('bad')`), kind: codemode.KindJS},
		{name: "capability", produce: execute(`async () => await db.down()`), kind: codemode.KindCapability},
		{name: "capability, Run", opts: twinOptions{caps: []codemode.Capability{failing}}, produce: run(`return fetch({})`),
			kind: codemode.KindCapability},
		{name: "timeout", opts: twinOptions{limits: codemode.Limits{Deadline: 100 * time.Millisecond}},
			produce: execute(`async () => { for (;;) {} }`), kind: codemode.KindTimeout, is: []string{"context.DeadlineExceeded", "ErrTimeout"}},
		{name: "timeout, Run", opts: twinOptions{limits: codemode.Limits{Deadline: 100 * time.Millisecond}},
			produce: run(`for (;;) {}`), kind: codemode.KindTimeout, is: []string{"context.DeadlineExceeded", "ErrTimeout"}},
		{name: "timeout, the caller's deadline passed before", produce: func(t *testing.T, r resumer) any {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			return executedOf(r.Execute(ctx, codemode.Request{Code: `async () => 1`}), nil)
		}, kind: codemode.KindTimeout, is: []string{"context.DeadlineExceeded", "ErrTimeout"}},
		{name: "timeout, the caller's deadline", opts: twinOptions{limits: codemode.Limits{Deadline: 20 * time.Second}},
			produce: func(t *testing.T, r resumer) any {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				return executedOf(r.Execute(ctx, codemode.Request{Code: `async () => { for (;;) {} }`}), nil)
			}, kind: codemode.KindTimeout, is: []string{"context.DeadlineExceeded", "ErrTimeout"}, timing: true},
		{name: "timeout, Run, the caller's deadline", opts: twinOptions{limits: codemode.Limits{Deadline: 20 * time.Second}},
			produce: func(t *testing.T, r resumer) any {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				return ranOf(r.Run(ctx, `for (;;) {}`))
			}, kind: codemode.KindTimeout, is: []string{"context.DeadlineExceeded", "ErrTimeout"}, timing: true},
		{name: "memory_exceeded", opts: twinOptions{limits: codemode.Limits{Memory: 8 << 20}},
			produce: execute(`async () => { const a = []; for (;;) a.push(new Uint8Array(1 << 16).fill(1)) }`), kind: codemode.KindMemoryExceeded},
		{name: "memory_exceeded, Run", opts: twinOptions{limits: codemode.Limits{Memory: 8 << 20}},
			produce: run(`const a = []; for (;;) a.push(new Uint8Array(1 << 16).fill(1))`), kind: codemode.KindMemoryExceeded},
		{name: "memory_budget: the budget stops a run that grows",
			opts: twinOptions{limits: codemode.Limits{Memory: 8 << 20, Deadline: time.Minute}, budget: budget, caps: []codemode.Capability{hs.capability()}},
			produce: func(t *testing.T, r resumer) any {
				refused, release := hs.fill(t, r, 3, 5)
				require.NoError(t, refused, "three holders fit")
				defer release()
				return ranOf(r.Run(context.Background(), grower))
			}, kind: codemode.KindMemoryBudget, is: []string{"ErrMemoryBudget"}, serial: true},
		{name: "memory_budget: no room to start",
			opts: twinOptions{limits: codemode.Limits{Memory: 8 << 20, Deadline: time.Minute}, budget: budget, caps: []codemode.Capability{hs.capability()}},
			produce: func(t *testing.T, r resumer) any {
				refused, release := hs.fill(t, r, 40, 1)
				defer release()
				require.Error(t, refused, "the budget never filled")
				res := r.Execute(context.Background(), codemode.Request{Code: "async () => 1"})
				return []any{outcomeOf(refused), executedOf(res, nil)}
			}, kind: codemode.KindMemoryBudget, is: []string{"ErrBusy", "ErrMemoryBudget"}, serial: true},
		{name: "pending_promise", produce: execute(`async () => await new Promise(() => {})`), kind: codemode.KindPendingPromise},
		{name: "pending_promise, Run", produce: run(`await new Promise(() => {})`), kind: codemode.KindPendingPromise},
		{name: "internal: the caller cancelled", produce: func(t *testing.T, r resumer) any {
			return executedOf(r.Execute(stopper.context(), codemode.Request{Code: `async () => await db.stop()`, Providers: db, Dispatch: dispatch}), nil)
		}, kind: codemode.KindInternal, is: []string{"context.Canceled"}, serial: true},
		{name: "internal: the caller cancelled, Run", opts: twinOptions{caps: []codemode.Capability{stopping}}, produce: func(t *testing.T, r resumer) any {
			return ranOf(r.Run(stopper.context(), `return await stop({})`))
		}, kind: codemode.KindInternal, is: []string{"context.Canceled"}, serial: true},
		{name: "internal: the caller cancelled before", produce: func(t *testing.T, r resumer) any {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return []any{executedOf(r.Execute(ctx, codemode.Request{Code: `async () => 1`}), nil), ranOf(r.Run(ctx, `return 1`))}
		}, kind: codemode.KindInternal, is: []string{"context.Canceled"}},
		{name: "internal: closed", produce: func(t *testing.T, r resumer) any {
			require.NoError(t, r.Close())
			return []any{executedOf(r.Execute(context.Background(), codemode.Request{Code: `async () => 1`}), nil),
				ranOf(r.Run(context.Background(), `return 1`))}
		}, kind: codemode.KindInternal, is: []string{"ErrClosed"}},
		{name: "internal: a refused continuation", opts: twinOptions{gov: gated}, produce: func(t *testing.T, r resumer) any {
			return executedOf(r.Resume(context.Background(), []byte("not a continuation"), codemode.Approve(), dispatch), nil)
		}, kind: codemode.KindInternal, is: []string{"ErrContinuation"}},
		{name: "invalid_args: a decision's arguments", opts: twinOptions{gov: gated}, produce: func(t *testing.T, r resumer) any {
			cont := paused(t, r)
			return executedOf(r.Resume(context.Background(), cont, codemode.ApproveWith(json.RawMessage(`not json`)), dispatch), nil)
		}, kind: codemode.KindInvalidArgs, is: []string{"ErrInvalidDecision"}},
		{name: "diverged", opts: twinOptions{gov: gated}, produce: func(t *testing.T, r resumer) any {
			body, err := codemode.OpenContinuation(key, paused(t, r))
			require.NoError(t, err)
			var b map[string]any
			require.NoError(t, json.Unmarshal(body, &b))
			b["code"] = `async () => { const a = await db.read(2); return await db.write(a) }`
			body, err = json.Marshal(b)
			require.NoError(t, err)
			forged, err := codemode.SealContinuation(*gated, body)
			require.NoError(t, err)
			return executedOf(r.Resume(context.Background(), forged, codemode.Approve(), dispatch), nil)
		}, kind: codemode.KindDiverged},
		{name: "timeout in a retained sandbox", opts: twinOptions{limits: codemode.Limits{Deadline: 200 * time.Millisecond}},
			produce: func(t *testing.T, r resumer) any {
				res := r.Execute(context.Background(), codemode.Request{Code: `async () => ({spin: () => { for (;;) {} }})`, RetainHandles: true})
				require.NotNil(t, res.Retained, res.Error)
				defer res.Retained.Close()
				v, err := codemode.ParseForDispatch(string(res.Result))
				require.NoError(t, err)
				_, err = res.Retained.Call(context.Background(), v.(map[string]any)["spin"].(codemode.Handle))
				<-res.Retained.Done()
				_, after := res.Retained.Call(context.Background(), v.(map[string]any)["spin"].(codemode.Handle))
				return []any{outcomeOf(err), outcomeOf(res.Retained.Err()), outcomeOf(after)}
			}, kind: codemode.KindTimeout, is: []string{"context.DeadlineExceeded", "ErrTimeout", "ErrRetainedClosed"}},
		{name: "a refused request: no ExecError", produce: func(t *testing.T, r resumer) any {
			res := r.Execute(context.Background(), codemode.Request{Code: `async () => 1`, Providers: []codemode.Provider{{Name: "console"}}})
			require.Nil(t, res.Err)
			require.NotEmpty(t, res.Error)
			return executedOf(res, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.serial {
				t.Parallel()
			}
			tw := newTwins(t, tc.opts)
			local, remote := tc.produce(t, tw.local), tc.produce(t, tw.remote)
			if tc.kind != "" {
				first := firstErr(local)
				require.NotNil(t, first, "in process: %+v", local)
				assert.Equal(t, tc.kind, first.Kind, "in process: %+v", local)
				assert.Equal(t, tc.is, first.Is, "in process: %+v", local)
			}
			if tc.timing {
				local, remote = unclocked(t, local), unclocked(t, remote)
			}
			assert.Equal(t, local, remote)
		})
	}
}

// firstErr is the first error outcome in o.
func firstErr(o any) *errOutcome {
	switch o := o.(type) {
	case *errOutcome:
		return o
	case executed:
		return o.Err
	case ran:
		return o.Err
	case []any:
		for _, e := range o {
			if f := firstErr(e); f != nil {
				return f
			}
		}
	}
	return nil
}

// unclocked is o with its deadline's milliseconds, which scheduling
// decides (how much of the caller's deadline was left when the run
// began), read as 0; their range is asserted first.
func unclocked(t *testing.T, o any) any {
	b, err := json.Marshal(o)
	require.NoError(t, err)
	ms := regexp.MustCompile(`(after |deadline_ms\\?":)(\d+)`)
	for _, m := range ms.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[2])
		assert.True(t, n > 200 && n <= 300, "the caller's 300 ms, less what passed before the run began: %s", b)
	}
	return ms.ReplaceAllString(string(b), "${1}0")
}

// TestBadDecisionRedeemsNothing: a decision whose edited arguments cannot
// run is refused before the continuation is redeemed, through the daemon's
// client as in process, so the continuation can still be decided.
func TestBadDecisionRedeemsNothing(t *testing.T) {
	var mu sync.Mutex
	redeemed := map[string]int{}
	gov := &codemode.Governance{Key: []byte(strings.Repeat("k", 32)),
		Tools: map[string]codemode.ToolPolicy{"db.write": {RequiresApproval: true}},
		Redeem: func(id string, _ time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			redeemed[id]++
			return nil
		}}
	dispatch := func(context.Context, string, string, string) (string, error) { return `{"result":1}`, nil }
	tw := newTwins(t, twinOptions{gov: gov})
	var got []executed
	for _, r := range tw.both() {
		res := r.r.Execute(context.Background(), codemode.Request{Code: `async () => await db.write(1)`,
			Providers: []codemode.Provider{{Name: "db"}}, Dispatch: dispatch})
		require.NotNil(t, res.Paused, "%s: %+v", r.name, res)
		bad := r.r.Resume(context.Background(), res.Paused.Continuation, codemode.ApproveWith(json.RawMessage(`{"not":"an array"}`)), dispatch)
		require.ErrorIs(t, bad.Err, codemode.ErrInvalidDecision, r.name)
		assert.Equal(t, codemode.KindInvalidArgs, bad.Err.Kind, r.name)
		mu.Lock()
		assert.Empty(t, redeemed, r.name)
		mu.Unlock()
		got = append(got, executedOf(bad, nil))
		ok := r.r.Resume(context.Background(), res.Paused.Continuation, codemode.ApproveWith(json.RawMessage(`[2]`)), dispatch)
		assert.Equal(t, "1", string(ok.Result), "%s: %+v", r.name, ok)
		mu.Lock()
		assert.Equal(t, map[string]int{res.Paused.ID: 1}, redeemed, r.name)
		clear(redeemed)
		mu.Unlock()
	}
	assert.Equal(t, got[0], got[1])
}

// TestLostAtTheCallersDeadline: a stream that ends with DEADLINE_EXCEEDED
// a moment before the caller's context sees its deadline pass (the daemon
// saw it first, or grpc's timer fired before the context's) is the
// executor's timeout, not an internal error: seen once in CI as
// "remote: DeadlineExceeded: stream terminated by RST_STREAM".
func TestLostAtTheCallersDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := status.Error(codes.DeadlineExceeded, "stream terminated by RST_STREAM with error code: CANCEL")
	res := remote.Lost(ctx, codemode.RunJSToolName, 300*time.Millisecond, err)
	require.NotNil(t, res.Err)
	assert.Equal(t, codemode.KindTimeout, res.Err.Kind)
	assert.Equal(t, "The program timed out after 300ms.", res.Error)
	assert.ErrorIs(t, res.Err, codemode.ErrTimeout)
	// Without a deadline the status is the daemon's.
	res = remote.Lost(context.Background(), codemode.RunJSToolName, 0, err)
	assert.Equal(t, codemode.KindInternal, res.Err.Kind)
	assert.Equal(t, "remote: DeadlineExceeded: stream terminated by RST_STREAM with error code: CANCEL", res.Error)
}
