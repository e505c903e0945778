package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// rawClient is a gRPC client of the Executor service that reads only when
// the test says: its windows are fixed at 64 KiB (no BDP growth), so a
// daemon's sends block once they are full.
func rawClient(t *testing.T, addr string) pb.ExecutorClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return pb.NewExecutorClient(conn)
}

// TestClientThatNeverReads: a client that starts a program and never reads
// holds its slot no longer than the program's deadline and the send grace;
// the daemon, full with it, then runs the next client's program.
func TestClientThatNeverReads(t *testing.T) {
	reg := prometheus.NewRegistry()
	addr, _ := daemon(t, remote.ServerOptions{MaxPrograms: 1, SendGrace: 200 * time.Millisecond, Metrics: remote.NewMetrics(reg),
		Max: codemode.Limits{Deadline: 5 * time.Second, Payload: 4 << 20}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := rawClient(t, addr).Program(ctx)
	require.NoError(t, err)
	// Its first call fills the windows; the next message blocks.
	require.NoError(t, st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: &pb.Start{Providers: []*pb.Provider{{Name: []byte("s")}},
		Code: []byte(`async () => await Promise.all([s.a("x".repeat(200000)), s.b()])`)}}}))
	require.Eventually(t, func() bool { return gauge(t, reg, "codemode_programs_in_flight") == 1 }, 10*time.Second, time.Millisecond)
	c := dial(t, addr)
	assert.Contains(t, c.Execute(context.Background(), codemode.Request{Code: "async () => 1"}).Error, "the daemon is full",
		"the program that is never read holds the daemon's one slot")
	var res codemode.ExecuteResult
	for limit := time.Now().Add(20 * time.Second); time.Now().Before(limit); time.Sleep(50 * time.Millisecond) {
		if res = c.Execute(context.Background(), codemode.Request{Code: "async () => 6 * 7"}); res.Err == nil {
			break
		}
	}
	require.Empty(t, res.Error, "the slot of the client that never reads was not freed")
	assert.Equal(t, "42", string(res.Result))
}

// TestInvokesInFlightBounded: a client that sends a retained sandbox
// thousands of handle calls and reads none of the answers gets at most
// MaxInvokes of them in flight on the daemon; past that, each is answered
// at once with an error saying so, and every call gets one answer.
func TestInvokesInFlightBounded(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{MaxInvokes: 8, SendGrace: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := rawClient(t, addr).Program(ctx)
	require.NoError(t, err)
	require.NoError(t, st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: &pb.Start{RetainHandles: true,
		Code: []byte(`async () => ({ big: () => "x".repeat(100000) })`)}}}))
	m, err := st.Recv()
	require.NoError(t, err)
	require.True(t, m.GetResult().GetRetained(), "%v", m)
	v, err := codemode.ParseForDispatch(string(m.GetResult().ResultJson))
	require.NoError(t, err)
	h, err := json.Marshal(v.(map[string]any)["big"].(codemode.Handle))
	require.NoError(t, err)
	before := runtime.NumGoroutine()
	const n = 2000
	sent := make(chan struct{})
	go func() { // the daemon stops reading once its answers back up: these sends block
		defer close(sent)
		for i := range n {
			if st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Invoke{Invoke: &pb.Invoke{Id: uint64(i + 1), HandleJson: h, ArgsJson: []byte("[]")}}}) != nil {
				return
			}
		}
	}()
	time.Sleep(time.Second)
	assert.Less(t, runtime.NumGoroutine()-before, 100, "handle calls in flight on the daemon")
	answered, refused := map[uint64]bool{}, 0
	for len(answered) < n {
		m, err := st.Recv()
		require.NoError(t, err)
		r := m.GetInvokeResult()
		require.NotNil(t, r, "%v", m)
		require.False(t, answered[r.Id], "call %d answered twice", r.Id)
		answered[r.Id] = true
		switch {
		case len(r.Error) == 0:
			assert.Len(t, r.ValueJson, 100002)
		default:
			assert.Equal(t, "remote: RESOURCE_EXHAUSTED: 8 handle calls are in flight on this sandbox: wait for their answers", string(r.Error))
			refused++
		}
	}
	<-sent
	assert.Positive(t, refused)
}

// TestMessagesAsLargeAsThePayload: a result and a tool call's arguments
// and answer of 5 MiB, within a payload of 8 MiB, pass between the daemon
// and the client (gRPC's own limit is 4 MiB).
func TestMessagesAsLargeAsThePayload(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{Max: codemode.Limits{Payload: 8 << 20, Deadline: 20 * time.Second}})
	c := dial(t, addr, remote.WithLimits(codemode.Limits{Payload: 8 << 20, Deadline: 20 * time.Second}))
	res := c.Execute(context.Background(), codemode.Request{Code: `async () => (await store.echo("y".repeat(5 << 20))).length + "x".repeat(5 << 20)`,
		Providers: providers[:1], Dispatch: dispatch})
	require.Empty(t, res.Error)
	assert.Equal(t, `"`+"5242880"+strings.Repeat("x", 5<<20)+`"`, string(res.Result))
}

// TestRequiredLimits: a client that requires its limits is refused, with
// the fields and the maxima named, by a daemon that will not grant them; a
// client that only asks runs under the maxima, and the daemon logs what it
// capped. A daemon given no deadline grants 30 s.
func TestRequiredLimits(t *testing.T) {
	var log logBuffer
	addr, _ := daemon(t, remote.ServerOptions{Max: codemode.Limits{Deadline: 100 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	want := codemode.Limits{Deadline: 5 * time.Second, Memory: 64 << 20}
	res := dial(t, addr, remote.WithRequiredLimits(want)).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.NotNil(t, res.Err)
	assert.Equal(t, codemode.KindInternal, res.Err.Kind)
	assert.Equal(t, "remote: FailedPrecondition: the daemon will not grant memory 67108864 bytes (the most is 33554432), deadline 5s (the most is 100ms)", res.Error)
	res = dial(t, addr, remote.WithLimits(want)).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.Empty(t, res.Error)
	assert.Equal(t, 100*time.Millisecond, res.Stats.Limits.Deadline)
	assert.Contains(t, log.String(), `msg="limits capped at the maxima"`)
	res = dial(t, addr, remote.WithRequiredLimits(codemode.Limits{Deadline: 50 * time.Millisecond})).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.Empty(t, res.Error)
	assert.Equal(t, 50*time.Millisecond, res.Stats.Limits.Deadline, "what the daemon grants runs as asked")

	// A client asks for the library's defaults unless told to leave them
	// to the daemon (issue 53: switching an executor for a client changes
	// no limit).
	addr, _ = daemon(t, remote.ServerOptions{})
	res = dial(t, addr).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.Empty(t, res.Error)
	assert.Equal(t, codemode.DefaultLimits(), res.Stats.Limits)
	res = dial(t, addr, remote.WithLimits(codemode.Limits{Memory: 16 << 20})).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.Empty(t, res.Error)
	assert.Equal(t, 16<<20, res.Stats.Limits.Memory)
	assert.Equal(t, codemode.DefaultDeadline, res.Stats.Limits.Deadline, "the fields not set are the library's")
	res = dial(t, addr, remote.WithDaemonDefaults()).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.Empty(t, res.Error)
	assert.Equal(t, remote.DefaultServerDeadline, res.Stats.Limits.Deadline)
	assert.Equal(t, 30*time.Second, remote.DefaultServerDeadline)
	// The library's deadline holds: a loop ends at 500 ms, not at 30 s.
	res = dial(t, addr).Execute(context.Background(), codemode.Request{Code: "async () => { for (;;) {} }"})
	require.NotNil(t, res.Err)
	assert.Equal(t, codemode.KindTimeout, res.Err.Kind)
	assert.Equal(t, codemode.DefaultDeadline.Milliseconds(), res.Err.DeadlineMS)
}

// logBuffer is a daemon's log, written by its goroutines and read by the
// test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRefusalsLoggedAndCounted: a call with a wrong token or none is
// logged and counted in the metrics.
func TestRefusalsLoggedAndCounted(t *testing.T) {
	var log logBuffer
	reg := prometheus.NewRegistry()
	m := remote.NewMetrics(reg)
	srv := remote.NewServer(remote.ServerOptions{Metrics: m, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	u, s := srv.TokenAuth("right")
	addr := serve(t, srv, grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(s))
	for _, opts := range [][]remote.Option{nil, {remote.WithToken("wrong")}} {
		c := dial(t, addr, opts...)
		// A program with no providers is one unary call (Standalone); one
		// with providers is a stream (Program).
		assert.Contains(t, c.Execute(context.Background(), codemode.Request{Code: "async () => 1"}).Error, "Unauthenticated")
		assert.Contains(t, c.Execute(context.Background(), codemode.Request{Code: "async () => 1", Providers: []codemode.Provider{{Name: "s"}}}).Error,
			"Unauthenticated")
	}
	assert.Equal(t, 4.0, counter(t, reg, "codemode_unauthenticated_total"))
	assert.Contains(t, log.String(), `level=WARN msg="unauthenticated call refused"`)
	assert.Contains(t, log.String(), `method=/codemode.remote.v1.Executor/Standalone`, "the first refusal's line (the rest are counted on the next)")
}

// counter is a counter's value in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metric(t, reg, name).GetCounter().GetValue()
}

// gauge is a gauge's value in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metric(t, reg, name).GetGauge().GetValue()
}

func metric(t *testing.T, reg *prometheus.Registry, name string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0]
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// serve serves srv on 127.0.0.1 until the test ends.
func serve(t *testing.T, srv *remote.Server, sopts ...grpc.ServerOption) string {
	t.Helper()
	g := grpc.NewServer(append(srv.GRPCOptions(), sopts...)...)
	srv.Register(g)
	return listen(t, g, srv)
}

// TestDrain: a draining daemon says NOT_SERVING to a new connection's
// health check (the server's status and the Executor's), refuses a new
// program with UNAVAILABLE, lets the one in flight finish, and then
// reports that nothing is left.
func TestDrain(t *testing.T) {
	srv := remote.NewServer(remote.ServerOptions{})
	addr := serve(t, srv)
	arrived, release := make(chan struct{}), make(chan struct{})
	done := make(chan codemode.ExecuteResult, 1)
	go func() {
		done <- dial(t, addr).Execute(context.Background(), codemode.Request{Code: "async () => await db.slow()",
			Providers: []codemode.Provider{{Name: "db"}}, Dispatch: func(context.Context, string, string, string) (string, error) {
				close(arrived)
				<-release
				return `{"result":"finished while draining"}`, nil
			}})
	}()
	<-arrived
	drained := make(chan bool, 1)
	go func() { drained <- srv.Drain(context.Background()) }()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	for _, service := range []string{"", pb.Executor_ServiceDesc.ServiceName} {
		require.Eventually(t, func() bool {
			r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
			return err == nil && r.Status == healthpb.HealthCheckResponse_NOT_SERVING
		}, 10*time.Second, 10*time.Millisecond, "service %q", service)
	}
	res := dial(t, addr).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	assert.Equal(t, "remote: Unavailable: the daemon is draining: try another", res.Error)
	select {
	case <-drained:
		t.Fatal("the drain ended with a program in flight")
	default:
	}
	close(release)
	r := <-done
	require.Empty(t, r.Error)
	assert.Equal(t, `"finished while draining"`, string(r.Result))
	assert.True(t, <-drained)
}
