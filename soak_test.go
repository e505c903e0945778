//go:build soak

package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/proc"
)

// The soak (make soak): SOAK_RUNS (default 1,000,000) mixed runs on one
// executor from 8 goroutines — values, throws, timeouts, memory kills,
// async and sync capabilities, providers, retained handles, cancellations,
// pending promises — each checked for the right kind of outcome. At the
// end: RSS within soakRSSBound of its value after the first 10 % (Go's
// free heap returned first), goroutines back to the baseline, open file
// descriptors unchanged, the bytecode cache (bounded at soakCacheSize,
// which the runs' distinct scripts overflow) within its bound.
const soakRSSBound = 64 << 20

// soakCacheSize is small enough that the soak's 5,000 distinct scripts
// overflow it: the cache evicts all along and must stay within it.
const soakCacheSize = 256 << 10

func soakRuns(t *testing.T) int {
	n := 1_000_000
	if s := os.Getenv("SOAK_RUNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		n = v
	}
	return n
}

type soakCase struct {
	name string
	run  func(ctx context.Context, e *codemode.Executor, i int) error // nil: the outcome was right
}

func wantKind(err error, kind codemode.ErrorKind) error {
	var ee *codemode.ExecError
	if !errors.As(err, &ee) {
		return fmt.Errorf("want %s, got %v", kind, err)
	}
	if ee.Kind != kind {
		return fmt.Errorf("want %s, got %s", kind, ee.LLMJSON())
	}
	return nil
}

func wantValue(v json.RawMessage, err error, want string) error {
	if err != nil {
		return fmt.Errorf("want %s, got %v", want, err)
	}
	if string(v) != want {
		return fmt.Errorf("want %s, got %s", want, v)
	}
	return nil
}

// echoDispatch answers a provider call with its arguments, keeps a handle
// passed to "keep", and fails "fail".
func echoDispatch(kept *codemode.Handle) codemode.DispatchFunc {
	return codemode.EnvelopeDispatch(nil, func(_ context.Context, _, tool, args string) (any, error) {
		switch tool {
		case "fail":
			return nil, errors.New("no luck")
		case "keep":
			a, err := codemode.ParseDispatchArguments(args)
			if err != nil || len(a) != 1 {
				return nil, fmt.Errorf("bad arguments %s", args)
			}
			h, ok := a[0].(codemode.Handle)
			if !ok {
				return nil, fmt.Errorf("no handle in %s", args)
			}
			*kept = h
			return "kept", nil
		}
		return json.RawMessage(args), nil
	})
}

var soakCases = []soakCase{
	{"value", func(ctx context.Context, e *codemode.Executor, i int) error {
		k := i % 5000 // distinct scripts: the cache fills and evicts
		res, err := e.Run(ctx, fmt.Sprintf("return [1, 2, 3].map((x) => x * %d)", k))
		if err != nil {
			return err
		}
		return wantValue(res.Value, nil, fmt.Sprintf("[%d,%d,%d]", k, 2*k, 3*k))
	}},
	{"throw", func(ctx context.Context, e *codemode.Executor, i int) error {
		_, err := e.Run(ctx, "throw new TypeError('no')")
		return wantKind(err, codemode.KindJS)
	}},
	{"timeout", func(ctx context.Context, e *codemode.Executor, i int) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond) // the caller's deadline, before the executor's
		defer cancel()
		_, err := e.Run(ctx, "for (;;) {}")
		if errors.Is(err, codemode.ErrBusy) {
			return nil // 8 goroutines on 2 cores: no turn to run within 5 ms is the host's overload, as documented
		}
		return wantKind(err, codemode.KindTimeout)
	}},
	{"memory", func(ctx context.Context, e *codemode.Executor, i int) error {
		_, err := e.Run(ctx, "const a = []; for (;;) a.push(new Array(1e5).fill(1))")
		return wantKind(err, codemode.KindMemoryExceeded)
	}},
	{"async capability", func(ctx context.Context, e *codemode.Executor, i int) error {
		res, err := e.Run(ctx, "const [a, b] = await Promise.all([double({n: 1}), double({n: 2})]); return a + b")
		if err != nil {
			return err
		}
		return wantValue(res.Value, nil, "6")
	}},
	{"sync capability", func(ctx context.Context, e *codemode.Executor, i int) error {
		res, err := e.Run(ctx, "let s = 0; for (let i = 0; i < 10; i++) s += inc({n: i}); return s")
		if err != nil {
			return err
		}
		return wantValue(res.Value, nil, "55")
	}},
	{"provider", func(ctx context.Context, e *codemode.Executor, i int) error {
		var h codemode.Handle
		res := e.Execute(ctx, codemode.Request{Code: "async () => { const r = await s.get({id: 3}); try { await s.fail() } catch (e) { return [r.id, e.message] } }",
			Providers: []codemode.Provider{{Name: "s", Tools: []string{"get", "fail"}, ObjectArgs: true}}, Dispatch: echoDispatch(&h)})
		if res.Error != "" {
			return errors.New(res.Error)
		}
		return wantValue(res.Result, nil, `[3,"no luck"]`)
	}},
	{"retained", func(ctx context.Context, e *codemode.Executor, i int) error {
		var h codemode.Handle
		res := e.Execute(ctx, codemode.Request{Code: "async () => await s.keep((x) => x * 2)",
			Providers: []codemode.Provider{{Name: "s", Tools: []string{"keep"}}}, Dispatch: echoDispatch(&h), RetainHandles: true})
		if res.Error != "" || res.Retained == nil {
			return fmt.Errorf("retained: %s %v", res.Error, res.Retained)
		}
		defer res.Retained.Close()
		v, err := res.Retained.Call(ctx, h, 21)
		if err != nil || v != float64(42) {
			return fmt.Errorf("retained call: %v, %v", v, err)
		}
		return res.Retained.Close()
	}},
	{"cancel", func(ctx context.Context, e *codemode.Executor, i int) error {
		ctx, cancel := context.WithCancel(ctx)
		go func() {
			time.Sleep(time.Duration(i%3) * time.Millisecond)
			cancel()
		}()
		_, err := e.Run(ctx, "await block({}); return 1")
		return wantKind(err, codemode.KindInternal)
	}},
	{"pending", func(ctx context.Context, e *codemode.Executor, i int) error {
		_, err := e.Run(ctx, "await new Promise(() => {})")
		return wantKind(err, codemode.KindPendingPromise)
	}},
}

// soakMix is the share of each case, in hundredths: mostly quick runs,
// with every kind of ending present throughout.
var soakMix = []int{55, 10, 1, 1, 8, 8, 8, 3, 4, 2}

func TestSoak(t *testing.T) {
	n := soakRuns(t)
	limits := codemode.Limits{Memory: 8 << 20, Deadline: 5 * time.Second} // the timeout case sets its own, shorter
	e, err := codemode.New(codemode.WithLimits(limits), codemode.WithCacheSize(soakCacheSize),
		codemode.WithCapability(codemode.Func("double", "doubles", func(_ context.Context, in struct {
			N int `json:"n"`
		}) (int, error) {
			return 2 * in.N, nil
		})),
		codemode.WithCapability(codemode.Capability{Name: "inc", Func: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ N int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return in.N + 1, nil
		}}),
		codemode.WithCapability(codemode.Capability{Name: "block", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var table []int // case index per hundredth
	for c, share := range soakMix {
		for range share {
			table = append(table, c)
		}
	}
	if len(table) != 100 {
		t.Fatalf("the mix adds up to %d", len(table))
	}
	baseGoroutines, baseFDs := runtime.NumGoroutine(), proc.OpenFDs(t)
	var next, done atomic.Int64
	counts := make([]atomic.Int64, len(soakCases))
	var rss10 atomic.Int64
	var once sync.Once
	var failures atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c := table[(i*37)%100] // spread the kinds over the run
				if err := soakCases[c].run(context.Background(), e, i); err != nil {
					if failures.Add(1) <= 10 {
						t.Errorf("run %d (%s): %v", i, soakCases[c].name, err)
					}
				}
				counts[c].Add(1)
				if d := done.Add(1); d == int64(n/10) {
					once.Do(func() { rss10.Store(proc.RSS(t)) })
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failures.Load() > 0 {
		t.Fatalf("%d runs of %d came out wrong", failures.Load(), n)
	}
	rssEnd := proc.RSS(t)
	for c := range soakCases {
		t.Logf("%-16s %d", soakCases[c].name, counts[c].Load())
	}
	t.Logf("%d runs in %v (%.0f/s); RSS at 10 %%: %.1f MiB, at 100 %%: %.1f MiB", n, elapsed.Round(time.Millisecond),
		float64(n)/elapsed.Seconds(), float64(rss10.Load())/(1<<20), float64(rssEnd)/(1<<20))
	if rssEnd > rss10.Load()+soakRSSBound {
		t.Errorf("RSS grew from %d to %d bytes, more than %d", rss10.Load(), rssEnd, soakRSSBound)
	}
	if !proc.Settle(func() bool { return runtime.NumGoroutine() <= baseGoroutines }) {
		t.Errorf("goroutines: %d at the start, %d at the end", baseGoroutines, runtime.NumGoroutine())
	}
	if !proc.Settle(func() bool { return proc.OpenFDs(t) == baseFDs }) {
		t.Errorf("open file descriptors: %d at the start, %d at the end", baseFDs, proc.OpenFDs(t))
	}
	t.Logf("goroutines %d → %d, fds %d → %d", baseGoroutines, runtime.NumGoroutine(), baseFDs, proc.OpenFDs(t))
	if st := e.CacheStats(); st.Bytes > soakCacheSize {
		t.Errorf("the bytecode cache holds %d bytes, past its %d bound", st.Bytes, soakCacheSize)
	} else {
		t.Logf("cache: %+v", st)
	}
}
