package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	buke "github.com/buke/quickjs-go"
	"github.com/dop251/goja"
	fsqjs "github.com/fastschema/qjs"
	mquickjs "modernc.org/quickjs"

	"github.com/codemode-go/codemode"
)

// The limits every engine is given where it supports them.
const (
	memoryLimit = 32 << 20
	stackLimit  = 512 << 10
	hostLatency = time.Millisecond // of each async host call in W4

	spinDeadline = 5 * time.Millisecond  // overshoot's deadline
	burstLatency = 10 * time.Millisecond // of W8's async host call
)

// deadline is each run's: a second, or a minute under valgrind (see
// callgrindChild), where a run is fifty times slower and a loaded machine
// slower still.
var deadline = time.Second

// burstWant is what W8's script returns: hio(1) + 1.
const burstWant = "2"

// burstOf runs n copies of one at once and counts the failures.
func burstOf(n int, one func() (string, error)) (int, error) {
	var failed atomic.Int32
	var first atomic.Value
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := one()
			if err == nil && got != burstWant {
				err = fmt.Errorf("wrong answer %.40s", got)
			}
			if err != nil {
				failed.Add(1)
				first.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return int(failed.Load()), err
	}
	return 0, nil
}

// engine runs the workloads one way.
type engine struct {
	name   string
	limits [3]string                         // memory, stack, deadline: how each is enforced, or why not
	runs   map[string]func() (string, error) // by workload id
	skip   map[string]string                 // workloads it cannot run, and why
	// spin runs for (;;) {} under a deadline of spinDeadline and returns
	// nil once the deadline stopped it (overshoot; nil: see skip).
	spin func() error
	// burst runs n runs at once, each awaiting one async host call of
	// burstLatency, and returns how many failed (W8; nil: see skip).
	burst func(n int) (failed int, err error)
	close func()
}

// engineNames lists the engines in table order.
var engineNames = []string{"codemode", "raw floor", "buke", "modernc", "goja", "fastschema"}

func newEngine(name string, sc *scripts) (*engine, error) {
	switch name {
	case "codemode":
		return newCodemode(sc)
	case "raw floor":
		return newFloor(sc)
	case "buke":
		return newBuke(sc)
	case "modernc":
		return newModernc(sc)
	case "goja":
		return newGoja(sc)
	case "fastschema":
		return newFastschema(sc)
	}
	return nil, fmt.Errorf("unknown engine %q", name)
}

// hostArg is the {"i": n} argument of codemode's host functions.
type hostArg struct {
	I int `json:"i"`
}

// argI reads the {"i": n} argument of codemode's host functions.
func argI(args json.RawMessage) (int, error) {
	var a struct {
		I int `json:"i"`
	}
	err := json.Unmarshal(args, &a)
	return a.I, err
}

func newCodemode(sc *scripts) (*engine, error) {
	exec, err := codemode.New(
		codemode.WithLimits(codemode.Limits{Memory: memoryLimit, Stack: stackLimit, Deadline: deadline}),
		// W3's host function as a Go engineer writes one: typed, its
		// argument checked and decoded by the library (goja's take Go
		// values directly).
		codemode.WithCapability(codemode.Func("hcall", "", func(_ context.Context, a hostArg) (int, error) {
			return a.I + 1, nil
		})),
		// W3r's: the raw form, decoding its own argument.
		codemode.WithCapability(codemode.Capability{Name: "hraw", Func: func(_ context.Context, args json.RawMessage) (any, error) {
			i, err := argI(args)
			return i + 1, err
		}}),
		codemode.WithCapability(codemode.Capability{Name: "hasync", Async: true, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			i, err := argI(args)
			select {
			case <-time.After(hostLatency):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return i + 1, err
		}}),
		codemode.WithCapability(codemode.Capability{Name: "hio", Async: true, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			i, err := argI(args)
			select {
			case <-time.After(burstLatency):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return i + 1, err
		}}),
	)
	if err != nil {
		return nil, err
	}
	spinExec, err := codemode.New(codemode.WithLimits(codemode.Limits{Memory: memoryLimit, Stack: stackLimit, Deadline: spinDeadline}))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := exec.Register(ctx, codemode.ToolSource{Name: "large", Source: sc.largeTool}); err != nil {
		return nil, err
	}
	run := func(body string) func() (string, error) {
		return func() (string, error) {
			res, err := exec.Run(ctx, body)
			if err != nil {
				return "", err
			}
			return string(res.Value), nil
		}
	}
	// X0 and X1 (callgrind only, not in the suite): an Execute program
	// with no provider call and with one, as BenchmarkExecute's no-call
	// and provider-call.
	answer := func(context.Context, string, string, string) (string, error) {
		return `{"result":{"id":1,"ok":true}}`, nil
	}
	execute := func(code string) func() (string, error) {
		req := codemode.Request{Code: code, Providers: []codemode.Provider{{Name: "store"}}, Dispatch: answer}
		return func() (string, error) {
			res := exec.Execute(ctx, req)
			if res.Error != "" {
				return "", errors.New(res.Error)
			}
			return string(res.Result), nil
		}
	}
	return &engine{
		name:   "codemode",
		limits: [3]string{"yes", "yes", "yes (C, monotonic clock)"},
		runs: map[string]func() (string, error){
			"W1":  run(sc.tinyBody),
			"W2":  run(sc.realisticBody),
			"W3":  run(sc.host100Body),
			"W3r": run(sc.hostRawBody),
			"X0":  execute("async () => 1"),
			"X1":  execute("async () => (await store.x()).id"),
			"W4":  run(sc.async16Body),
			"W5": func() (string, error) {
				out, err := exec.Call(ctx, "large", json.RawMessage(`{"n":5}`))
				return string(out), err
			},
		},
		spin: func() error {
			if _, err := spinExec.Run(ctx, "for (;;) {}"); !errors.Is(err, codemode.ErrTimeout) {
				return fmt.Errorf("not stopped by its deadline: %v", err)
			}
			return nil
		},
		burst: func(n int) (int, error) { return burstOf(n, run("return await hio({i: 1})")) },
		close: func() { exec.Close(); spinExec.Close() },
	}, nil
}

func newFloor(sc *scripts) (*engine, error) {
	large, err := floorCompile(cstr(sc.largeExpr))
	if err != nil {
		return nil, err
	}
	run := func(src string, host bool) func() (string, error) {
		c := cstr(src)
		return func() (string, error) { return floorRun(c, host) }
	}
	return &engine{
		name:   "raw floor",
		limits: [3]string{"yes", "yes", "yes (C, monotonic clock)"},
		runs: map[string]func() (string, error){
			"W1": run(sc.tinyExpr, false),
			"W2": run(sc.realisticExpr, false),
			"W3": run(sc.host100Expr, true),
			"W5": func() (string, error) { return floorRunBytecode(large) },
		},
		skip:  map[string]string{"W4": "no event loop: the floor is one C call", "W8": "no event loop: the floor is one C call"},
		spin:  func() error { return floorSpin(spinDeadline) },
		close: func() {},
	}, nil
}

func newBuke(sc *scripts) (*engine, error) {
	// buke never calls JS_UpdateStackTop: a run pins its goroutine to one OS
	// thread, or a thread migration breaks its stack checks.
	run := func(src string, host, async bool) (string, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rt := buke.NewRuntime(buke.WithMemoryLimit(memoryLimit), buke.WithMaxStackSize(stackLimit), buke.WithExecuteTimeout(1))
		defer rt.Close()
		ctx := rt.NewBareContext()
		defer ctx.Close()
		if host {
			ctx.Globals().Set("hcall", ctx.Function(func(c *buke.Context, this *buke.Value, args []*buke.Value) *buke.Value {
				return c.NewInt32(args[0].Int32() + 1)
			}))
		}
		if async {
			ctx.Globals().Set("hasync", ctx.Function(func(c *buke.Context, this *buke.Value, args []*buke.Value) *buke.Value {
				i := args[0].Int32()
				return c.NewPromise(func(resolve, reject func(*buke.Value)) {
					go func() {
						time.Sleep(hostLatency)
						c.Schedule(func(c *buke.Context) { resolve(c.NewInt32(i + 1)) })
					}()
				})
			}))
		}
		v := ctx.Eval(src)
		if async {
			v = ctx.Await(v)
		}
		defer v.Free()
		if v.IsException() {
			return "", ctx.Exception()
		}
		return v.JSONStringify(), nil
	}
	burstOne := func() (string, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rt := buke.NewRuntime(buke.WithMemoryLimit(memoryLimit), buke.WithMaxStackSize(stackLimit), buke.WithExecuteTimeout(1))
		defer rt.Close()
		ctx := rt.NewBareContext()
		defer ctx.Close()
		ctx.Globals().Set("hio", ctx.Function(func(c *buke.Context, this *buke.Value, args []*buke.Value) *buke.Value {
			i := args[0].Int32()
			return c.NewPromise(func(resolve, reject func(*buke.Value)) {
				go func() {
					time.Sleep(burstLatency)
					c.Schedule(func(c *buke.Context) { resolve(c.NewInt32(i + 1)) })
				}()
			})
		}))
		v := ctx.Await(ctx.Eval("(async () => await hio(1))()"))
		defer v.Free()
		if v.IsException() {
			return "", ctx.Exception()
		}
		return v.JSONStringify(), nil
	}
	var large []byte
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rt := buke.NewRuntime()
		defer rt.Close()
		ctx := rt.NewBareContext()
		defer ctx.Close()
		large, _ = ctx.Compile(sc.largeExpr)
	}()
	if large == nil {
		return nil, errors.New("buke cannot compile the large tool")
	}
	return &engine{
		name:   "buke",
		limits: [3]string{"yes", "yes", "whole seconds only (1 s)"},
		runs: map[string]func() (string, error){
			"W1": func() (string, error) { return run(sc.tinyExpr, false, false) },
			"W2": func() (string, error) { return run(sc.realisticExpr, false, false) },
			"W3": func() (string, error) { return run(sc.host100Expr, true, false) },
			"W4": func() (string, error) { return run(sc.async16Expr, false, true) },
			"W5": func() (string, error) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				rt := buke.NewRuntime(buke.WithMemoryLimit(memoryLimit), buke.WithMaxStackSize(stackLimit), buke.WithExecuteTimeout(1))
				defer rt.Close()
				ctx := rt.NewBareContext()
				defer ctx.Close()
				v := ctx.EvalBytecode(large)
				defer v.Free()
				if v.IsException() {
					return "", ctx.Exception()
				}
				return v.JSONStringify(), nil
			},
		},
		skip:  map[string]string{"overshoot": "no deadline below a second"},
		burst: func(n int) (int, error) { return burstOf(n, burstOne) },
		close: func() {},
	}, nil
}

func newModernc(sc *scripts) (*engine, error) {
	vmWith := func(host bool, d time.Duration) (*mquickjs.VM, error) {
		vm, err := mquickjs.NewVM()
		if err != nil {
			return nil, err
		}
		vm.SetMemoryLimit(memoryLimit)
		vm.SetMaxStackSize(stackLimit)
		if err := vm.SetEvalTimeout(d); err != nil {
			vm.Close()
			return nil, err
		}
		if host {
			if err := vm.RegisterFunc("hcall", func(x int) int { return x + 1 }, false); err != nil {
				vm.Close()
				return nil, err
			}
		}
		return vm, nil
	}
	vmFor := func(host bool) (*mquickjs.VM, error) { return vmWith(host, deadline) }
	run := func(src string, host bool) func() (string, error) {
		return func() (string, error) {
			vm, err := vmFor(host)
			if err != nil {
				return "", err
			}
			defer vm.Close()
			r, err := vm.Eval(src, mquickjs.EvalGlobal)
			if err != nil {
				return "", err
			}
			b, err := json.Marshal(r)
			return string(b), err
		}
	}
	vm, err := vmFor(false)
	if err != nil {
		return nil, err
	}
	large, err := vm.Compile(sc.largeExpr, mquickjs.EvalGlobal)
	vm.Close()
	if err != nil {
		return nil, err
	}
	return &engine{
		name:   "modernc",
		limits: [3]string{"yes", "yes", "yes"},
		runs: map[string]func() (string, error){
			"W1": run(sc.tinyExpr, false),
			"W2": run(sc.realisticExpr, false),
			"W3": run(sc.host100Expr, true),
			"W5": func() (string, error) {
				vm, err := vmFor(false)
				if err != nil {
					return "", err
				}
				defer vm.Close()
				r, err := vm.EvalBytecode(large)
				if err != nil {
					return "", err
				}
				b, err := json.Marshal(r)
				return string(b), err
			},
		},
		skip: map[string]string{"W4": "no async host functions in its API", "W8": "no async host functions in its API"},
		spin: func() error {
			vm, err := vmWith(false, spinDeadline)
			if err != nil {
				return err
			}
			defer vm.Close()
			if _, err := vm.Eval("for (;;) {}", mquickjs.EvalGlobal); err == nil {
				return errors.New("not stopped by its deadline")
			}
			return nil
		},
		close: func() {},
	}, nil
}

func newGoja(sc *scripts) (*engine, error) {
	vmWith := func(d time.Duration) (*goja.Runtime, func()) {
		vm := goja.New()
		vm.SetMaxCallStackSize(10000)
		t := time.AfterFunc(d, func() { vm.Interrupt("deadline") })
		return vm, func() { t.Stop() }
	}
	vmFor := func() (*goja.Runtime, func()) { return vmWith(deadline) }
	export := func(v goja.Value, err error) (string, error) {
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(v.Export())
		return string(b), err
	}
	run := func(src string, host bool) func() (string, error) {
		return func() (string, error) {
			vm, done := vmFor()
			defer done()
			if host {
				vm.Set("hcall", func(x int) int { return x + 1 })
			}
			return export(vm.RunString(src))
		}
	}
	// loop runs src, which awaits calls of the async host function name
	// (each settles after latency with its argument + 1), to its result.
	loop := func(name, src string, latency time.Duration) (string, error) {
		vm, done := vmFor()
		defer done()
		type settled struct {
			resolve func(any) error
			v       int
		}
		ch := make(chan settled, 16)
		vm.Set(name, func(i int) *goja.Promise {
			p, resolve, _ := vm.NewPromise()
			go func() {
				time.Sleep(latency)
				ch <- settled{resolve, i + 1}
			}()
			return p
		})
		v, err := vm.RunString(src)
		if err != nil {
			return "", err
		}
		p, ok := v.Export().(*goja.Promise)
		if !ok {
			return "", errors.New("not a promise")
		}
		for p.State() == goja.PromiseStatePending {
			s := <-ch
			if err := s.resolve(s.v); err != nil {
				return "", err
			}
		}
		if p.State() == goja.PromiseStateRejected {
			return "", fmt.Errorf("rejected: %v", p.Result())
		}
		return export(p.Result(), nil)
	}
	async := func() (string, error) { return loop("hasync", sc.async16Expr, hostLatency) }
	large := goja.MustCompile("large.js", sc.largeExpr, false)
	return &engine{
		name:   "goja",
		limits: [3]string{"no memory limit", "call depth only (10,000 frames)", "yes (Interrupt from a timer)"},
		runs: map[string]func() (string, error){
			"W1": run(sc.tinyExpr, false),
			"W2": run(sc.realisticExpr, false),
			"W3": run(sc.host100Expr, true),
			"W4": async,
			"W5": func() (string, error) {
				vm, done := vmFor()
				defer done()
				return export(vm.RunProgram(large))
			},
		},
		spin: func() error {
			vm, done := vmWith(spinDeadline)
			defer done()
			var interrupted *goja.InterruptedError
			if _, err := vm.RunString("for (;;) {}"); !errors.As(err, &interrupted) {
				return fmt.Errorf("not stopped by its deadline: %v", err)
			}
			return nil
		},
		burst: func(n int) (int, error) {
			return burstOf(n, func() (string, error) { return loop("hio", "(async () => await hio(1))()", burstLatency) })
		},
		close: func() {},
	}, nil
}

func newFastschema(sc *scripts) (*engine, error) {
	newRT := func() (*fsqjs.Runtime, error) {
		return fsqjs.New(fsqjs.Option{MemoryLimit: memoryLimit, MaxStackSize: stackLimit, Context: context.Background()})
	}
	// Its Value.JSONStringify garbles larger results, so the script
	// stringifies in the engine; Eval awaits a promise by itself.
	eval := func(ctx *fsqjs.Context, opt fsqjs.EvalOptionFunc) (string, error) {
		v, err := ctx.Eval("w.js", opt)
		if err != nil {
			return "", err
		}
		if v.IsPromise() {
			w, err := v.Await()
			v.Free()
			if err != nil {
				return "", err
			}
			v = w
		}
		defer v.Free()
		return v.String(), nil
	}
	stringified := func(src string, async bool) string {
		if async {
			return "(async () => JSON.stringify(await " + src + "))()"
		}
		return "JSON.stringify(" + src + ")"
	}
	run := func(src string, host, async bool) func() (string, error) {
		return func() (string, error) {
			rt, err := newRT()
			if err != nil {
				return "", err
			}
			defer rt.Close()
			ctx := rt.Context()
			if host {
				ctx.SetFunc("hcall", func(this *fsqjs.This) (*fsqjs.Value, error) {
					return this.Context().NewInt32(this.Args()[0].Int32() + 1), nil
				})
			}
			if async {
				// Its async functions resolve on the engine's only thread:
				// the calls cannot overlap, so each waits its latency out.
				ctx.SetAsyncFunc("hasync", func(this *fsqjs.This) {
					i := this.Args()[0].Int32()
					time.Sleep(hostLatency)
					this.Promise().Resolve(this.Context().NewInt32(i + 1))
				})
			}
			return eval(ctx, fsqjs.Code(stringified(src, async)))
		}
	}
	rt, err := newRT()
	if err != nil {
		return nil, err
	}
	large, err := rt.Context().Compile("large.js", fsqjs.Code(stringified(sc.largeExpr, false)))
	rt.Close()
	if err != nil {
		return nil, err
	}
	return &engine{
		name:   "fastschema",
		limits: [3]string{"yes", "yes", "no (the option is ignored in v0.0.6)"},
		runs: map[string]func() (string, error){
			"W1": run(sc.tinyExpr, false, false),
			"W2": run(sc.realisticExpr, false, false),
			"W3": run(sc.host100Expr, true, false),
			"W4": run(sc.async16Expr, false, true),
			"W5": func() (string, error) {
				rt, err := newRT()
				if err != nil {
					return "", err
				}
				defer rt.Close()
				return eval(rt.Context(), fsqjs.Bytecode(large))
			},
		},
		skip: map[string]string{"overshoot": "no deadline (the option is ignored in v0.0.6)"},
		burst: func(n int) (int, error) {
			return burstOf(n, func() (string, error) {
				rt, err := newRT()
				if err != nil {
					return "", err
				}
				defer rt.Close()
				ctx := rt.Context()
				ctx.SetAsyncFunc("hio", func(this *fsqjs.This) {
					i := this.Args()[0].Int32()
					time.Sleep(burstLatency)
					this.Promise().Resolve(this.Context().NewInt32(i + 1))
				})
				return eval(ctx, fsqjs.Code(stringified("hio(1)", true)))
			})
		},
		close: func() {},
	}, nil
}
