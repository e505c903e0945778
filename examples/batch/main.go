// Command batch is the batch harness as a library: many scripts, a bound
// on how many run at once, per-job limits, outcomes in input order, each
// a function of its job alone.
//
//	go run ./batch
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	short := codemode.Limits{Deadline: 50 * time.Millisecond}
	jobs := []batch.Job{
		{ID: `"sum"`, Code: `return [1, 2, 3].reduce((a, b) => a + b)`},
		{ID: `"throws"`, Code: `throw new Error("boom")`},
		{ID: `"loops"`, Code: `for (;;) {}`, Limits: &short},
		{ID: `"json"`, Code: `return JSON.parse('{"ok": true}')`},
	}
	seq := func(yield func(batch.Job) bool) {
		for _, j := range jobs {
			if !yield(j) {
				return
			}
		}
	}
	for j, o := range batch.Run(ctx, seq, batch.Options{Concurrency: 2}) {
		switch o.Kind {
		case batch.KindOK:
			fmt.Fprintf(out, "%s ok %s\n", j.ID, o.Result)
		default:
			fmt.Fprintf(out, "%s %s\n", j.ID, o.Kind)
		}
	}
	return nil
}
