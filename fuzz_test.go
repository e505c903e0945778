package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzRun feeds arbitrary scripts to Run. Invariants: no crash; a value is
// valid JSON; a failure is an *ExecError of a kind a script can cause, with
// its limits as configured; the executor keeps working.
func FuzzRun(f *testing.F) {
	for _, pattern := range []string{"testdata/golden/*.js", "testdata/hostile/*.js"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(src))
		}
	}
	for _, s := range []string{"", "return 1", "}", "\x00", "return [1,{a:'\\ud800'}]", "console.log(1n)"} {
		f.Add(s)
	}
	limits := Limits{Memory: 4 << 20, Deadline: 50 * time.Millisecond, Payload: 64 << 10, Logs: 4 << 10}
	e, err := New(WithLimits(limits))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, script string) {
		res, err := e.Run(ctx, script)
		if err == nil {
			if !json.Valid(res.Value) {
				t.Fatalf("Run(%q) = %q: not JSON", script, res.Value)
			}
			return
		}
		var ee *ExecError
		if !errors.As(err, &ee) {
			t.Fatalf("Run(%q): %T is not an *ExecError: %v", script, err, err)
		}
		switch ee.Kind {
		case KindJS, KindPendingPromise:
		case KindTimeout:
			if ee.DeadlineMS != 50 {
				t.Fatalf("Run(%q) = %s", script, ee.LLMJSON())
			}
		case KindMemoryExceeded:
			if ee.LimitBytes != 4<<20 {
				t.Fatalf("Run(%q) = %s", script, ee.LLMJSON())
			}
		default:
			t.Fatalf("Run(%q) = %s: a script must not cause this kind", script, ee.LLMJSON())
		}
		if !json.Valid([]byte(ee.LLMJSON())) {
			t.Fatalf("Run(%q): LLMJSON %q is not JSON", script, ee.LLMJSON())
		}
	})
}
