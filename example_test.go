package codemode_test

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	}
	// Output:
	// js
	// TypeError: cannot read property 'name' of null
	//     at <anonymous> (script.js:2:13)
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
