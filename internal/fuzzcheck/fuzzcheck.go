// Package fuzzcheck holds the invariants the fuzz targets of more than one
// module share.
package fuzzcheck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode"
)

// outcome is what a run came to, compared across shapes: its value, or
// its error's kind.
type outcome struct {
	value  string
	kind   codemode.ErrorKind
	syntax bool // a SyntaxError: the source did not parse in that shape
}

func run(ctx context.Context, t *testing.T, e *codemode.Executor, src string) (outcome, bool) {
	res, err := e.Run(ctx, src)
	if err == nil {
		return outcome{value: string(res.Value)}, true
	}
	var ee *codemode.ExecError
	if !errors.As(err, &ee) {
		t.Fatalf("Run(%q): %T is not an *ExecError: %v", src, err, err)
	}
	switch ee.Kind {
	case codemode.KindTimeout, codemode.KindMemoryExceeded, codemode.KindMemoryBudget:
		return outcome{}, false // a limit: where it strikes is not the shape's doing
	case codemode.KindJS, codemode.KindPendingPromise:
	default:
		t.Fatalf("Run(%q) = %s: a script must not cause this kind", src, ee.LLMJSON())
	}
	return outcome{kind: ee.Kind, syntax: strings.HasPrefix(ee.Message, "SyntaxError")}, true
}

// Shapes checks the input-shape normalization differentially: body run as
// a function body, the same body fenced in markdown, and the same body as
// an async arrow (against the body with a final `return null`, the arrow's
// own fall-through) come to the same value or the same kind of error.
// Runs are deterministic (seeded random, fixed clock). Not compared:
// bodies that read stack traces (positions differ by the wrapper's
// lines), hold a fence of their own, use export default (a shape of its
// own), read this or arguments (the wrappers' own), or hold an HTML-like
// comment (`-->` is a comment only at a line's start, and the fence moves
// the body to a line of its own).
func Shapes(t *testing.T, e *codemode.Executor, body string) {
	for _, skip := range []string{"```", "stack", "export", "arguments", "this", "-->", "<!--"} {
		if strings.Contains(body, skip) {
			return
		}
	}
	ctx := codemode.WithDeterminism(context.Background(), codemode.Determinism{Seed: 7, Clock: time.Unix(1_700_000_000, 0)})
	plain, ok := run(ctx, t, e, body)
	if !ok {
		return
	}
	fenced, ok := run(ctx, t, e, "Here is the program:\n```js\n"+body+"\n```\nIt returns the answer.")
	if ok && fenced != plain {
		t.Fatalf("fenced %q = %+v, as a body %+v", body, fenced, plain)
	}
	if plain.kind != "" {
		return // a body that fails may fail differently once wrapped (a stray `}` closes the arrow)
	}
	returned, ok1 := run(ctx, t, e, body+"\n;return null")
	arrow, ok2 := run(ctx, t, e, "async () => {"+body+"\n}")
	if arrow.syntax {
		return // wrapping can unmake a body the body shape accepts (a trailing label: "A:")
	}
	if ok1 && ok2 && returned != arrow {
		t.Fatalf("as an arrow %q = %+v, as a body ending in return null %+v", body, arrow, returned)
	}
}
