package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// benchScripts are the BenchmarkRun workloads.
func benchScripts(b *testing.B) []struct{ name, src string } {
	realistic, err := os.ReadFile("testdata/golden/realistic.js")
	if err != nil {
		b.Fatal(err)
	}
	return []struct{ name, src string }{
		{"trivial", "return 1+1"},
		{"object", `return {ok:true,n:2,s:"hi"}`},
		{"realistic", string(realistic)},
	}
}

// BenchmarkRun is a whole run through the public API: a fresh sandbox, the
// script, its JSON result, teardown.
func BenchmarkRun(b *testing.B) {
	e := newExecutor(b)
	ctx := context.Background()
	for _, w := range benchScripts(b) {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Run(ctx, w.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunUncached is Run of a script never seen before (a comment
// makes each one new): the compile path, with its parse for positions.
func BenchmarkRunUncached(b *testing.B) {
	e := newExecutor(b)
	ctx := context.Background()
	for _, w := range benchScripts(b) {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := e.Run(ctx, w.src+"\n// "+strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuiltins calls indexOf, join and sort on ordinary arrays of 100
// and 10,000 numbers, 100 times per run: what the guarded built-ins cost
// ordinary code (compare against a build without the guards).
func BenchmarkBuiltins(b *testing.B) {
	e := newExecutor(b, WithLimits(Limits{Deadline: time.Minute}))
	ctx := context.Background()
	for _, n := range []int{100, 10000} {
		for _, call := range []string{"a.indexOf(-1)", "a.join(',')", "a.slice().sort()", "a.slice().sort((x, y) => x - y)"} {
			script := fmt.Sprintf("const a = Array.from({length: %d}, (_, i) => (i * 7919) %% %d)\n"+
				"for (let i = 0; i < 100; i++) %s\nreturn 1", n, n, call)
			b.Run(fmt.Sprintf("%s/%d", call, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Run(ctx, script); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRawLifecycle is the same lifecycle done in one C call with no Go
// in between: Run's floor. Run/raw is the Go-side overhead.
func BenchmarkRawLifecycle(b *testing.B) {
	e := newExecutor(b)
	for _, w := range benchScripts(b) {
		// What Run passes: the script's bytecode, cached by a first run.
		if _, err := e.Run(context.Background(), w.src); err != nil {
			b.Fatal(err)
		}
		bc, ok := e.cache.get(scriptKey("run", w.src))
		if !ok {
			b.Fatal("the script was not cached")
		}
		p := &program{file: scriptFile, src: []byte{0}, bc: bc}
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if e.rawLifecycle(p) < 0 {
					b.Fatal("the run failed")
				}
			}
		})
	}
}

// BenchmarkImageFloor is the floor of W1 on a snapshot: copy the image
// back, evaluate the tiny script (compiled as an expression: no wrapper)
// in it and take its JSON, nothing else, in one C call. Run/object over
// this is all the rest a run does (see the README's figures).
func BenchmarkImageFloor(b *testing.B) {
	e := newExecutor(b)
	for range 3 { // the slot's second run builds its image
		if _, err := e.Run(context.Background(), `return {ok:true,n:2,s:"hi"}`); err != nil {
			b.Fatal(err)
		}
	}
	bc, err := compileScript(`({ok: true, n: 1 + 1, s: "hi"})`, "floor.js")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := e.imageFloor(bc); n != int64(len(`{"ok":true,"n":2,"s":"hi"}`)) {
			b.Fatalf("the floor run gave %d bytes", n)
		}
	}
}

// BenchmarkDeadlineOvershoot measures how late a caller gets a timeout for
// `for(;;){}` past a 2 ms deadline (stop latency plus teardown).
func BenchmarkDeadlineOvershoot(b *testing.B) {
	const deadline = 2 * time.Millisecond
	e := newExecutor(b, WithLimits(Limits{Deadline: deadline}))
	ctx := context.Background()
	var over time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		_, err := e.Run(ctx, "for (;;) {}")
		over += time.Since(start) - deadline
		if ee, ok := err.(*ExecError); !ok || ee.Kind != KindTimeout {
			b.Fatalf("want a timeout, got %v", err)
		}
	}
	b.ReportMetric(float64(over.Microseconds())/float64(b.N), "overshoot-µs/op")
}

// BenchmarkHostCall measures capability calls. Each op is one run making
// 100 calls (promise-all-16: one Promise.all over 16 calls); ns/call is the
// run's time less that of the same script calling a plain JS function
// instead, divided by the number of calls.
// benchIn and benchOut are BenchmarkHostCall's typed capability's.
type benchIn struct {
	ID   int    `json:"id"`
	Name string `json:"name,omitempty"`
}

type benchOut struct {
	ID   int    `json:"id"`
	OK   bool   `json:"ok"`
	Name string `json:"name"`
}

func BenchmarkHostCall(b *testing.B) {
	small := map[string]any{"id": 1, "ok": true, "name": "ada"}
	raw := json.RawMessage(`{"id":1,"ok":true,"name":"ada"}`)
	serve := func(v any) func(context.Context, json.RawMessage) (any, error) {
		return func(context.Context, json.RawMessage) (any, error) { return v, nil }
	}
	e := newExecutor(b,
		WithCapability(Capability{Name: "q", Func: serve(small)}),
		WithCapability(Capability{Name: "qraw", Func: serve(raw)}),
		WithCapability(Capability{Name: "qasync", Async: true, Func: serve(small)}),
		WithCapability(Capability{Name: "qasyncraw", Async: true, Func: serve(raw)}),
		WithCapability(Capability{Name: "qnb", Async: true, NonBlocking: true, Func: serve(small)}),
		// The same, its arguments checked against a schema (the fast
		// path's: types, an enum, bounds), and one the library checks (a
		// pattern).
		WithCapability(Capability{Name: "qchecked", Func: serve(raw), Params: json.RawMessage(
			`{"type":"object","properties":{"id":{"type":"integer","description":"the id","minimum":0},"name":{"enum":["x","y"]}},"required":["id"]}`)}),
		WithCapability(Func("qtyped", "", func(_ context.Context, in benchIn) (benchOut, error) {
			return benchOut{ID: 1, OK: true, Name: "ada"}, nil
		})),
		WithCapability(Capability{Name: "qlibrary", Func: serve(raw), Params: json.RawMessage(
			`{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string","pattern":"^[a-z]+$"}},"required":["id"]}`)}))
	ctx := context.Background()
	const loop = "let n = 0; for (let i = 0; i < 100; i++) n += %s({id: i, name: 'x'}).id; return n"
	const loopAsync = "let n = 0; for (let i = 0; i < 100; i++) n += (await %s({id: i, name: 'x'})).id; return n"
	const all16 = "const rs = await Promise.all(Array.from({length: 16}, (_, i) => %s({id: i}))); return rs.length"
	local := "const %s = (a) => ({id: 1, ok: true, name: 'ada'}); "
	cases := []struct {
		name, script, fn string
		calls            int
	}{
		{"sync", loop, "q", 100},
		{"sync-raw", loop, "qraw", 100},
		{"sync-raw-checked", loop, "qchecked", 100},
		{"sync-raw-checked-library", loop, "qlibrary", 100},
		{"sync-typed", loop, "qtyped", 100},
		{"async", loopAsync, "qasync", 100},
		{"async-raw", loopAsync, "qasyncraw", 100},
		{"async-nonblocking", loopAsync, "qnb", 100},
		{"promise-all-16", all16, "qasync", 16},
	}
	for _, c := range cases {
		script := fmt.Sprintf(c.script, c.fn)
		baseline := fmt.Sprintf(local, c.fn) + script
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var with, without time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := e.Run(ctx, script); err != nil {
					b.Fatal(err)
				}
				with += time.Since(t0)
				b.StopTimer()
				t0 = time.Now()
				if _, err := e.Run(ctx, baseline); err != nil {
					b.Fatal(err)
				}
				without += time.Since(t0)
				b.StartTimer()
			}
			b.ReportMetric(float64((with-without).Nanoseconds())/float64(b.N*c.calls), "ns/call")
		})
	}
}

// BenchmarkExecute measures provider programs end to end: a fresh sandbox
// with the runtime, the program, its tool calls through a DispatchFunc, and
// the result through the codec.
func BenchmarkExecute(b *testing.B) {
	e := newExecutor(b)
	ctx := context.Background()
	answer := func(context.Context, string, string, string) (string, error) {
		return `{"result":{"id":1,"ok":true}}`, nil
	}
	echo := EnvelopeDispatch(nil, func(_ context.Context, _, _, argsJSON string) (any, error) {
		args, err := ParseDispatchArguments(argsJSON)
		if err != nil {
			return nil, err
		}
		return args[0], nil
	})
	cases := []struct {
		name        string
		code        string
		dispatch    DispatchFunc
		want        string
		nonBlocking bool
	}{
		{"no-call", "async () => 1", answer, "1", false},
		{"provider-call", "async () => (await store.x()).id", answer, "1", false},
		{"provider-call-10", "async () => { let n = 0; for (let i = 0; i < 10; i++) n += (await store.x()).id; return n }", answer, "10", false},
		{"promise-all-16", "async () => (await Promise.all(Array.from({length: 16}, (_, i) => store.x(i)))).length", answer, "16", false},
		{"binary-64KiB", "async () => { const b = new Uint8Array(65536); b[65535] = 7; return (await store.echo(b))[65535] }", echo, "7", false},
		// The same, the provider declared non-blocking (served as the call starts).
		{"provider-call-nonblocking", "async () => (await store.x()).id", answer, "1", true},
		{"provider-call-10-nonblocking", "async () => { let n = 0; for (let i = 0; i < 10; i++) n += (await store.x()).id; return n }", answer, "10", true},
		{"promise-all-16-nonblocking", "async () => (await Promise.all(Array.from({length: 16}, (_, i) => store.x(i)))).length", answer, "16", true},
	}
	for _, c := range cases {
		req := Request{Code: c.code, Providers: []Provider{{Name: "store", NonBlocking: c.nonBlocking}}, Dispatch: c.dispatch}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res := e.Execute(ctx, req)
				if res.Error != "" || string(res.Result) != c.want {
					b.Fatalf("Execute = %s %s", res.Result, res.Error)
				}
			}
		})
	}
}

// BenchmarkRegister mirrors the reference executor's benchmark: a cold
// registration compiles, instantiates and self-tests; a warm one finds the
// bytecode in the cache.
func BenchmarkRegister(b *testing.B) {
	e := newExecutor(b)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			src := addTool("cold")
			src.Source = fmt.Sprintf("({a, b}) => a + b // %d", i) // a new source: a cache miss
			if _, err := e.Register(ctx, src); err != nil {
				b.Fatal(err)
			}
			e.Deregister("cold")
		}
	})
	if _, err := e.Register(ctx, addTool("anchor")); err != nil { // keeps the bytecode pinned
		b.Fatal(err)
	}
	b.Run("warm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Register(ctx, addTool("warm")); err != nil {
				b.Fatal(err)
			}
			e.Deregister("warm")
		}
	})
}

// BenchmarkCall is a registered tool's call from cached bytecode, without
// and with one capability round trip.
func BenchmarkCall(b *testing.B) {
	e := newExecutor(b, WithCapability(Capability{Name: "rate", Func: func(context.Context, json.RawMessage) (any, error) {
		return json.RawMessage("2"), nil
	}}))
	ctx := context.Background()
	for _, src := range []ToolSource{addTool("add"), {Name: "withcap", Params: json.RawMessage(addParams),
		Source: "({a, b}) => (a + b) * rate({})"}} {
		if _, err := e.Register(ctx, src); err != nil {
			b.Fatal(err)
		}
	}
	args := json.RawMessage(`{"a":1,"b":2}`)
	for _, c := range []struct{ name, tool, want string }{{"cached", "add", "3"}, {"cached-capability", "withcap", "6"}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := e.Call(ctx, c.tool, args)
				if err != nil || string(out) != c.want {
					b.Fatalf("Call = %s, %v", out, err)
				}
			}
		})
	}
}

// BenchmarkLargeTool calls a 2,000-line tool from its cached bytecode, and
// runs the same source compiled each time (an executor whose cache cannot
// hold it), the cost the cache saves.
func BenchmarkLargeTool(b *testing.B) {
	src, err := os.ReadFile("testdata/large_tool.js")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	want := `{"n":5,"result":750}`
	b.Run("cached", func(b *testing.B) {
		e := newExecutor(b)
		if _, err := e.Register(ctx, ToolSource{Name: "large", Source: string(src)}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			out, err := e.Call(ctx, "large", json.RawMessage(`{"n":5}`))
			if err != nil || string(out) != want {
				b.Fatalf("Call = %s, %v", out, err)
			}
		}
	})
	b.Run("compiled", func(b *testing.B) {
		e := newExecutor(b, WithCacheSize(1))
		script := "const tool = " + string(src) + ";\nreturn tool({n: 5})"
		b.ReportAllocs()
		for b.Loop() {
			res, err := e.Run(ctx, script)
			if err != nil || string(res.Value) != want {
				b.Fatalf("Run = %v, %v", res, err)
			}
		}
	})
}

// BenchmarkAwaitBurst is W8 of the bench suite: 1,000 runs at once, each
// awaiting a 10 ms async host call, on a default executor: hot, each burst
// right after the last (its sandboxes warm), and cold, each after the idle
// sandboxes were trimmed as a second of idleness trims them, with the
// default idle memory and with room for the whole burst. runs/s is the
// figure; the floor is the 10 ms wait.
func BenchmarkAwaitBurst(b *testing.B) {
	io := WithCapability(Capability{Name: "io", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-time.After(10 * time.Millisecond):
			return 1, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}})
	def, roomy := newExecutor(b, io), newExecutor(b, io, WithIdleMemory(256<<20))
	for _, c := range []struct {
		name string
		e    *Executor
		cold bool
	}{{"hot", def, false}, {"cold", def, true}, {"cold-idle-256MiB", roomy, true}} {
		e, cold := c.e, c.cold
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if cold {
					// As if the last burst were more than the idle
					// release ago (the bench suite's W8 bursts are).
					b.StopTimer()
					e.slots.ageIdle()
					b.StartTimer()
				}
				if f := failures(runMany(e, 1000, "return await io({})")); f != "" {
					b.Fatal(f)
				}
			}
			b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

// BenchmarkRunParallel is BenchmarkRun/object from GOMAXPROCS goroutines
// at once (W6 of the bench suite): what contention between runs costs.
func BenchmarkRunParallel(b *testing.B) {
	e := newExecutor(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Run(ctx, `return {ok:true,n:2,s:"hi"}`); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkWebFirstUse is a run whose first read of a web global is new URL
// (web.js evaluated into the sandbox, then the parse), beside the same run
// reading TextEncoder (web.js's cost alone) and a URL with an IDNA host
// (one crossing to Go): the first-use cost of the web globals.
func BenchmarkWebFirstUse(b *testing.B) {
	e := newExecutor(b)
	ctx := context.Background()
	for _, w := range []struct{ name, src string }{
		{"TextEncoder", `return typeof TextEncoder`},
		{"URL", `return new URL("../a?b=1#c", "https://example.com/p/q").href`},
		{"URL-IDNA", `return new URL("https://bücher.example/a").host`},
	} {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Run(ctx, w.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSession is a run in a warm session beside the same program's
// fresh Run (the program in a block, so that its declarations are its
// own and it can run again in the session), then the cost of a run's transaction as the
// session's heap grows (heap-N-MiB: a trivial run in a session holding N
// MiB, its checkpoint a copy of that heap).
func BenchmarkSession(b *testing.B) {
	e := newExecutor(b, WithLimits(Limits{Memory: 256 << 20}))
	ctx := context.Background()
	for _, w := range benchScripts(b) {
		b.Run("fresh/"+w.name, func(b *testing.B) {
			b.ReportAllocs()
			src := "{\n" + w.src + "\n}"
			for b.Loop() {
				if _, err := e.Run(ctx, src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("session/"+w.name, func(b *testing.B) {
			s, err := e.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			src := "{\n" + w.src + "\n}"
			for b.Loop() {
				if _, err := s.Run(ctx, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, mib := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("heap-%d-MiB", mib), func(b *testing.B) {
			s, err := e.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			// Strings of 1 KiB, each its own block.
			if _, err := s.Run(ctx, fmt.Sprintf("const kept = []; for (let i = 0; i < %d; i++) kept.push(String(i).padEnd(1024, '.'))", mib<<10)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Run(ctx, "return kept.length"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionJournal is what a session's durable form costs: Seal
// and RestoreSession of a session of 100 runs (each with a host call),
// per run of its journal, and its size; and what a session holds at rest
// (its sandbox once its checkpoint went back), in bytes.
func BenchmarkSessionJournal(b *testing.B) {
	const runs = 100
	get := Capability{Name: "get", Async: true, Func: func(_ context.Context, args json.RawMessage) (any, error) {
		return map[string]any{"rows": []int{1, 2, 3}, "args": args}, nil
	}}
	e := newExecutor(b, WithCapability(get))
	ctx := context.Background()
	s, err := e.NewSession()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(ctx, "const results = []"); err != nil {
		b.Fatal(err)
	}
	for i := 1; i < runs; i++ {
		if _, err := s.Run(ctx, fmt.Sprintf("const r%d = await get({n: %d}); results.push(r%d.rows.length)", i, i, i)); err != nil {
			b.Fatal(err)
		}
	}
	k := SessionKey{Key: []byte("0123456789abcdef0123456789abcdef")}
	sealed, err := s.Seal(k)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Seal(k); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/runs, "ns/run")
		b.ReportMetric(float64(len(sealed))/runs, "bytes/run")
	})
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			s2, err := e.RestoreSession(ctx, sealed, k)
			if err != nil {
				b.Fatal(err)
			}
			s2.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/runs, "ns/run")
	})
	b.Run("at-rest", func(b *testing.B) {
		var held int64
		for b.Loop() {
			s2, err := e.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s2.Run(ctx, "const a = {n: 1}"); err != nil {
				b.Fatal(err)
			}
			s2.mu.Lock()
			sl := s2.slot.Load()
			sl.rest()
			held = sl.holds()
			s2.mu.Unlock()
			s2.Close()
		}
		b.ReportMetric(float64(held), "bytes/session")
	})
}
