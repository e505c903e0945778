package codemode

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testKey = bytes.Repeat([]byte("k"), 32)

// store is a provider the governance tests drive: reads answer records,
// writes are logged, and every call is counted by name.
type store struct {
	mu     sync.Mutex
	calls  []string
	writes []string
}

func (s *store) dispatch(_ context.Context, provider, tool, argsJSON string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, tool+argsJSON)
	switch tool {
	case "read":
		return `{"result":{"id":` + strings.Trim(argsJSON, "[]") + `,"total":10}}`, nil
	case "write":
		s.writes = append(s.writes, argsJSON)
		return `{"result":"written"}`, nil
	}
	return `{"error":"no such tool"}`, nil
}

func (s *store) count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// readsThenWrite reads three records and writes their sum.
const readsThenWrite = `async () => {
	let sum = 0
	for (const id of [1, 2, 3]) sum += (await store.read(id)).total
	try {
		return {sum, wrote: await store.write({sum})}
	} catch (e) {
		return {sum, refused: e.message}
	}
}`

var storeProviders = []Provider{{Name: "store", Tools: []string{"read", "write"}}}

func gatedWrites(opts ...func(*Governance)) Option {
	g := Governance{Tools: map[string]ToolPolicy{"store.write": {RequiresApproval: true}}, Key: testKey}
	for _, o := range opts {
		o(&g)
	}
	return WithGovernance(g)
}

// pauseAtWrite runs readsThenWrite until it pauses at the write.
func pauseAtWrite(t *testing.T, e *Executor, s *store) *Paused {
	t.Helper()
	res := e.Execute(context.Background(), Request{Code: readsThenWrite, Providers: storeProviders, Dispatch: s.dispatch})
	require.Empty(t, res.Error)
	require.NotNil(t, res.Paused, "the run pauses at the write")
	assert.Nil(t, res.Result)
	p := res.Paused
	assert.Equal(t, "store.write", p.Tool)
	assert.JSONEq(t, `[{"sum":30}]`, string(p.Args))
	assert.Equal(t, 3, p.Completed)
	assert.Equal(t, 3, s.count("read"))
	assert.Equal(t, 0, s.count("write"), "the write waits for its decision")
	return p
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites())
	for _, tt := range []struct {
		name   string
		d      Decision
		want   string
		writes []string
	}{
		{"approved", Approve(), `{"sum":30,"wrote":"written"}`, []string{`[{"sum":30}]`}},
		{"rejected", Reject("not today"), `{"sum":30,"refused":"tool \"store.write\" was rejected: not today"}`, nil},
		{"edited", ApproveWith(json.RawMessage(`[{"sum":29}]`)), `{"sum":30,"wrote":"written"}`, []string{`[{"sum":29}]`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &store{}
			p := pauseAtWrite(t, e, s)
			res := e.Resume(context.Background(), p.Continuation, tt.d, s.dispatch)
			assert.Equal(t, tt.want, result(t, res))
			assert.Nil(t, res.Paused)
			assert.Equal(t, 3, s.count("read"), "the reads are answered from the continuation")
			assert.Equal(t, tt.writes, s.writes, "the write runs once, with the decided arguments")
		})
	}
}

// TestPauseAndResumeRun: the same through Run and capabilities, in a
// second executor (another process holding the key).
func TestPauseAndResumeRun(t *testing.T) {
	t.Parallel()
	var reads, writes atomic.Int32
	caps := []Option{
		WithCapability(Capability{Name: "read", Async: true, Func: func(_ context.Context, args json.RawMessage) (any, error) {
			reads.Add(1)
			return map[string]any{"total": 10}, nil
		}}),
		WithCapability(Capability{Name: "write", Func: func(_ context.Context, args json.RawMessage) (any, error) {
			writes.Add(1)
			return json.RawMessage(args), nil
		}}),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"write": {RequiresApproval: true}}, Key: testKey}),
	}
	script := `let sum = 0
for (const id of [1, 2, 3]) sum += (await read({id})).total
return {sum, wrote: write({sum, at: Date.now(), r: Math.random()})}`
	res, err := newExecutor(t, caps...).Run(context.Background(), script)
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	assert.Nil(t, res.Value)
	assert.Equal(t, "write", res.Paused.Tool)
	assert.EqualValues(t, 3, reads.Load())

	other := newExecutor(t, caps...)
	out := other.Resume(context.Background(), res.Paused.Continuation, Approve(), nil)
	require.Empty(t, out.Error)
	var v struct {
		Sum   int
		Wrote struct {
			Sum int
			At  float64
			R   float64
		}
	}
	require.NoError(t, json.Unmarshal(out.Result, &v))
	assert.Equal(t, 30, v.Sum)
	assert.Equal(t, 30, v.Wrote.Sum)
	var args struct{ At, R float64 }
	require.NoError(t, json.Unmarshal(res.Paused.Args, &args))
	assert.Equal(t, args.At, v.Wrote.At, "the resumed run sees the clock the paused one saw")
	assert.Equal(t, args.R, v.Wrote.R, "and the same random numbers")
	assert.EqualValues(t, 3, reads.Load(), "no read runs again")
	assert.EqualValues(t, 1, writes.Load())
}

// TestPauseBesideCallsInFlight: a Promise.all of a read and a gated write
// pauses once the read has its answer; the resume answers the read from
// the continuation.
func TestPauseBesideCallsInFlight(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites())
	var reads atomic.Int32
	slow := func(ctx context.Context, provider, tool, argsJSON string) (string, error) {
		if tool == "read" {
			reads.Add(1)
			time.Sleep(20 * time.Millisecond) // still running when the write pauses the run
			return `{"result":{"total":5}}`, nil
		}
		return `{"result":"written"}`, nil
	}
	code := `async () => {
		const [r, w] = await Promise.all([store.read(1), store.write({x: 1})])
		return [r.total, w]
	}`
	res := e.Execute(context.Background(), Request{Code: code, Providers: storeProviders, Dispatch: slow})
	require.Empty(t, res.Error)
	require.NotNil(t, res.Paused)
	assert.Equal(t, 1, res.Paused.Completed, "the read in flight finished and is in the continuation")
	out := e.Resume(context.Background(), res.Paused.Continuation, Approve(), slow)
	assert.Equal(t, `[5,"written"]`, result(t, out))
	assert.EqualValues(t, 1, reads.Load(), "the read ran once")
}

// TestPauseTwice: a run pauses at each gated call; each continuation
// carries the calls before it.
func TestPauseTwice(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites())
	s := &store{}
	code := `async () => [await store.read(1), await store.write(1), await store.read(2), await store.write(2)]`
	res := e.Execute(context.Background(), Request{Code: code, Providers: storeProviders, Dispatch: s.dispatch})
	require.NotNil(t, res.Paused)
	assert.Equal(t, "[1]", string(res.Paused.Args))
	res = e.Resume(context.Background(), res.Paused.Continuation, Approve(), s.dispatch)
	require.Empty(t, res.Error)
	require.NotNil(t, res.Paused, "the second write pauses again")
	assert.Equal(t, "[2]", string(res.Paused.Args))
	assert.Equal(t, 3, res.Paused.Completed)
	res = e.Resume(context.Background(), res.Paused.Continuation, Reject("enough"), s.dispatch)
	assert.Contains(t, res.Error, `tool "store.write" was rejected: enough`, "an uncaught rejection fails the program")
	assert.Equal(t, []string{"read[1]", "write[1]", "read[2]"}, s.calls, "every call ran once")
}

func TestContinuationRefused(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites())
	s := &store{}
	p := pauseAtWrite(t, e, s)
	c := p.Continuation
	flip := func(i int) []byte { b := bytes.Clone(c); b[i] ^= 1; return b }
	foreign := newExecutor(t, WithGovernance(Governance{Key: bytes.Repeat([]byte("x"), 32)}))
	for _, tt := range []struct {
		name string
		e    *Executor
		c    []byte
	}{
		{"a flipped bit in the body", e, flip(len(c) / 2)},
		{"a flipped bit in the tag", e, flip(len(c) - 1)},
		{"a flipped flag", e, flip(4)},
		{"truncated", e, c[:len(c)-1]},
		{"truncated to the head", e, c[:5]},
		{"empty", e, nil},
		{"another key", foreign, c},
		{"no governance", newExecutor(t), c},
	} {
		res := tt.e.Resume(context.Background(), tt.c, Approve(), s.dispatch)
		require.NotNil(t, res.Err, tt.name)
		assert.ErrorIs(t, res.Err, ErrContinuation, tt.name)
		assert.Nil(t, res.Result, tt.name)
	}
	assert.Equal(t, 0, s.count("write"), "nothing ran")
	assert.Equal(t, 3, s.count("read"), "nothing ran")

	// The limits it recorded are refused to be changed.
	other := newExecutor(t, gatedWrites(), WithLimits(Limits{Memory: 64 << 20}))
	res := other.Resume(context.Background(), c, Approve(), s.dispatch)
	assert.ErrorIs(t, res.Err, ErrContinuation)
	assert.Contains(t, res.Error, "memory")
}

func TestContinuationExpiresAndRedeems(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites(func(g *Governance) { g.TTL = time.Minute; g.Redeem = SingleUse() }))
	s := &store{}
	p := pauseAtWrite(t, e, s)
	assert.WithinDuration(t, time.Now().Add(time.Minute), p.Expires, 2*time.Second)
	_, err := openContinuation(testKey, p.Continuation, p.Expires)
	assert.ErrorIs(t, err, ErrContinuationExpired)
	assert.ErrorIs(t, err, ErrContinuation)

	assert.Empty(t, e.Resume(context.Background(), p.Continuation, Approve(), s.dispatch).Error)
	res := e.Resume(context.Background(), p.Continuation, Approve(), s.dispatch)
	assert.ErrorIs(t, res.Err, ErrContinuation, "SingleUse refuses the second resume")
	assert.Equal(t, 1, s.count("write"))
}

func TestContinuationSealed(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites(func(g *Governance) { g.Encrypt = true }))
	s := &store{}
	p := pauseAtWrite(t, e, s)
	for _, secret := range []string{"store.read", "readsThenWrite", "total", "sum"} {
		assert.NotContains(t, string(p.Continuation), secret, "a sealed continuation reveals nothing")
	}
	assert.Equal(t, `{"sum":30,"wrote":"written"}`, result(t, e.Resume(context.Background(), p.Continuation, Approve(), s.dispatch)))
	plain := newExecutor(t, gatedWrites())
	p2 := pauseAtWrite(t, plain, &store{})
	assert.Contains(t, string(p2.Continuation), "store.read", "an unsealed one is readable JSON")
}

// TestResumeDiverges: a record the program does not repeat ends the run
// with kind diverged before the live part runs.
func TestResumeDiverges(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites())
	s := &store{}
	p := pauseAtWrite(t, e, s)
	b, err := openContinuation(testKey, p.Continuation, time.Now())
	require.NoError(t, err)
	b.Calls[1].Args = "[7]"
	forged, err := sealContinuation(e.gov, b)
	require.NoError(t, err)
	res := e.Resume(context.Background(), forged, Approve(), s.dispatch)
	require.NotNil(t, res.Err)
	assert.Equal(t, KindDiverged, res.Err.Kind)
	assert.Contains(t, res.Error, `call 2 was store.read([7]) and is now store.read([2])`)
	assert.Equal(t, 0, s.count("write"))

	b.Calls[1].Args = "[2]"
	b.Code = `async () => (await store.read(1)).total`
	forged, err = sealContinuation(e.gov, b)
	require.NoError(t, err)
	res = e.Resume(context.Background(), forged, Approve(), s.dispatch)
	require.NotNil(t, res.Err)
	assert.Equal(t, KindDiverged, res.Err.Kind, "a program that ends before its paused call diverged")
}

func TestApprover(t *testing.T) {
	t.Parallel()
	var asked []ToolCall
	var mu sync.Mutex
	decide := map[string]Decision{"1": Approve(), "2": Reject("no"), "3": ApproveWith(json.RawMessage(`[33]`))}
	e := newExecutor(t, WithGovernance(Governance{
		Tools: map[string]ToolPolicy{"store.write": {RequiresApproval: true}},
		Approver: func(ctx context.Context, call ToolCall) (Decision, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, call)
			if string(call.Args) == "[4]" {
				return Decision{}, errors.New("the approver is away")
			}
			return decide[strings.Trim(string(call.Args), "[]")], nil
		},
	}))
	s := &store{}
	code := `async () => {
		const out = []
		for (const n of [1, 2, 3, 4]) {
			try { out.push(await store.write(n)) } catch (e) { out.push(e.message) }
		}
		return out
	}`
	res := e.Execute(context.Background(), Request{Code: code, Providers: storeProviders, Dispatch: s.dispatch})
	assert.Equal(t, `["written","tool \"store.write\" was rejected: no","written","tool \"store.write\" was not approved: the approver is away"]`,
		result(t, res))
	assert.Equal(t, []string{"[1]", "[33]"}, s.writes)
	assert.Len(t, asked, 4)
}

func TestToolPolicies(t *testing.T) {
	t.Parallel()
	var inFlight, most atomic.Int32
	pair, pairOnce := make(chan struct{}), sync.Once{}
	e := newExecutor(t,
		WithCapability(Capability{Name: "slow", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Minute):
				return "late", nil
			}
		}}),
		WithCapability(Capability{Name: "busy", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
			n := inFlight.Add(1)
			if n == 2 {
				pairOnce.Do(func() { close(pair) })
			}
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			select { // hold the place until a second call is in flight beside this one
			case <-pair:
			case <-time.After(10 * time.Second):
			}
			return 1, nil
		}}),
		WithCapability(Capability{Name: "metered", Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }}),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{
			"slow":    {Timeout: 20 * time.Millisecond},
			"busy":    {MaxInFlight: 2},
			"metered": {Budget: 3},
		}}),
	)
	res, err := e.Run(context.Background(), `
		let timedOut
		try { await slow({}) } catch (e) { timedOut = e.message }
		const all = await Promise.all(Array.from({length: 10}, () => busy({})))
		const got = []
		for (let i = 0; i < 5; i++) { try { got.push(metered({})) } catch (e) { got.push(e.message) } }
		return {timedOut, busy: all.length, metered: got}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"timedOut":"tool \"slow\" timed out after 20ms (its per-call timeout)","busy":10,
		"metered":[1,1,1,"tool \"metered\" is over its budget of 3 calls per run","tool \"metered\" is over its budget of 3 calls per run"]}`,
		string(res.Value))
	assert.LessOrEqual(t, most.Load(), int32(2), "never more than MaxInFlight at once")
	assert.EqualValues(t, 2, most.Load(), "the bound is reached")
}

func TestGovernanceRefused(t *testing.T) {
	t.Parallel()
	for _, g := range []Governance{
		{Key: []byte("short")},
		{Tools: map[string]ToolPolicy{"x": {RequiresApproval: true}}},
		{Tools: map[string]ToolPolicy{"x": {Timeout: -1}}},
		{TTL: -time.Second, Key: testKey},
	} {
		_, err := New(WithGovernance(g))
		assert.ErrorIs(t, err, ErrInvalidLimits, fmt.Sprint(g))
	}
}

func FuzzContinuation(f *testing.F) {
	e, err := New(gatedWrites())
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	s := &store{}
	res := e.Execute(context.Background(), Request{Code: readsThenWrite, Providers: storeProviders, Dispatch: s.dispatch})
	if res.Paused == nil {
		f.Fatal("no pause")
	}
	f.Add(res.Paused.Continuation)
	f.Add([]byte("cmc1\x00{}"))
	f.Add([]byte{})
	now := time.Now()
	f.Fuzz(func(t *testing.T, c []byte) {
		b, err := openContinuation(testKey, c, now)
		if err != nil {
			var ce *ContinuationError
			if !errors.As(err, &ce) {
				t.Fatalf("not a ContinuationError: %v", err)
			}
			return
		}
		if b.Pending < 0 || b.Pending >= len(b.Calls) {
			t.Fatalf("accepted without a pending call: %+v", b)
		}
	})
}

// FuzzContinuationBody: whatever an authentic continuation's body holds,
// the decoder refuses it with a ContinuationError or returns a body with
// a call waiting for a decision.
func FuzzContinuationBody(f *testing.F) {
	f.Add([]byte(`{"v":1,"mode":"run","expires":9999999999,"calls":[{"tool":"t","args":"{}"}],"pending":0}`))
	f.Add([]byte(`{"v":1,"mode":"execute","expires":1,"calls":[],"pending":0}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`))
	mac, _ := continuationKeys(testKey)
	f.Fuzz(func(t *testing.T, body []byte) {
		c := append([]byte("cmc1\x00"), body...)
		m := hmac.New(sha256.New, mac)
		m.Write(c)
		b, err := openContinuation(testKey, m.Sum(c), time.Unix(0, 0))
		if err != nil {
			var ce *ContinuationError
			if !errors.As(err, &ce) {
				t.Fatalf("not a ContinuationError: %v", err)
			}
			return
		}
		if b.Pending < 0 || b.Pending >= len(b.Calls) || b.Calls[b.Pending].answered() {
			t.Fatalf("accepted without a pending call: %+v", b)
		}
	})
}

func TestCodeModeToolPauses(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	send := NewTool(ToolDefinition{Name: "send_mail", Description: "sends"}, func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		sent.Add(1)
		return json.RawMessage(`"sent"`), nil
	})
	tool, err := NewCodeModeTool([]Tool{send}, Limits{},
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"send_mail": {RequiresApproval: true}}, Key: testKey}))
	require.NoError(t, err)
	defer tool.Close()
	args := json.RawMessage(`{"code": "console.log('drafting'); return await send_mail({to: 'ada'})"}`)
	r, err := tool.Invoke(context.Background(), args)
	require.NoError(t, err)
	require.NotNil(t, r.Paused)
	assert.False(t, r.IsError)
	assert.JSONEq(t, `{"paused":{"tool":"send_mail","args":{"to":"ada"}},"logs":["drafting"]}`, string(r.Output))
	assert.EqualValues(t, 0, sent.Load())

	_, err = tool.Call(context.Background(), args)
	var p *Paused
	require.ErrorAs(t, err, &p, "Call hands a pause to the loop as an error")

	r, err = tool.Resume(context.Background(), r.Paused.Continuation, Approve())
	require.NoError(t, err)
	assert.Nil(t, r.Paused)
	assert.JSONEq(t, `{"result":"sent","logs":["drafting"]}`, string(r.Output))
	assert.EqualValues(t, 1, sent.Load())
}

func TestInspectContinuation(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites(func(g *Governance) { g.Encrypt = true }))
	p := pauseAtWrite(t, e, &store{})
	info, err := InspectContinuation(testKey, p.Continuation)
	require.NoError(t, err)
	assert.Equal(t, &ContinuationInfo{ID: p.ID, Execute: true, Tool: "store.write", Args: json.RawMessage(`[{"sum":30}]`),
		Completed: 3, Providers: []string{"store"}, Limits: e.Limits(), Created: info.Created, Expires: p.Expires}, info)
	_, err = InspectContinuation(bytes.Repeat([]byte("y"), 32), p.Continuation)
	assert.ErrorIs(t, err, ErrContinuation)
}

// TestCanApprove: an Approver that can decide some runs only; the others
// pause.
func TestCanApprove(t *testing.T) {
	t.Parallel()
	type askKey struct{}
	e := newExecutor(t, gatedWrites(func(g *Governance) {
		g.Approver = func(context.Context, ToolCall) (Decision, error) { return Reject("asked and refused"), nil }
		g.CanApprove = func(ctx context.Context) bool { return ctx.Value(askKey{}) != nil }
	}))
	s := &store{}
	res := e.Execute(context.WithValue(context.Background(), askKey{}, true),
		Request{Code: readsThenWrite, Providers: storeProviders, Dispatch: s.dispatch})
	assert.Equal(t, `{"sum":30,"refused":"tool \"store.write\" was rejected: asked and refused"}`, result(t, res))
	p := pauseAtWrite(t, e, &store{})
	assert.Equal(t, "store.write", p.Tool)
}

// TestResealContinuation: a run carried from one key to another (the
// daemon's key to the host's, and back) resumes under the second.
func TestResealContinuation(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites())
	s := &store{}
	p := pauseAtWrite(t, e, s)
	body, err := OpenContinuation(testKey, p.Continuation)
	require.NoError(t, err)
	host := Governance{Key: bytes.Repeat([]byte("h"), 32), Encrypt: true}
	sealed, err := SealContinuation(host, body)
	require.NoError(t, err)
	_, err = OpenContinuation(testKey, sealed)
	assert.ErrorIs(t, err, ErrContinuation, "the first key no longer opens it")
	back, err := OpenContinuation(host.Key, sealed)
	require.NoError(t, err)
	again, err := SealContinuation(Governance{Key: testKey}, back)
	require.NoError(t, err)
	assert.Equal(t, `{"sum":30,"wrote":"written"}`, result(t, e.Resume(context.Background(), again, Approve(), s.dispatch)))

	_, err = SealContinuation(host, []byte(`{"v":1}`))
	assert.ErrorIs(t, err, ErrContinuation)
}

// BenchmarkResume is the cost of a resume: a program that made n reads
// before its gated write, resumed approved (the reads answered from the
// continuation, the write run live), against running the same program
// with no governance; bytes is the continuation's size.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{0, 10, 100} {
		code := fmt.Sprintf(`async () => {
			let sum = 0
			for (let i = 0; i < %d; i++) sum += (await store.read(i)).total
			return await store.write({sum})
		}`, n)
		s := &store{}
		b.Run(fmt.Sprintf("reads-%d/resume", n), func(b *testing.B) {
			e, err := New(gatedWrites())
			require.NoError(b, err)
			defer e.Close()
			res := e.Execute(context.Background(), Request{Code: code, Providers: storeProviders, Dispatch: s.dispatch})
			require.NotNil(b, res.Paused)
			for b.Loop() {
				if out := e.Resume(context.Background(), res.Paused.Continuation, Approve(), s.dispatch); out.Error != "" {
					b.Fatal(out.Error)
				}
			}
			b.ReportMetric(float64(len(res.Paused.Continuation)), "bytes")
		})
		b.Run(fmt.Sprintf("reads-%d/live", n), func(b *testing.B) {
			e, err := New()
			require.NoError(b, err)
			defer e.Close()
			for b.Loop() {
				if out := e.Execute(context.Background(), Request{Code: code, Providers: storeProviders, Dispatch: s.dispatch}); out.Error != "" {
					b.Fatal(out.Error)
				}
			}
		})
	}
}

// TestResumeKeepsWhatTheRunHad: a Grant is recorded and applied again; a
// program with a network of its own is refused; a TTL under a second
// never expires before it is over (expiry is in whole seconds, rounded
// up); a schema that cannot be recorded is refused up front.
func TestResumeKeepsWhatTheRunHad(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, json.RawMessage) (any, error) { return "ok", nil }
	e := newExecutor(t,
		WithCapability(Capability{Name: "write", Func: noop}),
		WithCapability(Capability{Name: "secret", Func: noop}),
		WithGovernance(Governance{Tools: map[string]ToolPolicy{"write": {RequiresApproval: true}}, Key: testKey}))
	res, err := e.Run(Grant(context.Background(), "write"), `return write({secret: typeof secret})`)
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	assert.JSONEq(t, `{"secret":"undefined"}`, string(res.Paused.Args))
	out := e.Resume(context.Background(), res.Paused.Continuation, Approve(), nil)
	require.Empty(t, out.Error, "the resumed run is granted what the paused one was")
	assert.Equal(t, `"ok"`, string(out.Result))

	short := newExecutor(t, gatedWrites(func(g *Governance) { g.TTL = time.Millisecond }))
	before := time.Now()
	p := pauseAtWrite(t, short, &store{})
	assert.False(t, p.Expires.Before(before.Add(time.Millisecond)), "a 1 ms TTL is not cut to nothing: %v", p.Expires)

	g := newExecutor(t, gatedWrites())
	r := g.Execute(context.Background(), Request{Code: readsThenWrite, Providers: storeProviders, Dispatch: (&store{}).dispatch,
		Outbound: http.DefaultTransport})
	require.NotNil(t, r.Paused)
	out = g.Resume(context.Background(), r.Paused.Continuation, Approve(), (&store{}).dispatch)
	assert.ErrorIs(t, out.Err, ErrContinuation)
	assert.Contains(t, out.Error, "network of its own")

	bad := []Provider{{Name: "store", Tools: []string{"read", "write"}, APIs: []ProviderTool{{Name: "read", Params: json.RawMessage(`{`)}}}}
	r = g.Execute(context.Background(), Request{Code: readsThenWrite, Providers: bad, Dispatch: (&store{}).dispatch})
	require.NotNil(t, r.Err)
	assert.Equal(t, KindInvalidArgs, r.Err.Kind)
}

// TestResumeThatThrowsEarlyDiverged: a resumed program that ends with its
// own error before the paused call did not repeat its record.
func TestResumeThatThrowsEarlyDiverged(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites())
	p := pauseAtWrite(t, e, &store{})
	b, err := openContinuation(testKey, p.Continuation, time.Now())
	require.NoError(t, err)
	b.Code = `async () => { await store.read(1); throw new Error('early') }`
	forged, err := sealContinuation(e.gov, b)
	require.NoError(t, err)
	res := e.Resume(context.Background(), forged, Approve(), (&store{}).dispatch)
	require.NotNil(t, res.Err)
	assert.Equal(t, KindDiverged, res.Err.Kind)
}

// TestLateApprovalIsVoid: a decision that arrives after the run has
// ended (its deadline, or the program settling without awaiting the
// call) is void: the gated tool never runs, and the run does not wait for
// it. The Approver ignores its context and decides only once the run has
// returned; an Observer says when the call is over.
func TestLateApprovalIsVoid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		code string
		run  bool // through Run and capabilities
		kind ErrorKind
	}{
		{"deadline/execute", `async () => { await store.write({amount: 100}); return "wrote" }`, false, KindTimeout},
		{"settled/execute", `async () => { store.write({amount: 100}); return "returned" }`, false, ""},
		{"deadline/run", `await put({amount: 100}); return "wrote"`, true, KindTimeout},
		{"deadline/run-sync", `putSync({amount: 100}); return "wrote"`, true, KindTimeout},
		{"settled/run", `put({amount: 100}); return "returned"`, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var released atomic.Bool
			release, once := make(chan struct{}), sync.Once{}
			free := func() { once.Do(func() { released.Store(true); close(release) }) }
			defer time.AfterFunc(30*time.Second, free).Stop() // a run that waits for its Approver returns, late
			ended := make(chan ToolCallEnd, 1)
			var ran atomic.Int32
			put := func(context.Context, json.RawMessage) (any, error) {
				ran.Add(1)
				return "put", nil
			}
			deadline := 200 * time.Millisecond
			if tt.kind == "" {
				deadline = 20 * time.Second // the program settles on its own, at once
			}
			e := newExecutor(t, WithLimits(Limits{Deadline: deadline}),
				WithCapability(Capability{Name: "put", Async: true, Func: put}),
				WithCapability(Capability{Name: "putSync", Func: put}),
				WithObserver(observerFuncs{run: func(RunEnd) {}, tool: func(_ ToolCallInfo, end ToolCallEnd) { ended <- end }}),
				WithGovernance(Governance{
					Tools: map[string]ToolPolicy{"*": {RequiresApproval: true}},
					Approver: func(context.Context, ToolCall) (Decision, error) {
						<-release // deaf to its context
						return Approve(), nil
					},
				}))
			s := &store{}
			var errKind ErrorKind
			var value string
			if tt.run {
				res, err := e.Run(context.Background(), tt.code)
				var ee *ExecError
				if errors.As(err, &ee) {
					errKind = ee.Kind
				} else {
					require.NoError(t, err)
					value = string(res.Value)
				}
			} else {
				res := e.Execute(context.Background(), Request{Code: tt.code, Providers: storeProviders, Dispatch: s.dispatch})
				if res.Err != nil {
					errKind = res.Err.Kind
				}
				value = string(res.Result)
			}
			assert.False(t, released.Load(), "the run waited for its Approver")
			assert.Equal(t, tt.kind, errKind)
			if tt.kind == "" {
				assert.Equal(t, `"returned"`, value)
			}
			free()
			end := <-ended
			assert.Equal(t, "timeout", end.Outcome, "the call ended with its run")
			assert.Empty(t, end.Policy, "no decision came in time")
			assert.Equal(t, 0, s.count("write"), "a decision after the run ended is void")
			assert.Zero(t, ran.Load(), "a decision after the run ended is void")
		})
	}
}

// TestDecisionArgumentsChecked: edited arguments that are not JSON, or not
// of the call's form, are refused before anything runs (Resume), or
// reject the call (an Approver's): the tool never sees them.
func TestDecisionArgumentsChecked(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args, why string
	}{
		{"not json", "are not JSON"},
		{`[1,`, "are not JSON"},
		{"\"\xff\"", "are not JSON"},
		{`{"sum":29}`, "must be a JSON array"},
		{`29`, "must be a JSON array"},
		{"", "are not JSON"},
	} {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			d := ApproveWith(json.RawMessage(tt.args))
			e := newExecutor(t, gatedWrites(func(g *Governance) { g.Redeem = SingleUse() }))
			s := &store{}
			p := pauseAtWrite(t, e, s)
			res := e.Resume(context.Background(), p.Continuation, d, s.dispatch)
			require.NotNil(t, res.Err)
			assert.Equal(t, KindInvalidArgs, res.Err.Kind)
			assert.ErrorIs(t, res.Err, ErrInvalidDecision)
			assert.Contains(t, res.Error, tt.why)
			assert.Equal(t, 3, s.count("read"), "nothing ran again")
			assert.Empty(t, s.writes)
			// Refused before Redeem: the continuation is not spent.
			assert.Equal(t, `{"sum":30,"wrote":"written"}`, result(t, e.Resume(context.Background(), p.Continuation, Approve(), s.dispatch)))

			approving := newExecutor(t, WithGovernance(Governance{
				Tools:    map[string]ToolPolicy{"store.write": {RequiresApproval: true}},
				Approver: func(context.Context, ToolCall) (Decision, error) { return d, nil },
			}))
			s = &store{}
			out := result(t, approving.Execute(context.Background(), Request{Code: readsThenWrite, Providers: storeProviders, Dispatch: s.dispatch}))
			assert.Contains(t, out, `"refused":"tool \"store.write\" was not approved: codemode: invalid decision: the edited arguments `)
			assert.Empty(t, s.writes)
		})
	}
	call := ToolCall{Tool: "put", Args: json.RawMessage(`{"a":1}`)}
	assert.NoError(t, ApproveWith(json.RawMessage(` {"a":2}`)).Check(call))
	assert.NoError(t, Reject("no").Check(call))
	assert.NoError(t, Approve().Check(call))
	assert.ErrorIs(t, ApproveWith(json.RawMessage(`[{"a":2}]`)).Check(call), ErrInvalidDecision)
	assert.ErrorIs(t, ApproveWith(json.RawMessage(`{`)).Check(ToolCall{Args: json.RawMessage(`5`)}), ErrInvalidDecision)
	assert.NoError(t, ApproveWith(json.RawMessage(`"six"`)).Check(ToolCall{Args: json.RawMessage(`5`)}))
}

// TestContinuationTTLExact: a continuation lasts its TTL, not a second
// rounded up: resumable just before, refused from the expiry on.
func TestContinuationTTLExact(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, gatedWrites(func(g *Governance) { g.TTL = 300 * time.Millisecond }))
	before := time.Now()
	p := pauseAtWrite(t, e, &store{})
	after := time.Now()
	assert.False(t, p.Expires.Before(before.Add(300*time.Millisecond)))
	assert.False(t, p.Expires.After(after.Add(300*time.Millisecond)), "Expires %v is past the TTL", p.Expires)
	_, err := openContinuation(testKey, p.Continuation, p.Expires.Add(-time.Nanosecond))
	assert.NoError(t, err)
	_, err = openContinuation(testKey, p.Continuation, p.Expires)
	assert.ErrorIs(t, err, ErrContinuationExpired)
	info, err := InspectContinuation(testKey, p.Continuation)
	require.NoError(t, err)
	assert.Equal(t, p.Expires, info.Expires)

	// A body made before ExpiresNs existed expires at its whole second.
	b, err := openContinuation(testKey, p.Continuation, before)
	require.NoError(t, err)
	b.ExpiresNs = 0
	old, err := sealContinuation(e.gov, b)
	require.NoError(t, err)
	_, err = openContinuation(testKey, old, time.Unix(b.Expires, 0).Add(-time.Nanosecond))
	assert.NoError(t, err)
	_, err = openContinuation(testKey, old, time.Unix(b.Expires, 0))
	assert.ErrorIs(t, err, ErrContinuationExpired)
}
