package remote_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// runners are the two sides the benchmarks compare: an executor in
// process and a client of a daemon on loopback, both closed at the end.
func runners(b *testing.B) (local *codemode.Executor, c *remote.Client) {
	c, err := remote.Dial(benchDaemon(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if local, err = codemode.New(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { local.Close() })
	return local, c
}

// BenchmarkRemote is the daemon's overhead over loopback against the same
// programs in process: one Execute with one tool call, and with ten (the
// difference over nine is the cost of each further call).
func BenchmarkRemote(b *testing.B) {
	local, c := runners(b)
	answer := func(context.Context, string, string, string) (string, error) { return `{"result":1}`, nil }
	for _, n := range []int{1, 10} {
		code := fmt.Sprintf("async () => { let s = 0; for (let i = 0; i < %d; i++) s += await t.x(); return s }", n)
		for _, r := range []struct {
			name string
			r    codemode.Runner
		}{{"local", local}, {"remote", c}} {
			b.Run(fmt.Sprintf("%s-%d-calls", r.name, n), func(b *testing.B) {
				b.ReportAllocs()
				req := codemode.Request{Code: code, Providers: []codemode.Provider{{Name: "t"}}, Dispatch: answer}
				for b.Loop() {
					if res := r.r.Execute(context.Background(), req); res.Error != "" {
						b.Fatal(res.Error)
					}
				}
			})
		}
	}
}

// BenchmarkThroughput is programs per second from GOMAXPROCS goroutines,
// in process (the suite's W6, through Execute) and through one daemon over
// loopback.
func BenchmarkThroughput(b *testing.B) {
	local, c := runners(b)
	req := codemode.Request{Code: "async () => ({ok: true, n: 2, s: 'hi'})"}
	for _, r := range []struct {
		name string
		r    codemode.Runner
	}{{"local", local}, {"remote", c}} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if res := r.r.Execute(context.Background(), req); res.Error != "" {
						b.Error(res.Error)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "programs/s")
		})
	}
}
