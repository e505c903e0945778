package codemode

import (
	"context"
	"os"
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

// BenchmarkRawLifecycle is the same lifecycle done in one C call with no Go
// in between: Run's floor. Run/raw is the Go-side overhead.
func BenchmarkRawLifecycle(b *testing.B) {
	e := newExecutor(b)
	for _, w := range benchScripts(b) {
		src := wrapScript(w.src)
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if e.rawLifecycle(src) < 0 {
					b.Fatal("the run failed")
				}
			}
		})
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
