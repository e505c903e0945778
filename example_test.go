package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/goleak"

	"github.com/codemode-go/codemode"
)

// A script is the body of an async function: it returns one JSON value.
func Example() {
	exec, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer exec.Close()

	res, err := exec.Run(context.Background(), `
		const orders = [{qty: 2, price: 3}, {qty: 1, price: 10}]
		console.log('orders:', orders.length)
		return { total: orders.reduce((sum, o) => sum + o.qty * o.price, 0) }`)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))
	fmt.Println(res.Logs)
	// Output:
	// {"total":16}
	// [orders: 2]
}

// The deadline stops a script that never ends; the error is a timeout a
// model can read, and the executor is ready for the next run.
func Example_deadline() {
	exec, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: 50 * time.Millisecond}))
	if err != nil {
		panic(err)
	}
	defer exec.Close()

	_, err = exec.Run(context.Background(), "for (;;) {}")
	fmt.Println(errors.Is(err, codemode.ErrTimeout), errors.Is(err, context.DeadlineExceeded))
	var ee *codemode.ExecError
	if errors.As(err, &ee) {
		fmt.Println(ee.LLMJSON())
	}

	res, _ := exec.Run(context.Background(), "return 'still here'")
	fmt.Println(string(res.Value))
	// Output:
	// true true
	// {"kind":"timeout","name":"run_js","deadline_ms":50}
	// "still here"
}

// Errors carry the reference executor's kinds; a thrown error keeps its
// class, message and a stack whose lines are the script's own.
func ExampleExecError() {
	exec, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer exec.Close()

	_, err = exec.Run(context.Background(), "const user = null\nconsole.log(user.name)")
	var ee *codemode.ExecError
	if errors.As(err, &ee) {
		fmt.Println(ee.Kind)
		fmt.Println(ee.Message)
		fmt.Println("line", ee.Line, "column", ee.Column) // at user.name's "name"
	}
	// Output:
	// js
	// TypeError: cannot read property 'name' of null
	//     at <anonymous> (script.js:2:18)
	// line 2 column 18
}

// A memory limit is enforced per run.
func ExampleWithLimits() {
	exec, err := codemode.New(codemode.WithLimits(codemode.Limits{Memory: 4 << 20}))
	if err != nil {
		panic(err)
	}
	defer exec.Close()

	_, err = exec.Run(context.Background(), "const a = []; for (;;) a.push('x'.repeat(1024) + a.length)")
	var ee *codemode.ExecError
	if errors.As(err, &ee) {
		fmt.Println(ee.LLMJSON())
	}
	// Output:
	// {"kind":"memory_exceeded","name":"run_js","limit_bytes":4194304}
}

// A provider program: tool calls go to the dispatch, which answers with the
// result envelope.
func ExampleExecutor_Execute() {
	exec, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer exec.Close()

	users := map[string]string{"ada": "Ada Lovelace", "alan": "Alan Turing"}
	latch := codemode.NewLatch()
	defer latch.Close()
	res := exec.Execute(context.Background(), codemode.Request{
		Code: `async () => {
			const names = await Promise.all(['ada', 'alan'].map((id) => store.findUser(id)))
			try { await store.dropTables() } catch (e) { console.log(e.message) }
			return names
		}`,
		Providers: []codemode.Provider{{Name: "store", Tools: []string{"findUser"}}},
		Dispatch: codemode.EnvelopeDispatch(latch, func(ctx context.Context, provider, tool, argsJSON string) (any, error) {
			if tool != "findUser" {
				return nil, codemode.ToolNotFoundError{Tool: tool}
			}
			args, err := codemode.ParseDispatchArguments(argsJSON)
			if err != nil {
				return nil, err
			}
			id, _ := args[0].(string)
			return users[id], nil
		}),
	})
	fmt.Println(string(res.Result), res.Logs, res.Error == "")
	// Output:
	// ["Ada Lovelace","Alan Turing"] [Tool "dropTables" not found] true
}

// A registered tool is validated, compiled, instantiated and self-tested
// once; calls run it from cached bytecode in a fresh sandbox.
func ExampleExecutor_Register() {
	exec, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	ctx := context.Background()

	_, err = exec.Register(ctx, codemode.ToolSource{
		Name:        "add",
		Description: "Add two numbers.",
		Params:      []byte(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		Source:      "({a, b}) => a + b",
		SelfTest:    "tool({a: 1, b: 2}) === 3",
	})
	if err != nil {
		panic(err)
	}
	out, _ := exec.Call(ctx, "add", []byte(`{"a": 20, "b": 22}`))
	fmt.Println(string(out))

	_, err = exec.Call(ctx, "add", []byte(`{"a": 1}`))
	var ee *codemode.ExecError
	if errors.As(err, &ee) {
		fmt.Println(ee.LLMJSON())
	}
	// Output:
	// 42
	// {"kind":"invalid_args","name":"add","reason":"missing required argument `b`"}
}

// weatherTool is a host tool for the Code Mode example.
type weatherTool struct{}

func (weatherTool) Definition() codemode.ToolDefinition {
	return codemode.ToolDefinition{
		Name:        "get-weather",
		Description: "Get current weather.",
		Parameters:  []byte(`{"type":"object","properties":{"city":{"type":"string"},"units":{"enum":["c","f"]}},"required":["city"]}`),
	}
}

func (weatherTool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"temp": 21, "sky": "clear"}`), nil
}

// Code Mode: one run_js tool stands in for the host tools, listed to the
// model as a JavaScript API.
func ExampleNewCodeModeTool() {
	runJS, err := codemode.NewCodeModeTool([]codemode.Tool{weatherTool{}}, codemode.Limits{})
	if err != nil {
		panic(err)
	}
	defer runJS.Close()

	def := runJS.Definition()
	fmt.Println(def.Name)
	d := def.Description // the contract, the APIs in TypeScript, an example
	fmt.Print(d[strings.Index(d, "type "):strings.Index(d, "\nExample:")])

	out, _ := runJS.Call(context.Background(), []byte(`{"code": "const w = await get_weather({city: 'Oslo'}); return w.sky"}`))
	fmt.Println(string(out))
	// Output:
	// run_js
	// type GetWeatherInput = {
	//   city: string;
	//   units?: "c" | "f";
	// };
	// /** Get current weather. */
	// declare function get_weather(args: GetWeatherInput): Promise<unknown>;
	// {"result":"clear"}
}

// Runs awaiting a host call hold a sandbox, not a core: with two runs
// executing JavaScript at a time, two hundred runs that each await a
// 50 ms lookup all finish within their 300 ms deadline, together.
func ExampleWithConcurrency() {
	exec, err := codemode.New(
		codemode.WithConcurrency(2), // runs executing JavaScript at once
		codemode.WithSlots(500),     // runs alive at once
		codemode.WithLimits(codemode.Limits{Deadline: 5 * time.Second}), // room for a slow build (ASan, checked mode)
		codemode.WithCapability(codemode.Capability{
			Name:  "lookup",
			Async: true,
			Func: func(ctx context.Context, args json.RawMessage) (any, error) {
				select {
				case <-time.After(50 * time.Millisecond): // a database, an HTTP call
					return "ok", nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		}))
	if err != nil {
		panic(err)
	}
	defer exec.Close()

	errs := make(chan error, 200)
	for range 200 {
		go func() {
			_, err := exec.Run(context.Background(), "return await lookup({})")
			errs <- err
		}()
	}
	failed := 0
	for range 200 {
		if err := <-errs; err != nil {
			failed++
		}
	}
	fmt.Println("failed:", failed)
	// Output: failed: 0
}

type lookupArgs struct {
	City string `json:"city" jsonschema:"the city's name"`
}

type forecast struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
}

// A typed Go function as a capability: its schemas come from the Go types,
// its argument is checked and decoded, and the model can be told about it
// in TypeScript.
func ExampleFunc() {
	weather := codemode.Func("weather", "Today's forecast.", func(_ context.Context, in lookupArgs) (forecast, error) {
		return forecast{City: in.City, TempC: 21.5}, nil
	})
	exec, err := codemode.New(codemode.WithCapability(weather))
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	res, _ := exec.Run(context.Background(), `return weather({city: "Oslo"}).temp_c`)
	fmt.Println(string(res.Value))
	res, _ = exec.Run(context.Background(), `try { weather({}) } catch (e) { return e.message }`)
	fmt.Println(string(res.Value))
	fmt.Print(codemode.Declarations([]codemode.ToolAPI{weather.API()}))
	// Output:
	// 21.5
	// "weather: `city` is required"
	// type WeatherInput = {
	//   /** the city's name */
	//   city: string;
	// };
	// type WeatherOutput = {
	//   city: string;
	//   temp_c: number;
	// };
	// /** Today's forecast. */
	// declare function weather(args: WeatherInput): WeatherOutput;
}

// An async capability served from memory, declared non-blocking: its calls
// return promises, but its handler runs as the call starts, on the
// program's goroutine, at the cost of a synchronous call.
func ExampleCapability_nonBlocking() {
	prices := map[string]float64{"apple": 0.5, "pear": 0.75}
	price := codemode.Capability{Name: "price", Async: true, NonBlocking: true,
		Func: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ Item string }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			p, ok := prices[in.Item]
			if !ok {
				return nil, fmt.Errorf("no price for %q", in.Item)
			}
			return p, nil
		}}
	exec, err := codemode.New(codemode.WithCapability(price))
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	res, _ := exec.Run(context.Background(), `
const [a, p] = await Promise.all([price({item: "apple"}), price({item: "pear"})]);
let missing;
try { await price({item: "plum"}) } catch (e) { missing = e.message }
return {total: a + p, missing}`)
	fmt.Println(string(res.Value))
	// Output:
	// {"total":1.25,"missing":"no price for \"plum\""}
}

// A run reaches only the capabilities its context grants.
func ExampleGrant() {
	ok := func(context.Context, json.RawMessage) (any, error) { return "done", nil }
	exec, err := codemode.New(
		codemode.WithCapability(codemode.Capability{Name: "read", Func: ok}),
		codemode.WithCapability(codemode.Capability{Name: "drop_table", Func: ok}))
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	ctx := codemode.Grant(context.Background(), "read")
	res, _ := exec.Run(ctx, `return [typeof read, typeof drop_table]`)
	fmt.Println(string(res.Value))
	// Output:
	// ["function","undefined"]
}

// Host modules are importable by name, fresh in every run.
func ExampleWithModules() {
	exec, err := codemode.New(codemode.WithModules(map[string]string{
		"text.js": `export const shout = (s) => s.toUpperCase() + "!"`,
	}))
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	res, _ := exec.Run(context.Background(), `const { shout } = await import("text.js"); return shout("hi")`)
	fmt.Println(string(res.Value))
	// Output:
	// "HI!"
}

// ExampleWithDeterminism repeats a run exactly: the same seed draws the same
// numbers, the same clock reads the same time.
func ExampleWithDeterminism() {
	exec, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	ctx := codemode.WithDeterminism(context.Background(),
		codemode.Determinism{Seed: 42, Clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	script := "return [new Date().toISOString(), Math.random() === Math.random()]"
	a, _ := exec.Run(ctx, script)
	b, _ := exec.Run(ctx, script)
	fmt.Println(string(a.Value))
	fmt.Println(string(a.Value) == string(b.Value), a.Stats.HostCalls)
	// Output:
	// ["2026-01-02T03:04:05.000Z",false]
	// true 0
}

// NewTool wraps a tool an agent already has — a definition and the code
// that serves it — for NewCodeModeTool.
func ExampleNewTool() {
	lookup := codemode.NewTool(codemode.ToolDefinition{Name: "lookup", Description: "Looks a word up.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)},
		func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			var in struct{ Word string }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return json.Marshal(strings.ToUpper(in.Word))
		})
	cm, err := codemode.NewCodeModeTool([]codemode.Tool{lookup}, codemode.Limits{Deadline: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer cm.Close()
	out, err := cm.Call(context.Background(), json.RawMessage(`{"code":"const [a, b] = await Promise.all([lookup({word: 'go'}), lookup({word: 'js'})]); return a + b"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output: {"result":"GOJS"}
}

// A write needs a person's approval: the run pauses at it, the
// continuation goes wherever the person is (here, a variable), and Resume
// goes on with their decision — the reads are answered from the
// continuation, the write runs once.
func ExampleExecutor_Resume() {
	key := []byte("a secret of at least 32 bytes....") // the same in every process that resumes
	e, err := codemode.New(codemode.WithGovernance(codemode.Governance{
		Tools: map[string]codemode.ToolPolicy{"db.write": {RequiresApproval: true}},
		Key:   key,
	}))
	if err != nil {
		panic(err)
	}
	defer e.Close()
	dispatch := func(_ context.Context, _, tool, args string) (string, error) {
		fmt.Println("tool ran:", tool, args)
		if tool == "read" {
			return `{"result":10}`, nil
		}
		return `{"result":"ok"}`, nil
	}
	res := e.Execute(context.Background(), codemode.Request{
		Code:      `async () => { const n = await db.read(1) + await db.read(2); return await db.write({n}) }`,
		Providers: []codemode.Provider{{Name: "db", Tools: []string{"read", "write"}}},
		Dispatch:  dispatch,
	})
	fmt.Printf("paused at %s %s after %d calls\n", res.Paused.Tool, res.Paused.Args, res.Paused.Completed)

	out := e.Resume(context.Background(), res.Paused.Continuation, codemode.Approve(), dispatch)
	fmt.Println("result:", string(out.Result))
	// Output:
	// tool ran: read [1]
	// tool ran: read [2]
	// paused at db.write [{"n":20}] after 2 calls
	// tool ran: write [{"n":20}]
	// result: "ok"
}

// A budget shared by two executors: the engine memory of all their runs at
// once stays within 256 MiB. A run that finds no room waits for some within
// its deadline; one whose heap cannot grow ends with kind memory_budget.
func ExampleNewMemoryBudget() {
	budget, err := codemode.NewMemoryBudget(256 << 20)
	if err != nil {
		panic(err)
	}
	a, _ := codemode.New(codemode.WithMemoryBudget(budget))
	defer a.Close()
	b, _ := codemode.New(codemode.WithMemoryBudget(budget), codemode.WithLimits(codemode.Limits{Memory: 64 << 20}))
	defer b.Close()
	res, err := b.Run(context.Background(), "return new Uint8Array(8 << 20).length")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value), budget.Stats().Budget>>20, "MiB")
	// Output: 8388608 256 MiB
}

// A test that checks for leaked goroutines right after Close names the
// ones that served async host calls and wait for the next (IdleWorker);
// one still in a handler is reported.
func ExampleExecutor_Close() {
	before := goleak.IgnoreCurrent()
	exec, err := codemode.New(codemode.WithCapability(codemode.Capability{Name: "lookup", Async: true,
		Func: func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }}))
	if err != nil {
		panic(err)
	}
	res, err := exec.Run(context.Background(), `return await lookup({id: 1})`)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))
	exec.Close()
	// In a TestMain: goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(codemode.IdleWorker))
	fmt.Println(goleak.Find(before, goleak.IgnoreTopFunction(codemode.IdleWorker)))
	// Output:
	// {"id":1}
	// <nil>
}

// A session keeps what its runs declare: each step builds on the last,
// and a step that fails changes nothing. Sealed, it moves to another
// executor (another process, another machine) with no tool run again.
func ExampleSession() {
	exec, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	s, err := exec.NewSession()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()
	steps := []string{
		`const orders = [{qty: 2, price: 3}, {qty: 1, price: 10}]`,
		`function total(list) { return list.reduce((sum, o) => sum + o.qty * o.price, 0) }`,
		`orders.push({qty: 100, price: 1}); throw new Error("a failed step changes nothing")`,
		`return total(orders)`,
	}
	for _, step := range steps {
		res, err := s.Run(ctx, step)
		if err != nil {
			msg, _, _ := strings.Cut(err.(*codemode.ExecError).Message, "\n")
			fmt.Println("error:", msg)
			continue
		}
		fmt.Println(string(res.Value))
	}

	key := codemode.SessionKey{Key: []byte("a key of at least thirty-two bytes"), Encrypt: true}
	sealed, err := s.Seal(key)
	if err != nil {
		panic(err)
	}
	other, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer other.Close()
	moved, err := other.RestoreSession(ctx, sealed, key)
	if err != nil {
		panic(err)
	}
	res, err := moved.Run(ctx, `return orders.length`)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))
	// Output:
	// null
	// null
	// error: Error: a failed step changes nothing
	// 16
	// 2
}
