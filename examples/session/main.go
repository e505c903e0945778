// Command session is an agent whose programs build on each other: a
// Session keeps what one run declares at its top level and puts on
// globalThis for the next, and a run that fails leaves it as it was.
//
//	go run ./session
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/codemode-go/codemode"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	exec, err := codemode.New()
	if err != nil {
		return err
	}
	defer exec.Close()
	s, err := exec.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	for _, step := range []string{
		`const notes = []; function add(n) { notes.push(n); return notes.length }; return add("first")`,
		`add("second"); throw new Error("a failed step changes nothing")`,
		`return {count: add("third"), notes}`,
	} {
		res, err := s.Run(ctx, step)
		if err != nil {
			first, _, _ := strings.Cut(err.Error(), "\n") // the message, not its stack
			fmt.Fprintf(out, "error: %s\n", first)
			continue
		}
		fmt.Fprintf(out, "%s\n", res.Value)
	}
	return nil
}
