package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// obsRecorder is an Observer that writes what it is told as lines, and
// marks the contexts it hands out.
type obsRecorder struct {
	mu    sync.Mutex
	lines []string
}

type markKey struct{}

func (r *obsRecorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *obsRecorder) RunStart(ctx context.Context, run RunInfo) context.Context {
	r.add("run %s start", run.Kind)
	return context.WithValue(ctx, markKey{}, "run:"+run.Kind)
}

func (r *obsRecorder) RunEnd(ctx context.Context, run RunInfo, end RunEnd) {
	r.add("run %s end %s calls=%d mark=%v", run.Kind, end.Outcome, end.HostCalls, ctx.Value(markKey{}))
}

func (r *obsRecorder) ToolStart(ctx context.Context, call ToolCallInfo) context.Context {
	r.add("tool %s#%d start parent=%v", call.Tool, call.Seq, ctx.Value(markKey{}))
	return context.WithValue(ctx, markKey{}, "tool:"+call.Tool)
}

func (r *obsRecorder) ToolEnd(ctx context.Context, call ToolCallInfo, end ToolCallEnd) {
	r.add("tool %s#%d end %s policy=%q", call.Tool, call.Seq, end.Outcome, end.Policy)
}

func (r *obsRecorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.lines...)
	sort.Strings(out)
	return out
}

func TestObserver(t *testing.T) {
	t.Parallel()
	rec := &obsRecorder{}
	marks := make(chan any, 8)
	e := newExecutor(t, WithObserver(rec),
		WithCapability(Capability{Name: "get", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			marks <- ctx.Value(markKey{})
			return 1, nil
		}}),
		WithCapability(Capability{Name: "put", Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			marks <- ctx.Value(markKey{})
			return nil, fmt.Errorf("disk full")
		}}),
		WithCapability(Capability{Name: "slow", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"slow": {Timeout: 10 * time.Millisecond}}}),
	)
	res, err := e.Run(context.Background(), `
		const n = await get({})
		try { put({}) } catch (e) {}
		try { await slow({}) } catch (e) {}
		return n`)
	require.NoError(t, err)
	assert.Equal(t, "1", string(res.Value))
	assert.Equal(t, "tool:get", <-marks, "a handler's context is its call's")
	assert.Equal(t, "tool:put", <-marks)
	assert.Equal(t, []string{
		"run run end ok calls=3 mark=run:run",
		"run run start",
		"tool get#0 end ok policy=\"\"",
		"tool get#0 start parent=run:run",
		"tool put#1 end error policy=\"\"",
		"tool put#1 start parent=run:run",
		"tool slow#2 end timeout policy=\"\"",
		"tool slow#2 start parent=run:run",
	}, rec.sorted())

	rec.lines = nil
	d := func(ctx context.Context, provider, tool, args string) (string, error) {
		marks <- ctx.Value(markKey{})
		return `{"result":2}`, nil
	}
	out := e.Execute(context.Background(), Request{Code: `async () => await db.q()`, Providers: []Provider{{Name: "db"}}, Dispatch: d})
	assert.Equal(t, "2", result(t, out))
	assert.Equal(t, "tool:db.q", <-marks)
	assert.Equal(t, []string{
		"run execute end ok calls=1 mark=run:execute",
		"run execute start",
		"tool db.q#0 end ok policy=\"\"",
		"tool db.q#0 start parent=run:execute",
	}, rec.sorted())
}

// TestObserverGoverned: a pause, a resume's replayed calls and its
// decision are told as such.
func TestObserverGoverned(t *testing.T) {
	t.Parallel()
	rec := &obsRecorder{}
	e := newExecutor(t, WithObserver(rec), gatedWrites())
	s := &store{}
	p := pauseAtWrite(t, e, s)
	rec.lines = nil
	out := e.Resume(context.Background(), p.Continuation, Reject("no"), s.dispatch)
	require.Empty(t, out.Error)
	assert.Equal(t, []string{
		"run resume end ok calls=0 mark=run:resume",
		"run resume start",
		"tool store.read#0 end replayed policy=\"replayed\"",
		"tool store.read#0 start parent=run:resume",
		"tool store.read#1 end replayed policy=\"replayed\"",
		"tool store.read#1 start parent=run:resume",
		"tool store.read#2 end replayed policy=\"replayed\"",
		"tool store.read#2 start parent=run:resume",
		"tool store.write#3 end rejected policy=\"rejected\"",
		"tool store.write#3 start parent=run:resume",
	}, rec.sorted())
}

// TestObserverGetsCleanText: names and texts a program chooses reach an
// Observer as valid UTF-8 within bounds.
func TestObserverGetsCleanText(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var tools, errs []string
	e := newExecutor(t, WithObserver(observerFuncs{
		tool: func(c ToolCallInfo, end ToolCallEnd) {
			mu.Lock()
			defer mu.Unlock()
			tools = append(tools, c.Tool)
			if end.Err != nil {
				errs = append(errs, end.Err.Error())
			}
		},
		run: func(end RunEnd) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, end.Err.Error())
			var ee *ExecError
			assert.ErrorAs(t, end.Err, &ee, "the ExecError is behind it")
		},
	}))
	d := func(context.Context, string, string, string) (string, error) { return `{"error":"\ud800 no"}`, nil }
	res := e.Execute(context.Background(), Request{Code: "async () => { await db['\\ud800' + 'x'.repeat(300)](); }",
		Providers: []Provider{{Name: "db"}}, Dispatch: d})
	require.NotNil(t, res.Err)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, tools, 1)
	assert.True(t, utf8.ValidString(tools[0]) && len(tools[0]) <= MaxObservedName, "%q", tools[0])
	for _, s := range errs {
		assert.True(t, utf8.ValidString(s) && len(s) <= MaxObservedText, "%q", s)
	}
}

// observerFuncs is an Observer of two functions.
type observerFuncs struct {
	tool func(ToolCallInfo, ToolCallEnd)
	run  func(RunEnd)
}

func (o observerFuncs) RunStart(ctx context.Context, _ RunInfo) context.Context { return ctx }
func (o observerFuncs) RunEnd(_ context.Context, _ RunInfo, end RunEnd)         { o.run(end) }
func (o observerFuncs) ToolStart(ctx context.Context, _ ToolCallInfo) context.Context {
	return ctx
}
func (o observerFuncs) ToolEnd(_ context.Context, c ToolCallInfo, end ToolCallEnd) { o.tool(c, end) }
