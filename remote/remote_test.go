package remote_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/gopool"
	"github.com/codemode-go/codemode/internal/hostile"
	"github.com/codemode-go/codemode/internal/spectest"
	"github.com/codemode-go/codemode/remote"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// TestMain checks that no goroutine outlives the tests, but for the
// stream goroutines waiting (at most a second) to be reused.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction(gopool.Worker))
}

// recorder keeps every message the daemon received, as bytes.
type recorder struct {
	mu      sync.Mutex
	got     [][]byte
	methods []string
}

func (r *recorder) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	r.mu.Lock()
	r.methods = append(r.methods, info.FullMethod)
	r.mu.Unlock()
	return h(srv, &recordingStream{ServerStream: ss, r: r})
}

// unary records a unary call's request (Standalone's start).
func (r *recorder) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	b, _ := proto.Marshal(req.(proto.Message))
	r.mu.Lock()
	r.methods = append(r.methods, info.FullMethod)
	r.got = append(r.got, b)
	r.mu.Unlock()
	return h(ctx, req)
}

// calls are the methods the daemon was called on, in order.
func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.methods)
}

type recordingStream struct {
	grpc.ServerStream
	r *recorder
}

func (s *recordingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		b, _ := proto.Marshal(m.(proto.Message))
		s.r.mu.Lock()
		s.r.got = append(s.r.got, b)
		s.r.mu.Unlock()
	}
	return err
}

func (r *recorder) all() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Join(r.got, nil)
}

// benchDaemon serves on 127.0.0.1 until the benchmark ends.
func benchDaemon(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := remote.NewServer(remote.ServerOptions{})
	g := grpc.NewServer(srv.GRPCOptions()...)
	srv.Register(g)
	go g.Serve(ln)
	b.Cleanup(func() {
		g.Stop()
		srv.Close()
	})
	return ln.Addr().String()
}

// daemon serves on 127.0.0.1 until the test ends.
func daemon(t testing.TB, opts remote.ServerOptions, sopts ...grpc.ServerOption) (string, *recorder) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := &recorder{}
	srv := remote.NewServer(opts)
	// The recorder's unary interceptor is the innermost, after sopts' (auth):
	// it records what reached the service.
	g := grpc.NewServer(append(append(append(srv.GRPCOptions(), grpc.ChainStreamInterceptor(rec.stream)), sopts...),
		grpc.ChainUnaryInterceptor(rec.unary))...)
	srv.Register(g)
	go g.Serve(ln)
	t.Cleanup(func() {
		g.Stop()
		srv.Close()
	})
	return ln.Addr().String(), rec
}

func dial(t testing.TB, addr string, opts ...remote.Option) *remote.Client {
	t.Helper()
	c, err := remote.Dial(addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// examples are providers-and-dispatch programs with their outcomes, run
// against the local executor and the remote client alike.
var examples = []struct {
	name, code, result, err string
}{
	{"a call", `async () => (await store.getUser(7)).name`, `"user-7"`, ""},
	{"overlapping calls", `async () => (await Promise.all([1, 2, 3].map((i) => store.getUser(i)))).map((u) => u.name)`, `["user-1","user-2","user-3"]`, ""},
	{"object args", `async () => await kv.get({key: "a"})`, `{"key":"a"}`, ""},
	{"an error envelope", `async () => { try { await store.fail() } catch (e) { return e.message } }`, `"no luck"`, ""},
	{"outside the envelope", `async () => await store.weird()`, "", codemode.MsgOutsideEnvelope},
	{"an unknown tool", `async () => await store.nope()`, "", `Tool "nope" not found`},
	{"logs", `async () => { console.log("a", 1); return null }`, `null`, ""},
	{"a throw", `async () => { throw new RangeError("bad") }`, "", "RangeError: bad"},
	{"binary data", `async () => { const b = await store.echo(new Uint8Array([1, 2, 3])); return [b instanceof Uint8Array, b[2]] }`, `[true,3]`, ""},
}

func dispatch(_ context.Context, provider, tool, args string) (string, error) {
	switch {
	case provider == "kv" && tool == "get":
		return `{"result":` + args + `}`, nil
	case tool == "getUser":
		var a []int
		json.Unmarshal([]byte(args), &a)
		return `{"result":{"name":"user-` + string(rune('0'+a[0])) + `"}}`, nil
	case tool == "fail":
		return `{"error":"no luck"}`, nil
	case tool == "weird":
		return `[1]`, nil
	case tool == "echo":
		var a []json.RawMessage
		json.Unmarshal([]byte(args), &a)
		return `{"result":` + string(a[0]) + `}`, nil
	}
	return "", codemode.ToolNotFoundError{Tool: tool}
}

var providers = []codemode.Provider{{Name: "store", Tools: []string{"getUser", "fail", "weird", "echo"}}, {Name: "kv", Tools: []string{"get"}, ObjectArgs: true}}

// TestSameAsInProcess: every example gives the same outcome through the
// daemon as in process.
func TestSameAsInProcess(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{})
	local, err := codemode.New()
	require.NoError(t, err)
	defer local.Close()
	for _, r := range []codemode.Runner{local, dial(t, addr)} {
		for _, ex := range examples {
			res := r.Execute(context.Background(), codemode.Request{Code: ex.code, Providers: providers, Dispatch: dispatch})
			if ex.err != "" {
				assert.Contains(t, res.Error, ex.err, "%T %s", r, ex.name)
				continue
			}
			require.Empty(t, res.Error, "%T %s", r, ex.name)
			assert.Equal(t, ex.result, string(res.Result), "%T %s", r, ex.name)
			if ex.name == "logs" {
				assert.Equal(t, []string{"a 1"}, res.Logs)
			}
		}
	}
}

// TestSecretStaysHome: the dispatch signs with a secret of the client's
// process; the program gets the signature, and no byte the daemon received
// holds the secret.
func TestSecretStaysHome(t *testing.T) {
	addr, rec := daemon(t, remote.ServerOptions{})
	secret := []byte("s3cr3t-key-of-the-client")
	sign := func(_ context.Context, _, _, args string) (string, error) {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(args))
		return `{"result":"` + hex.EncodeToString(m.Sum(nil)) + `"}`, nil
	}
	res := dial(t, addr).Execute(context.Background(), codemode.Request{Code: `async () => await vault.sign("hello")`,
		Providers: []codemode.Provider{{Name: "vault", APIs: []codemode.ProviderTool{{Name: "sign", Description: "Signs with the client's key."}}}},
		Dispatch:  sign})
	require.Empty(t, res.Error)
	assert.Len(t, string(res.Result), 66)
	assert.NotContains(t, string(rec.all()), string(secret))
	assert.Contains(t, string(rec.all()), "vault.sign", "the program itself crossed") // sanity: the recorder sees the stream
	assert.Contains(t, string(rec.all()), "Signs with the client's key.", "the providers' tool docs travel with the program")
}

// TestRunRemote: a run_js script on the daemon calls capabilities served
// by the client.
func TestRunRemote(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{})
	var calls atomic.Int64
	c := dial(t, addr, remote.WithCapability(codemode.Capability{Name: "double", Func: func(_ context.Context, args json.RawMessage) (any, error) {
		calls.Add(1)
		var a struct{ N int }
		json.Unmarshal(args, &a)
		return a.N * 2, nil
	}}), remote.WithCapability(codemode.Capability{Name: "later", Async: true, Func: func(context.Context, json.RawMessage) (any, error) {
		return "done", nil
	}}))
	res, err := c.Run(context.Background(), "return [double({n: 21}), await later({})]")
	require.NoError(t, err)
	assert.Equal(t, `[42,"done"]`, string(res.Value))
	assert.Equal(t, int64(1), calls.Load())
	assert.Equal(t, 2, res.Stats.HostCalls)
	_, err = c.Run(context.Background(), "throw new Error('x')")
	var ee *codemode.ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, codemode.KindJS, ee.Kind)
}

// TestAuth: without the token, or with a wrong one, nothing runs.
func TestAuth(t *testing.T) {
	u, s := remote.TokenAuth("right")
	addr, rec := daemon(t, remote.ServerOptions{}, grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(s))
	var ran atomic.Int64
	count := func(context.Context, string, string, string) (string, error) { ran.Add(1); return `{"result":1}`, nil }
	req := codemode.Request{Code: `async () => await t.x()`, Providers: []codemode.Provider{{Name: "t"}}, Dispatch: count}
	for _, token := range []string{"", "wrong"} {
		var opts []remote.Option
		if token != "" {
			opts = append(opts, remote.WithToken(token))
		}
		res := dial(t, addr, opts...).Execute(context.Background(), req)
		assert.Contains(t, res.Error, "Unauthenticated", token)
	}
	assert.Zero(t, ran.Load())
	assert.Empty(t, rec.all(), "nothing reached the service")
	res := dial(t, addr, remote.WithToken("right")).Execute(context.Background(), req)
	require.Empty(t, res.Error)
	assert.Equal(t, int64(1), ran.Load())
}

// TestHostileClient: answers for unknown ids are dropped, a client that
// never answers meets the deadline, one that leaves mid-program frees it,
// and the daemon serves the next program.
func TestHostileClient(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{Max: codemode.Limits{Deadline: 300 * time.Millisecond}})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := pb.NewExecutorClient(conn)
	ctx := context.Background()

	// Not a start first.
	st, err := client.Program(ctx)
	require.NoError(t, err)
	require.NoError(t, st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Answer{Answer: &pb.Answer{Id: 1}}}))
	_, err = st.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err))

	// Never answering: the program times out at its deadline.
	st, err = client.Program(ctx)
	require.NoError(t, err)
	require.NoError(t, st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: &pb.Start{Code: []byte("async () => await s.x()"),
		Providers: []*pb.Provider{{Name: []byte("s")}}}}}))
	m, err := st.Recv()
	require.NoError(t, err)
	require.NotNil(t, m.GetCall())
	// Answers for ids no call waits on: dropped.
	for _, id := range []uint64{0, 999, m.GetCall().Id + 7} {
		require.NoError(t, st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Answer{Answer: &pb.Answer{Id: id, Outcome: &pb.Answer_Envelope{Envelope: []byte(`{"result":1}`)}}}}))
	}
	m, err = st.Recv()
	require.NoError(t, err)
	require.NotNil(t, m.GetResult())
	assert.Equal(t, "timeout", m.GetResult().Kind)
	st.CloseSend()

	// Leaving mid-program.
	cctx, cancel := context.WithCancel(ctx)
	st, err = client.Program(cctx)
	require.NoError(t, err)
	require.NoError(t, st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: &pb.Start{Code: []byte("async () => await s.x()"),
		Providers: []*pb.Provider{{Name: []byte("s")}}}}}))
	_, err = st.Recv()
	require.NoError(t, err)
	cancel()

	// The daemon goes on.
	res := dial(t, addr).Execute(ctx, codemode.Request{Code: "async () => 1 + 1"})
	require.Empty(t, res.Error)
	assert.Equal(t, "2", string(res.Result))
}

// TestHostileProgramsEndAtOnce: a program that once took the daemon down
// (a Go stack overflow in the parser that reads it, from one client with a
// token) or held a core for minutes gets an outcome of its own, and the
// daemon serves the next program.
func TestHostileProgramsEndAtOnce(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{Max: codemode.Limits{Deadline: 10 * time.Second}})
	c := dial(t, addr, remote.WithLimits(codemode.Limits{Deadline: 10 * time.Second}))
	ctx := context.Background()
	for name, src := range hostile.Sources() {
		res := c.Execute(ctx, codemode.Request{Code: src})
		if res.Err != nil {
			assert.Contains(t, []codemode.ErrorKind{codemode.KindJS, codemode.KindMemoryExceeded}, res.Err.Kind, "%s: %s", name, res.Error)
		}
	}
	res := c.Execute(ctx, codemode.Request{Code: "async () => 1 + 1"})
	require.Empty(t, res.Error)
	assert.Equal(t, "2", string(res.Result))
}

// TestLimitsCapped: a program asking for more than the daemon's maximum
// runs under the maximum.
func TestLimitsCapped(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{Max: codemode.Limits{Deadline: 100 * time.Millisecond}})
	res := dial(t, addr, remote.WithLimits(codemode.Limits{Deadline: time.Hour})).Execute(context.Background(),
		codemode.Request{Code: "async () => { for (;;) {} }"})
	require.NotNil(t, res.Err)
	assert.Equal(t, codemode.KindTimeout, res.Err.Kind)
	assert.Equal(t, int64(100), res.Err.DeadlineMS)
	assert.Equal(t, 100*time.Millisecond, res.Stats.Limits.Deadline, "the grant is reported")
	assert.Equal(t, codemode.DefaultMemory, res.Stats.Limits.Memory)
}

// TestSpecExamplesRemote: every example of the providers-and-dispatch
// protocol (docs/PROTOCOL.md) through the daemon, with the outputs it has
// in process.
func TestSpecExamplesRemote(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{})
	spectest.Examples(t, dial(t, addr))
}

// TestSessionOnDaemons: a session's programs run on a daemon that keeps
// its sandbox; sealed on the client (the key never leaves it) and
// continued through a client of another daemon, which replays the
// journal it is sent: the state is there, and no tool is called again. A
// program that fails changes nothing there either.
func TestSessionOnDaemons(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	load := codemode.Capability{Name: "load", Async: true, Func: func(_ context.Context, args json.RawMessage) (any, error) {
		calls.Add(1)
		return map[string]any{"rows": []int{1, 2, 3}}, nil
	}}
	a, _ := daemon(t, remote.ServerOptions{})
	s := dial(t, a, remote.WithCapability(load)).NewSession()
	res, err := s.Run(ctx, "const data = await load({}); let total = data.rows.length; total")
	require.NoError(t, err)
	assert.Equal(t, "3", string(res.Value))
	res, err = s.Run(ctx, "total += 1; total")
	require.NoError(t, err)
	assert.Equal(t, "4", string(res.Value))
	_, err = s.Run(ctx, "total = 100; throw new Error('not kept')")
	require.Error(t, err)
	res, err = s.Run(ctx, "total")
	require.NoError(t, err)
	assert.Equal(t, "4", string(res.Value))
	ex := s.Execute(ctx, codemode.Request{Code: "total * 10"})
	require.Nil(t, ex.Err, ex.Error)
	assert.Equal(t, "40", string(ex.Result))
	require.Equal(t, int32(1), calls.Load())

	key := codemode.SessionKey{Key: []byte("a key that stays with the client")}
	sealed, err := s.Seal(key)
	require.NoError(t, err)
	b, rec := daemon(t, remote.ServerOptions{})
	s2, err := dial(t, b, remote.WithCapability(load)).RestoreSession(sealed, key)
	require.NoError(t, err)
	assert.Equal(t, s.ID(), s2.ID())
	res, err = s2.Run(ctx, "[total, data.rows]")
	require.NoError(t, err)
	assert.JSONEq(t, "[4,[1,2,3]]", string(res.Value))
	assert.Equal(t, int32(1), calls.Load(), "the second daemon replayed the journal: no tool called again")
	assert.Len(t, rec.calls(), 2, "the first start found no session; the second brought the journal")
	res, err = s2.Run(ctx, "total")
	require.NoError(t, err)
	assert.Equal(t, "4", string(res.Value))
	assert.Len(t, rec.calls(), 3, "then the daemon has it")

	// The sealed session opens in process too.
	e, err := codemode.New(codemode.WithCapability(load))
	require.NoError(t, err)
	defer e.Close()
	local, err := e.RestoreSession(ctx, sealed, key)
	require.NoError(t, err)
	r, err := local.Run(ctx, "total")
	require.NoError(t, err)
	assert.Equal(t, "4", string(r.Value))
}

// TestDeterminismCrosses: a run made deterministic on the client's
// context (codemode.WithDeterminism) is the same run on the daemon:
// Math.random and the virtual clock give what they give in process.
func TestDeterminismCrosses(t *testing.T) {
	a, _ := daemon(t, remote.ServerOptions{})
	c := dial(t, a, remote.WithQueueTimeout(time.Minute))
	e, err := codemode.New()
	require.NoError(t, err)
	defer e.Close()
	const script = "return [Math.random(), Math.random(), Date.now(), new Date().toISOString(), crypto.randomUUID()]"
	for _, d := range []codemode.Determinism{{Seed: 7, Clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, {Seed: 8}} {
		ctx := codemode.WithDeterminism(context.Background(), d)
		local, err := e.Run(ctx, script)
		require.NoError(t, err)
		far, err := c.Run(ctx, script)
		require.NoError(t, err)
		var l, f []any
		require.NoError(t, json.Unmarshal(local.Value, &l))
		require.NoError(t, json.Unmarshal(far.Value, &f))
		if d.Clock.IsZero() { // the run's own clock: only the random values agree
			l, f = append(l[:2:2], l[4]), append(f[:2:2], f[4])
		}
		assert.Equal(t, l, f, "%+v", d)
		ex := c.Execute(ctx, codemode.Request{Code: script})
		require.Nil(t, ex.Err, ex.Error)
		lx := e.Execute(ctx, codemode.Request{Code: script})
		if !d.Clock.IsZero() {
			assert.JSONEq(t, string(lx.Result), string(ex.Result))
		}
	}
}

// TestEffectsCross: the effects ledger of a program that reads, writes,
// then loops past its deadline reaches the client whole, as in process:
// the error's summary says the write completed; one that loops before
// any call says no tool ran.
func TestEffectsCross(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{})
	gov := codemode.Governance{Tools: map[string]codemode.ToolPolicy{"store.getUser": {Effect: codemode.EffectRead}}}
	limits := codemode.Limits{Deadline: 300 * time.Millisecond}
	local, err := codemode.New(codemode.WithGovernance(gov), codemode.WithLimits(limits))
	require.NoError(t, err)
	defer local.Close()
	for _, r := range []codemode.Runner{local, dial(t, addr, remote.WithGovernance(gov), remote.WithLimits(limits))} {
		res := r.Execute(context.Background(), codemode.Request{
			Code:      `async () => { await store.getUser(1); await store.echo(2); for (;;) {} }`,
			Providers: providers, Dispatch: dispatch})
		require.NotNil(t, res.Err, "%T", r)
		assert.Equal(t, codemode.KindTimeout, res.Err.Kind)
		require.NotNil(t, res.Effects, "%T", r)
		assert.Equal(t, "store.echo completed before the timeout", res.Effects.Summary(), "%T", r)
		var got []string
		for _, c := range res.Effects.Calls {
			got = append(got, fmt.Sprintln(c.Seq, c.Tool, c.Effect, c.Outcome))
		}
		assert.Equal(t, []string{"0 store.getUser read ok\n", "1 store.echo write ok\n"}, got, "%T", r)

		res = r.Execute(context.Background(), codemode.Request{Code: `async () => { for (;;) {} }`, Providers: providers, Dispatch: dispatch})
		assert.Nil(t, res.Effects)
		assert.Equal(t, "no tool ran", res.Effects.Summary())
	}
}
