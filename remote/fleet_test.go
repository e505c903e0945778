package remote_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// member is one daemon of a fleet, counting the programs it took.
type member struct {
	addr string
	g    *grpc.Server
	took atomic.Int64
}

func fleetMember(t *testing.T) *member {
	m := &member{}
	srv := remote.NewServer(remote.ServerOptions{})
	m.g = grpc.NewServer(append(srv.GRPCOptions(), grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		m.took.Add(1)
		return h(srv, ss)
	}), grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		m.took.Add(1) // Standalone programs
		return h(ctx, req)
	}))...)
	srv.Register(m.g)
	m.addr = listen(t, m.g, srv)
	return m
}

// TestFleet: three daemons behind one round-robin client. Programs spread
// over all three; a daemon killed mid-run fails its programs in flight
// (which had made a tool call, and are not run again) while new programs
// go to the others; a drained daemon finishes its program in flight.
func TestFleet(t *testing.T) {
	ms := []*member{fleetMember(t), fleetMember(t), fleetMember(t)}
	r := manual.NewBuilderWithScheme("fleet")
	var addrs []resolver.Address
	for _, m := range ms {
		addrs = append(addrs, resolver.Address{Addr: m.addr})
	}
	r.InitialState(resolver.State{Addresses: addrs})
	c := dial(t, "fleet:///codemode", remote.WithDialOptions(grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"round_robin": {}}]}`)))
	ctx := context.Background()

	// Spread.
	var wg sync.WaitGroup
	errs := make(chan string, 300)
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if res := c.Execute(ctx, codemode.Request{Code: "async () => 1"}); res.Error != "" || string(res.Result) != "1" {
					errs <- res.Error
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for i, m := range ms {
		assert.Greater(t, m.took.Load(), int64(50), "daemon %d took %d of 300", i, m.took.Load())
	}

	// Kill one mid-run: six programs each waiting in a tool call.
	release := make(chan struct{})
	var calls atomic.Int64
	arrived := make(chan struct{}, 16)
	wait := func(ctx context.Context, _, _, _ string) (string, error) {
		calls.Add(1)
		arrived <- struct{}{}
		select {
		case <-release:
			return `{"result":"released"}`, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	before := ms[0].took.Load()
	results := make(chan codemode.ExecuteResult, 6)
	for range 6 {
		go func() {
			results <- c.Execute(ctx, codemode.Request{Code: "async () => await s.wait()", Providers: []codemode.Provider{{Name: "s"}}, Dispatch: wait})
		}()
	}
	for range 6 {
		<-arrived
	}
	onKilled := ms[0].took.Load() - before
	require.Positive(t, onKilled, "round robin gave the first daemon some of the six")
	ms[0].g.Stop()
	failed := 0
	for i := 0; i < int(onKilled); i++ {
		res := <-results
		if res.Error != "" {
			failed++
			assert.Contains(t, res.Error, "Unavailable", "a clear unavailable error")
		} else {
			t.Errorf("a program on the killed daemon finished: %s", res.Result)
		}
	}
	assert.Equal(t, int(onKilled), failed)
	// New programs go to the other two.
	for range 20 {
		res := c.Execute(ctx, codemode.Request{Code: "async () => 2"})
		require.Empty(t, res.Error)
	}
	close(release)
	for i := 0; i < 6-int(onKilled); i++ {
		res := <-results
		require.Empty(t, res.Error)
		assert.Equal(t, `"released"`, string(res.Result))
	}
	assert.Equal(t, int64(6), calls.Load(), "no program that made a tool call ran again")

	// Drain one with a program in flight: it finishes.
	gate := make(chan struct{})
	slow := func(ctx context.Context, _, _, _ string) (string, error) {
		arrived <- struct{}{}
		<-gate
		return `{"result":"finished"}`, nil
	}
	done := make(chan codemode.ExecuteResult, 4)
	for range 4 { // with two daemons left, some reach ms[1]
		go func() {
			done <- c.Execute(ctx, codemode.Request{Code: "async () => await s.slow()", Providers: []codemode.Provider{{Name: "s"}}, Dispatch: slow})
		}()
	}
	for range 4 {
		<-arrived
	}
	drained := make(chan struct{})
	go func() {
		ms[1].g.GracefulStop()
		close(drained)
	}()
	close(gate)
	for range 4 {
		res := <-done
		require.Empty(t, res.Error, fmt.Sprint(res))
		assert.Equal(t, `"finished"`, string(res.Result))
	}
	<-drained
}
