package main

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/codemode-go/codemode"
)

// w1 is the suite's W1: a fresh sandbox, a tiny script returning a small
// object.
const w1 = "return {ok: true, n: 2, s: 'hi'}"

// BenchmarkBatch is `codemode batch` over W1-like jobs (JSON lines in,
// result lines out, all in memory) against the library doing the same
// programs from GOMAXPROCS goroutines (the suite's W6): what the command
// line costs on top. Compare the two scripts/s figures of one run.
func BenchmarkBatch(b *testing.B) {
	b.Run("cli", func(b *testing.B) {
		b.ReportAllocs()
		in := &jobStream{n: b.N}
		out := &lineCounter{}
		b.ResetTimer()
		if code := Main(context.Background(), []string{"batch", "--progress", "never", "-"}, in, out, io.Discard); code != exitOK {
			b.Fatalf("exit %d", code)
		}
		b.StopTimer()
		if out.n != b.N {
			b.Fatalf("%d lines for %d jobs", out.n, b.N)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scripts/s")
	})
	for _, api := range []string{"execute", "run"} {
		b.Run("library-"+api, func(b *testing.B) {
			b.ReportAllocs()
			e, err := codemode.New()
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			var wg sync.WaitGroup
			next := make(chan struct{}, 1024)
			b.ResetTimer()
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range next {
						if api == "run" {
							if _, err := e.Run(ctx, w1); err != nil {
								b.Error(err)
							}
						} else if res := e.Execute(ctx, codemode.Request{Code: w1}); res.Error != "" {
							b.Error(res.Error)
						}
					}
				}()
			}
			for range b.N {
				next <- struct{}{}
			}
			close(next)
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scripts/s")
		})
	}
}
