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
