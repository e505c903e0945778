package remote_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// runners are the two sides the benchmarks compare: an executor in
// process and a client of a daemon on loopback, both closed at the end.
func runners(b *testing.B) (local *codemode.Executor, c *remote.Client, unary executer) {
	addr := benchDaemon(b)
	c, err := remote.Dial(addr)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	unary = healthCheck{healthpb.NewHealthClient(conn)}
	b.Cleanup(func() { c.Close() })
	if local, err = codemode.New(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { local.Close() })
	return local, c, unary
}

// healthCheck is the transport's floor as a Runner: one gRPC unary call
// (the daemon's health check) on loopback, with no program behind it.
type healthCheck struct{ c healthpb.HealthClient }

func (h healthCheck) Execute(ctx context.Context, _ codemode.Request) codemode.ExecuteResult {
	if _, err := h.c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		return codemode.ExecuteResult{Error: err.Error()}
	}
	return codemode.ExecuteResult{}
}

// executer is what the benchmarks call: a Runner's Execute.
type executer interface {
	Execute(context.Context, codemode.Request) codemode.ExecuteResult
}

// BenchmarkRemote is the daemon's overhead over loopback against the same
// programs in process: one Execute with one tool call, and with ten (the
// difference over nine is the cost of each further call, to compare with
// grpc-unary, one unary call on the same loopback).
func BenchmarkRemote(b *testing.B) {
	local, c, unary := runners(b)
	b.Run("grpc-unary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := unary.Execute(context.Background(), codemode.Request{}); res.Error != "" {
				b.Fatal(res.Error)
			}
		}
	})
	answer := func(context.Context, string, string, string) (string, error) { return `{"result":1}`, nil }
	for _, n := range []int{1, 10} {
		code := fmt.Sprintf("async () => { let s = 0; for (let i = 0; i < %d; i++) s += await t.x(); return s }", n)
		for _, r := range []struct {
			name string
			r    executer
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
// loopback; grpc-unary is the transport's floor, unary calls per second
// with no program behind them.
func BenchmarkThroughput(b *testing.B) {
	local, c, unary := runners(b)
	req := codemode.Request{Code: "async () => ({ok: true, n: 2, s: 'hi'})"}
	for _, r := range []struct {
		name string
		r    executer
	}{{"local", local}, {"remote", c}, {"grpc-unary", unary}} {
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
