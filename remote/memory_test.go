package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/proc"
	"github.com/codemode-go/codemode/remote"
)

// grower grows its heap by 1 MiB a step, awaiting a timer between steps,
// until a limit stops it.
const grower = `const keep = [];
for (;;) {
	keep.push(new Uint8Array(1 << 20).fill(1));
	await new Promise(r => setTimeout(r, 1));
}`

// labelled is the value of the counter name{label=value} in reg.
func labelled(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestDaemonMemoryBudget: 50 clients start 200 programs each growing to
// its 64 MiB limit on one daemon with a 512 MiB budget, while small
// programs run beside them. Every program ends at one of the two limits
// (its own, or the budget's kind memory_budget: stopped as it grew, or,
// matching ErrBusy, refused before it started, after the client's
// retries); the small ones succeed; the process's RSS stays within the
// budget and a margin; the metrics count what the clients saw; a lone
// grower after the burst reaches its own limit; and the daemon serves
// afterwards. Which limit a grower of the burst meets depends on
// scheduling (all of them may ask for room in the same instant; or, on a
// loaded machine, few overlap and each reaches its own limit first): that
// the budget stops a grower is TestDaemonMemoryBudgetError's. Not
// parallel: it measures the process.
func TestDaemonMemoryBudget(t *testing.T) {
	const budget = 512 << 20
	mb, err := codemode.NewMemoryBudget(budget)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	srv := remote.NewServer(remote.ServerOptions{MemoryBudget: mb, Metrics: remote.NewMetrics(reg), MaxPrograms: 400,
		Max: codemode.Limits{Memory: 64 << 20, Deadline: 3 * time.Minute}})
	addr := serve(t, srv)
	assert.Equal(t, float64(budget), gauge(t, reg, "codemode_memory_budget_bytes"))

	clients := make([]*remote.Client, 50)
	for i := range clients {
		clients[i] = dial(t, addr, remote.WithLimits(codemode.Limits{Memory: 64 << 20, Deadline: 3 * time.Minute}))
	}
	small := dial(t, addr)
	ctx := context.Background()
	smallRun := func() error {
		res, err := small.Run(ctx, "return [1, 2, 3].map(x => x * 2).join()")
		if err == nil && string(res.Value) != `"2,4,6"` {
			err = errors.New(string(res.Value))
		}
		return err
	}
	for range 4 {
		require.NoError(t, smallRun())
	}
	before := proc.RSS(t)

	var peakRSS atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			peakRSS.Store(max(peakRSS.Load(), proc.RSS(t)))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})

	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for _, c := range clients {
		for range 4 {
			wg.Go(func() {
				_, err := c.Run(ctx, grower)
				var ee *codemode.ExecError
				kind := "untyped: " + errString(err)
				switch {
				case errors.Is(err, codemode.ErrBusy) && errors.Is(err, codemode.ErrMemoryBudget):
					kind = "refused"
				case errors.As(err, &ee):
					kind = string(ee.Kind)
				}
				mu.Lock()
				outcomes[kind]++
				mu.Unlock()
			})
		}
	}
	growing := make(chan struct{})
	go func() { wg.Wait(); close(growing) }()
	var smalls atomic.Int64
	var beside sync.WaitGroup
	for range 4 {
		beside.Go(func() {
			for {
				select {
				case <-growing:
					return
				default:
				}
				if err := smallRun(); err != nil {
					t.Errorf("a small program beside the burst: %v", err)
					return
				}
				smalls.Add(1)
			}
		})
	}
	beside.Wait()
	<-growing
	close(stop)
	sampler.Wait()

	refusedMemory := labelled(t, reg, "codemode_programs_refused_total", "reason", "memory")
	stopped := labelled(t, reg, "codemode_programs_total", "kind", string(codemode.KindMemoryBudget))
	t.Logf("growers: %v; %d small programs beside them; RSS %d MiB before, %d MiB at the peak; metrics: %v refused for memory, %v stopped by the budget",
		outcomes, smalls.Load(), before>>20, peakRSS.Load()>>20, refusedMemory, stopped)
	assert.Equal(t, 200, outcomes[string(codemode.KindMemoryExceeded)]+outcomes[string(codemode.KindMemoryBudget)]+outcomes["refused"],
		"every grower ends at one of the two limits: %v", outcomes)
	assert.Positive(t, smalls.Load())
	assert.Equal(t, float64(outcomes[string(codemode.KindMemoryBudget)]), stopped, "the metrics count the growers the budget stopped")
	assert.GreaterOrEqual(t, refusedMemory, float64(outcomes["refused"]), "and those it refused (each try of each)")
	// A lone grower, with the budget's room, reaches its own limit.
	_, err = clients[0].Run(ctx, grower)
	var ee *codemode.ExecError
	if assert.ErrorAs(t, err, &ee) {
		assert.Equal(t, codemode.KindMemoryExceeded, ee.Kind, "a lone grower: %v", err)
	}
	if !raceEnabled {
		assert.LessOrEqual(t, peakRSS.Load()-before, int64(budget+128<<20), "RSS within the budget and a margin")
	}
	// The daemon stays up and serves.
	require.NoError(t, smallRun())
	res := clients[0].Execute(ctx, codemode.Request{Code: "async () => 1"})
	assert.Empty(t, res.Error)
	assert.Equal(t, "1", string(res.Result))
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestDaemonRefusesForMemory: programs that each hold a small heap while
// they wait on a tool fill the daemon's budget; the next one is refused
// before it starts with RESOURCE_EXHAUSTED saying why (after the client's
// retries), and counted; once the holders finish, programs run again.
func TestDaemonRefusesForMemory(t *testing.T) {
	mb, err := codemode.NewMemoryBudget(codemode.MinMemoryBudget(8 << 20))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	srv := remote.NewServer(remote.ServerOptions{MemoryBudget: mb, Metrics: remote.NewMetrics(reg),
		Max: codemode.Limits{Memory: 8 << 20, Deadline: time.Minute}})
	addr := serve(t, srv)
	release := make(chan struct{})
	arrived := make(chan struct{}, 64)
	c := dial(t, addr, remote.WithLimits(codemode.Limits{Memory: 8 << 20, Deadline: time.Minute}),
		remote.WithCapability(codemode.Capability{Name: "hold", Async: true, Unchecked: true,
			Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
				arrived <- struct{}{}
				select {
				case <-release:
					return 1, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}}))
	ctx := context.Background()
	const holder = "const b = new Uint8Array(1 << 20).fill(1); return (await hold()) + b[0]"
	done := make(chan error, 64)
	var refusal error
	launched := 0
	for ; launched < 40 && refusal == nil; launched++ {
		go func() {
			res, err := c.Run(ctx, holder)
			if err == nil && string(res.Value) != "2" {
				err = errors.New(string(res.Value))
			}
			done <- err
		}()
		select {
		case <-arrived:
		case refusal = <-done:
		}
	}
	require.Error(t, refusal, "the budget never filled")
	// The executor's error for a run with no room to start, the daemon's
	// refusal seen through it.
	var ee *codemode.ExecError
	require.ErrorAs(t, refusal, &ee)
	assert.Equal(t, codemode.KindMemoryBudget, ee.Kind)
	assert.ErrorIs(t, refusal, codemode.ErrMemoryBudget)
	assert.ErrorIs(t, refusal, codemode.ErrBusy)
	assert.Equal(t, "codemode: run_js: no room in the memory budget before the run could start ("+
		strconv.FormatInt(mb.Bytes(), 10)+" bytes)", refusal.Error())
	assert.Equal(t, codes.ResourceExhausted, status.Code(refusal), "%v", refusal)
	assert.Positive(t, labelled(t, reg, "codemode_programs_refused_total", "reason", "memory"))
	close(release)
	for range launched - 1 {
		assert.NoError(t, <-done, "a holder")
	}
	res, err := c.Run(ctx, "return 1")
	require.NoError(t, err)
	assert.Equal(t, "1", string(res.Value))
}

// TestDaemonMemoryBudgetError: through the daemon, a grower alone reaches
// its own limit (the budget holds one); one that grows while three others
// hold most of the budget is stopped by it: kind memory_budget, matching
// ErrMemoryBudget and not ErrBusy (it had started), with the executor's
// message and JSON, and counted; the holders, once released, succeed.
// The daemon's twin of the root package's TestMemoryBudgetError: the
// budget's refusal without depending on how a burst is scheduled.
func TestDaemonMemoryBudgetError(t *testing.T) {
	mb, err := codemode.NewMemoryBudget(codemode.MinMemoryBudget(8 << 20))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	limits := codemode.Limits{Memory: 8 << 20, Deadline: time.Minute}
	addr := serve(t, remote.NewServer(remote.ServerOptions{MemoryBudget: mb, Metrics: remote.NewMetrics(reg), Max: limits}))
	hs := newHolders()
	c := dial(t, addr, remote.WithLimits(limits), remote.WithCapability(hs.capability()))

	_, err = c.Run(context.Background(), grower)
	var ee *codemode.ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, codemode.KindMemoryExceeded, ee.Kind, "alone: %v", err)

	refused, release := hs.fill(t, c, 3, 5)
	require.NoError(t, refused, "three holders fit")
	_, err = c.Run(context.Background(), grower)
	release()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, codemode.KindMemoryBudget, ee.Kind)
	assert.ErrorIs(t, err, codemode.ErrMemoryBudget)
	assert.NotErrorIs(t, err, codemode.ErrBusy, "it had started")
	n := strconv.FormatInt(mb.Bytes(), 10)
	assert.Equal(t, "codemode: run_js: the memory budget, shared with the runs beside it, is spent ("+n+" bytes)", err.Error())
	assert.JSONEq(t, `{"kind":"memory_budget","name":"run_js","limit_bytes":`+n+`}`, ee.LLMJSON())
	assert.Equal(t, int64(1), mb.Stats().Stopped)
	assert.Equal(t, float64(1), labelled(t, reg, "codemode_programs_total", "kind", string(codemode.KindMemoryBudget)))
}
