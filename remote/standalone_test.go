package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// The daemon's methods, as the recorder lists them.
const (
	methodProgram    = pb.Executor_Program_FullMethodName
	methodStandalone = pb.Executor_Standalone_FullMethodName
)

// overStream runs start on the Program stream: the start, then the
// client's half-close, then the daemon's Result or its status.
func overStream(ctx context.Context, c pb.ExecutorClient, start *pb.Start) (*pb.Result, error) {
	stream, err := c.Program(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: start}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	stream.CloseSend()
	for {
		m, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if r := m.GetResult(); r != nil {
			return r, nil
		}
	}
}

// TestStandaloneMatchesProgram: on identical starts, Standalone answers
// exactly what the Program stream does, results and refusals alike (the
// run's elapsed time and peak memory aside).
func TestStandaloneMatchesProgram(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{Max: codemode.Limits{Memory: 32 << 20, Deadline: 5 * time.Second}})
	c := rawClient(t, addr)
	run := pb.Start_MODE_RUN
	for _, tc := range []struct {
		name  string
		start *pb.Start
		code  codes.Code // of a refusal; OK: a Result
	}{
		{"a value", &pb.Start{Code: []byte("async () => ({ok: true, n: 2, s: 'hi'})")}, codes.OK},
		{"logs and a throw", &pb.Start{Code: []byte("async () => { console.log('a', 1); throw new TypeError('bad') }")}, codes.OK},
		{"a syntax error", &pb.Start{Code: []byte("async () => {")}, codes.OK},
		{"undefined", &pb.Start{Code: []byte("async () => undefined")}, codes.OK},
		{"a tool it does not have", &pb.Start{Code: []byte("async () => await store.get(1)")}, codes.OK},
		{"past its deadline", &pb.Start{Code: []byte("async () => { for (;;) {} }"), Limits: &pb.Limits{DeadlineMs: 50}}, codes.OK},
		{"past its memory", &pb.Start{Code: []byte("async () => { const a = []; for (;;) a.push('x'.repeat(4096) + a.length) }"),
			Limits: &pb.Limits{Memory: 4 << 20}}, codes.OK},
		{"limits capped", &pb.Start{Code: []byte("async () => 1"), Limits: &pb.Limits{Memory: 1 << 30, DeadlineMs: 60_000}}, codes.OK},
		{"limits required", &pb.Start{Code: []byte("async () => 1"), Limits: &pb.Limits{Memory: 1 << 30}, RequireLimits: true}, codes.FailedPrecondition},
		{"governed, no calls", &pb.Start{Code: []byte("async () => 3"), Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte("*"), Policy: &pb.ToolPolicy{RequiresApproval: true}}}}}, codes.OK},
		{"a bad policy", &pb.Start{Code: []byte("async () => 3"), Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte(""), Policy: &pb.ToolPolicy{Budget: -1}}}}}, codes.InvalidArgument},
		{"a run script", &pb.Start{Mode: run, Code: []byte("console.log('x'); return [1, 'two', {three: 3}]")}, codes.OK},
		{"a run script that throws", &pb.Start{Mode: run, Code: []byte("throw new RangeError('out')")}, codes.OK},
		{"a run script past its deadline", &pb.Start{Mode: run, Code: []byte("for (;;) {}"), Limits: &pb.Limits{DeadlineMs: 50}}, codes.OK},
		{"an unknown mode", &pb.Start{Mode: pb.Start_Mode(7), Code: []byte("async () => 7")}, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			viaStream, serr := overStream(ctx, c, proto.Clone(tc.start).(*pb.Start))
			alone, aerr := c.Standalone(ctx, proto.Clone(tc.start).(*pb.Start))
			assert.Equal(t, tc.code, status.Code(serr), "%v", serr)
			assert.Equal(t, status.Convert(serr).Proto(), status.Convert(aerr).Proto(), "the same refusal")
			if tc.code != codes.OK {
				return
			}
			require.NotNil(t, viaStream)
			require.NotNil(t, alone)
			for _, r := range []*pb.Result{viaStream, alone} {
				require.NotNil(t, r.Stats)
				r.Stats.ElapsedUs, r.Stats.PeakMemory = 0, 0 // the second run's bytecode comes from the cache
			}
			assert.True(t, proto.Equal(viaStream, alone), "stream: %v\nstandalone: %v", viaStream, alone)
		})
	}
}

// TestStandaloneRefusesCallbacks: a start whose program would call back
// to the client (providers, capabilities), keep its sandbox, or resume is
// refused by Standalone with INVALID_ARGUMENT, and runs nothing (the
// daemon logs every program it runs).
func TestStandaloneRefusesCallbacks(t *testing.T) {
	var log logBuffer
	addr, _ := daemon(t, remote.ServerOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	c := rawClient(t, addr)
	for name, start := range map[string]*pb.Start{
		"providers":    {Code: []byte("async () => 1"), Providers: []*pb.Provider{{Name: []byte("s")}}},
		"capabilities": {Mode: pb.Start_MODE_RUN, Code: []byte("return 1"), Capabilities: []*pb.Capability{{Name: []byte("c")}}},
		"retained":     {Code: []byte("async () => 1"), RetainHandles: true},
		"a resumption": {Resume: &pb.Resume{Body: []byte("{}"), Approve: true}},
	} {
		_, err := c.Standalone(context.Background(), start)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
		assert.Contains(t, status.Convert(err).Message(), "runs on Program", name)
	}
	assert.NotContains(t, log.String(), "msg=program request=")
	res, err := c.Standalone(context.Background(), &pb.Start{Code: []byte("async () => 'next'")})
	require.NoError(t, err)
	assert.Equal(t, `"next"`, string(res.ResultJson))
	assert.Contains(t, log.String(), "msg=program request=", "a program run is logged")
}

// TestClientStandaloneSameAsStream: requests a client sends as Standalone
// get the results the same client gets on streams (from a daemon that
// predates Standalone), a call through __dispatch with no Dispatch
// included.
func TestClientStandaloneSameAsStream(t *testing.T) {
	addr, rec := daemon(t, remote.ServerOptions{})
	srv := remote.NewServer(remote.ServerOptions{})
	oldAddr := serveService(t, srv, oldDaemon{srv: srv})
	alone, streams := dial(t, addr), dial(t, oldAddr)
	ctx := context.Background()
	for _, code := range []string{
		"async () => ({ok: true, list: [1, 'a', null]})",
		"async () => { console.log('hi'); return 1 }",
		"async () => { throw new Error('no') }",
		"async () => __parseForDispatch(await __dispatch('kv', 'get', '[1]'))",
		"async () => {",
	} {
		a, b := alone.Execute(ctx, codemode.Request{Code: code}), streams.Execute(ctx, codemode.Request{Code: code})
		a.Stats, b.Stats = codemode.RunStats{}, codemode.RunStats{}
		for _, r := range []*codemode.ExecuteResult{&a, &b} {
			if r.Effects != nil { // the same calls; their times apart
				for i := range r.Effects.Calls {
					r.Effects.Calls[i].Elapsed = 0
				}
			}
		}
		assert.Equal(t, b, a, code)
	}
	for _, script := range []string{"return 40 + 2", "throw new TypeError('t')", "for (;;) {}"} {
		c := remote.WithLimits(codemode.Limits{Deadline: 100 * time.Millisecond})
		a, aerr := dial(t, addr, c).Run(ctx, script)
		b, berr := dial(t, oldAddr, c).Run(ctx, script)
		assert.Equal(t, berr, aerr, script)
		if a != nil && b != nil {
			a.Stats, b.Stats = codemode.RunStats{}, codemode.RunStats{}
		}
		assert.Equal(t, b, a, script)
	}
	for _, m := range rec.calls() {
		assert.Equal(t, methodStandalone, m)
	}
}

// TestClientTakesStandalone: the client sends a program that cannot call
// back (an Execute with no providers and no Dispatch, a Run with no
// capabilities) as one Standalone call, and every other on a Program
// stream.
func TestClientTakesStandalone(t *testing.T) {
	addr, rec := daemon(t, remote.ServerOptions{})
	ctx := context.Background()
	c := dial(t, addr)
	res := c.Execute(ctx, codemode.Request{Code: "async () => 6 * 7"})
	require.Empty(t, res.Error)
	assert.Equal(t, "42", string(res.Result))
	r, err := c.Run(ctx, "return 'run'")
	require.NoError(t, err)
	assert.Equal(t, `"run"`, string(r.Value))
	res = c.Execute(ctx, codemode.Request{Code: "async () => await s.x()", Providers: []codemode.Provider{{Name: "s"}},
		Dispatch: func(context.Context, string, string, string) (string, error) { return `{"result":"called"}`, nil }})
	require.Empty(t, res.Error)
	assert.Equal(t, `"called"`, string(res.Result))
	res = c.Execute(ctx, codemode.Request{Code: "async () => __parseForDispatch(await __dispatch('kv', 'get', '[1]'))",
		Dispatch: func(context.Context, string, string, string) (string, error) { return `{"result":"no providers"}`, nil }})
	require.Empty(t, res.Error)
	assert.Equal(t, `{"result":"no providers"}`, string(res.Result), "a Dispatch with no providers is still called")
	res = c.Execute(ctx, codemode.Request{Code: "async () => ({f: () => 1})", RetainHandles: true})
	require.Empty(t, res.Error)
	require.NotNil(t, res.Retained)
	res.Retained.Close()
	withCap := dial(t, addr, remote.WithCapability(codemode.Capability{Name: "add", Func: func(context.Context, json.RawMessage) (any, error) { return 3, nil }}))
	r, err = withCap.Run(ctx, "return add({})")
	require.NoError(t, err)
	assert.Equal(t, "3", string(r.Value))
	assert.Equal(t, []string{methodStandalone, methodStandalone, methodProgram, methodProgram, methodProgram, methodProgram}, rec.calls())
}

// oldDaemon is a daemon from before Standalone: it serves Program only.
type oldDaemon struct {
	pb.UnimplementedExecutorServer
	srv *remote.Server
}

func (o oldDaemon) Program(stream pb.Executor_ProgramServer) error { return o.srv.Program(stream) }

// TestClientFallsBackToStream: against a daemon that does not know
// Standalone (UNIMPLEMENTED), the client runs the program on a stream, and
// sends every later one there at once.
func TestClientFallsBackToStream(t *testing.T) {
	srv := remote.NewServer(remote.ServerOptions{})
	rec := &recorder{}
	addr := serveService(t, srv, oldDaemon{srv: srv}, grpc.ChainStreamInterceptor(rec.stream), grpc.ChainUnaryInterceptor(rec.unary))
	c := dial(t, addr)
	for i := range 3 {
		res := c.Execute(context.Background(), codemode.Request{Code: "async () => 'old'"})
		require.Empty(t, res.Error, "program %d", i)
		assert.Equal(t, `"old"`, string(res.Result))
	}
	assert.Equal(t, []string{methodStandalone, methodProgram, methodProgram, methodProgram}, rec.calls())
}

// serveService serves svc (the Executor service) with srv's options on
// 127.0.0.1 until the test ends.
func serveService(t *testing.T, srv *remote.Server, svc pb.ExecutorServer, sopts ...grpc.ServerOption) string {
	t.Helper()
	g := grpc.NewServer(append(srv.GRPCOptions(), sopts...)...)
	pb.RegisterExecutorServer(g, svc)
	return listen(t, g, srv)
}

// listen serves g on 127.0.0.1 until the test ends, then stops it and
// closes srv.
func listen(t *testing.T, g *grpc.Server, srv *remote.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go g.Serve(ln)
	t.Cleanup(func() {
		g.Stop()
		srv.Close()
	})
	return ln.Addr().String()
}

// TestUnaryRequestBounded: a Standalone request, or a health check's,
// that never arrives whole (its length prefix says more than the client
// sends) is ended after StartTimeout, as a stream's missing start is; gRPC
// alone would wait for it as long as the connection lives. Raw HTTP/2: a
// gRPC client always sends whole messages.
func TestUnaryRequestBounded(t *testing.T) {
	for _, method := range []string{methodStandalone, healthpb.Health_Check_FullMethodName} {
		t.Run(method, func(t *testing.T) { partialRequest(t, method) })
	}
}

func partialRequest(t *testing.T, method string) {
	const wait = 300 * time.Millisecond
	addr, _ := daemon(t, remote.ServerOptions{StartTimeout: wait})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	require.NoError(t, fr.WriteSettings())
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", addr},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true}))
	sent := time.Now()
	require.NoError(t, fr.WriteData(1, false, []byte{0, 0, 0, 0x10, 0, 0x12})) // 4096 bytes to come; one sent
	dec := hpack.NewDecoder(4096, nil)
	var ended string
	for ended == "" {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "the daemon ends the call")
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				require.NoError(t, fr.WriteSettingsAck())
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				require.NoError(t, fr.WritePing(true, f.Data))
			}
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			require.NoError(t, err)
			for _, h := range fields {
				if h.Name == "grpc-status" {
					ended = "grpc-status " + h.Value
				}
			}
		case *http2.RSTStreamFrame:
			ended = "reset " + f.ErrCode.String()
		}
	}
	assert.GreaterOrEqual(t, time.Since(sent), wait, "not before StartTimeout")
	assert.Equal(t, "grpc-status 1", ended, "CANCELLED: gRPC's status for a read its context ended")
	res := dial(t, addr).Execute(context.Background(), codemode.Request{Code: "async () => 'next'"})
	require.Empty(t, res.Error)
	assert.Equal(t, `"next"`, string(res.Result))
}

// TestClientNilContext: a nil context is refused before anything is sent,
// as the local Executor refuses it (errors.Is ErrNilContext); the client
// reports it as it reports every failure of its own, kind internal.
func TestClientNilContext(t *testing.T) {
	addr, rec := daemon(t, remote.ServerOptions{})
	c := dial(t, addr)
	var nilCtx context.Context // what a caller's bug passes
	res := c.Execute(nilCtx, codemode.Request{Code: "async () => 1"})
	assert.ErrorIs(t, res.Err, codemode.ErrNilContext)
	assert.Equal(t, codemode.KindInternal, res.Err.Kind)
	res = c.Resume(nilCtx, []byte("{}"), codemode.Decision{}, nil)
	assert.ErrorIs(t, res.Err, codemode.ErrNilContext)
	_, err := c.Run(nilCtx, "return 1")
	assert.ErrorIs(t, err, codemode.ErrNilContext)
	assert.Empty(t, rec.calls(), "nothing reached the daemon")
	res = c.Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	assert.Equal(t, "1", string(res.Result))
}
