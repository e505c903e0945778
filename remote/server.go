// Package remote is the daemon arrangement of the providers-and-dispatch
// protocol (docs/PROTOCOL.md) over gRPC: a program runs on the daemon
// ([NewServer], `codemode serve`),
// and every tool call it makes travels back over the program's own
// bidirectional stream to the client ([Dial]), which runs the dispatch and
// the capabilities in its own process: the tools still run where the
// credentials are, and the daemon holds none of them. A program with no
// one to call back needs no stream: it is one unary call,
// [Server.Standalone], one round trip.
//
// What a client can hold is bounded, whatever it does: a stream waits
// StartTimeout for its start; a program's calls wait no longer than its
// deadline, and its result SendGrace for a client that does not read (all
// of a stream's sends go through one writer goroutine, so no caller waits
// on gRPC's flow control beyond its own bound); a retained sandbox's
// stream has MaxInvokes handle calls in flight, its replies the same
// grace. Give grpc.NewServer [Server.GRPCOptions], so messages as large as
// the maxima allow are received; [Dial]'s client sizes its own from its
// limits.
package remote

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/gopool"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// ServerOptions configure a daemon.
type ServerOptions struct {
	// Max are the most a program may ask for; zero fields are
	// codemode's defaults. A request above them gets them.
	Max codemode.Limits
	// Executor are further options of the daemon's executors (slots,
	// concurrency).
	Executor []codemode.Option
	// Logger logs each program with its request id (default: discard).
	Logger *slog.Logger
	// MaxPrograms bounds the programs in flight (default
	// codemode.DefaultSlots); one more is refused at once with
	// RESOURCE_EXHAUSTED, so a client can try another daemon instead of
	// queueing past its deadline.
	MaxPrograms int
	// MemoryBudget bounds the engine memory of every program at once
	// (default: codemode.DefaultMemoryBudget(), three quarters of the
	// container's memory limit). A program that finds no room to start is
	// refused at once with RESOURCE_EXHAUSTED, like one past MaxPrograms;
	// one whose sandbox cannot grow ends with kind memory_budget.
	MemoryBudget *codemode.MemoryBudget
	// Metrics, when set, counts what the daemon does (see NewMetrics).
	Metrics *Metrics
	// StartTimeout bounds the wait for a stream's first message, its
	// Start (default 10 s), and for a Standalone request to arrive whole
	// (with GRPCOptions): a client that opens streams or calls and sends
	// nothing, or part of its start, cannot hold the daemon's program slots
	// or goroutines.
	StartTimeout time.Duration
	// SendGrace bounds how long the program's result, and each reply of a
	// retained sandbox, waits for a client that does not read (default
	// 10 s); then the stream ends with DEADLINE_EXCEEDED. With the
	// program's deadline (a call it sends waits no longer than the run),
	// it bounds every stream's life whether or not the client reads.
	SendGrace time.Duration
	// MaxInvokes bounds the handle calls one retained sandbox's stream may
	// have in flight (default 64); one more is answered at once with an
	// error saying so.
	MaxInvokes int
	// SessionTTL ends a client's session idle this long (default 30
	// minutes; the client's next program brings its journal and the
	// session is made again). Idle sessions are charged to MemoryBudget
	// and evicted under it (made again from the journal the daemon keeps).
	SessionTTL time.Duration
	// Propagator reads a Start's trace context (the program's run is a
	// child of the client's span) and writes each call's (the client's work
	// for it is a child of the call's span). Default: OpenTelemetry's
	// global propagator. Give the executors an Observer (Executor:
	// codemode.WithObserver, e.g. the otel module's) for the spans.
	Propagator propagation.TextMapPropagator
}

// DefaultServerDeadline is a daemon's maximum deadline when
// ServerOptions.Max gives none: long enough for real tools (a program
// waits on its tools over the network); a client asks for less with
// WithLimits.
const DefaultServerDeadline = 30 * time.Second

// DefaultSessionTTL is ServerOptions.SessionTTL's default.
const DefaultSessionTTL = 30 * time.Minute

// Server serves programs (the Executor service of remote.proto).
type Server struct {
	pb.UnimplementedExecutorServer
	opts ServerOptions
	max  codemode.Limits
	log  *slog.Logger

	admit    chan struct{}
	draining chan struct{} // closed by Drain
	health   *health.Server
	mu       sync.Mutex
	execs    map[execKey]*codemode.Executor
	sessions map[sessionKey]*codemode.Session // the clients' sessions, by executor and id
	seq      uint64
	// key seals the continuations of this daemon's runs while they are
	// its own: a paused program's goes to the client as its body, which
	// the client seals with the host's key (that key never comes here).
	key []byte
}

// sessionKey names a client's session on the daemon: its executor (the
// limits, capabilities and governance it runs under) and its id.
type sessionKey struct {
	e  *codemode.Executor
	id string
}

type execKey struct {
	limits codemode.Limits
	caps   string // the capability set's signature (Run)
	gov    string // the governance's signature
	queue  time.Duration
}

// NewServer makes a daemon's service.
func NewServer(opts ServerOptions) *Server {
	max := codemode.DefaultLimits()
	for _, f := range []struct {
		dst *int
		v   int
	}{{&max.Memory, opts.Max.Memory}, {&max.Stack, opts.Max.Stack},
		{&max.Payload, opts.Max.Payload}, {&max.Logs, opts.Max.Logs}} {
		if f.v > 0 {
			*f.dst = f.v
		}
	}
	max.Deadline = DefaultServerDeadline
	if opts.Max.Deadline > 0 {
		max.Deadline = opts.Max.Deadline
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	if opts.SendGrace <= 0 {
		opts.SendGrace = 10 * time.Second
	}
	if opts.MaxInvokes <= 0 {
		opts.MaxInvokes = 64
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := opts.MaxPrograms
	if n <= 0 {
		n = codemode.DefaultSlots
	}
	key := make([]byte, 32)
	rand.Read(key)
	if opts.MemoryBudget == nil {
		opts.MemoryBudget = codemode.DefaultMemoryBudget()
	}
	opts.Metrics.watch(opts.MemoryBudget)
	return &Server{opts: opts, max: max, log: log, admit: make(chan struct{}, n), draining: make(chan struct{}),
		execs: map[execKey]*codemode.Executor{}, sessions: map[sessionKey]*codemode.Session{}, key: key}
}

// GRPCOptions are the gRPC server options the daemon's limits need: the
// largest message it receives (a program's answers and its start) follows
// its maximum payload and logs, never below 64 MiB; and a connection has
// at most twice MaxPrograms streams, and 16 more (health checks), open at
// once, which bounds what the transport keeps of streams whose client
// stopped reading (a message and gRPC's 64 KiB write quota each, until the
// client reads or leaves). A Standalone request, and a health check's,
// must arrive within StartTimeout, as a stream's start must (a tap handle,
// grpc.InTapHandle: a server takes only one). Requests run on GOMAXPROCS
// reused goroutines (grpc.NumStreamWorkers, experimental in gRPC; one that
// finds them all busy gets a goroutine of its own, so this bounds
// nothing), whose stacks have grown to what a program needs: a new
// goroutine's would grow, copied, on every program. Pass them to
// grpc.NewServer.
func (s *Server) GRPCOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(max(64<<20, MessageLimit(s.max))),
		grpc.MaxConcurrentStreams(uint32(min(2*cap(s.admit)+16, math.MaxInt32))),
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))), grpc.InTapHandle(s.readBound)}
}

// MessageLimit is the largest message a program under l sends or receives
// on its stream: a result (at most Payload) with its logs (at most Logs),
// a call's arguments or an answer (at most Payload), and room for the rest
// (error text, stats, framing). Zero fields count as codemode's defaults.
func MessageLimit(l codemode.Limits) int {
	d := codemode.DefaultLimits()
	payload, logs := cmp.Or(l.Payload, d.Payload), cmp.Or(l.Logs, d.Logs)
	return int(min(2*int64(payload)+int64(logs)+1<<20, math.MaxInt32))
}

// Close closes the daemon's executors (runs in progress end).
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.execs {
		e.Close()
	}
	s.execs = map[execKey]*codemode.Executor{}
}

// grant is the limits a program runs under: what it asked for, capped by
// the daemon's maxima (zero fields: the maxima), and what was capped.
func (s *Server) grant(l *pb.Limits) (codemode.Limits, []string) {
	g := s.max
	if l == nil {
		return g, nil
	}
	var capped []string
	for _, f := range []struct {
		name string
		dst  *int
		v    int64
	}{{"memory", &g.Memory, l.Memory}, {"stack", &g.Stack, l.Stack}, {"payload", &g.Payload, l.Payload}, {"logs", &g.Logs, l.Logs}} {
		switch {
		case f.v > int64(*f.dst):
			capped = append(capped, fmt.Sprintf("%s %d bytes (the most is %d)", f.name, f.v, *f.dst))
		case f.v > 0:
			*f.dst = int(f.v)
		}
	}
	switch d := time.Duration(l.DeadlineMs) * time.Millisecond; {
	case d > g.Deadline:
		capped = append(capped, fmt.Sprintf("deadline %v (the most is %v)", d, g.Deadline))
	case d > 0:
		g.Deadline = d
	}
	return g, capped
}

// Program serves one program's stream.
func (s *Server) Program(stream pb.Executor_ProgramServer) error {
	ctx := stream.Context()
	release, err := s.admitOne()
	if err != nil {
		return err
	}
	defer release()
	p := newPeer(stream, s.opts.Metrics, s.opts.SendGrace)
	p.prop = s.propagator()
	gopool.Go(p.receive)
	defer p.stop()
	first, err := s.first(p)
	if errors.Is(err, io.EOF) {
		return status.Error(codes.InvalidArgument, "the stream ended before the program's start")
	}
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "the first message of a program is its start")
	}
	return s.serve(ctx, start, p, func(res *pb.Result) error {
		return p.reply(ctx, &pb.ServerMessage{Msg: &pb.ServerMessage_Result{Result: res}})
	})
}

// Standalone serves a program with no one to call back in one unary
// call: no stream, no peer, no goroutine of its own. It runs with no
// dispatch, so a call the program still makes (through __dispatch) fails
// "not found", as on a stream whose client has no dispatch; a start with
// providers, capabilities, retained handles or a resumption is refused.
func (s *Server) Standalone(ctx context.Context, start *pb.Start) (*pb.Result, error) {
	switch {
	case start == nil:
		return nil, status.Error(codes.InvalidArgument, "no start")
	case len(start.Providers) > 0, len(start.Capabilities) > 0:
		return nil, status.Error(codes.InvalidArgument, "a program with providers or capabilities runs on Program: its calls come back on the stream")
	case start.RetainHandles:
		return nil, status.Error(codes.InvalidArgument, "a program that retains its handles runs on Program: they are called on the stream")
	case start.Resume != nil:
		return nil, status.Error(codes.InvalidArgument, "a resumption runs on Program: the approved call comes back on the stream")
	case start.Session != nil:
		return nil, status.Error(codes.InvalidArgument, "a session's program runs on Program")
	}
	if t, _ := ctx.Value(readBoundKey{}).(*time.Timer); t != nil && !t.Stop() {
		return nil, status.Errorf(codes.DeadlineExceeded, "no program start within %v", s.opts.StartTimeout)
	}
	release, err := s.admitOne()
	if err != nil {
		return nil, err
	}
	defer release()
	// Bytes are counted as on a stream: ClientMessage.start, ServerMessage.result.
	s.opts.Metrics.moved("in", start, startField)
	var res *pb.Result
	err = s.serve(ctx, start, nil, func(r *pb.Result) error {
		res = r
		s.opts.Metrics.moved("out", r, resultField)
		return nil
	})
	return res, err
}

// startField and resultField number a stream's start and result in their
// messages' oneofs, for counting a Standalone call's bytes as a stream's.
var (
	startField  = (&pb.ClientMessage{}).ProtoReflect().Descriptor().Fields().ByName("start").Number()
	resultField = (&pb.ServerMessage{}).ProtoReflect().Descriptor().Fields().ByName("result").Number()
)

// readBoundKey keys the timer that bounds a Standalone request's read
// (readBound) in its context.
type readBoundKey struct{}

// readBound bounds the read of a unary request, Standalone's or a health
// check's, by StartTimeout, as a stream's start is bounded: gRPC reads a
// unary request whole, before any interceptor or handler runs, for as long
// as its client takes, and only the call's context ends that read. The
// context it returns is ended by a timer after StartTimeout. Standalone
// stops the timer when it starts, so the program's own deadline governs
// from there; the call's end stops it otherwise (a health check's, a
// request refused before Standalone ran), so no timer outlives its call.
// Other methods (streams, which the daemon bounds itself) pass.
func (s *Server) readBound(ctx context.Context, info *tap.Info) (context.Context, error) {
	if info.FullMethodName != pb.Executor_Standalone_FullMethodName && info.FullMethodName != healthpb.Health_Check_FullMethodName {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	wait := s.opts.StartTimeout
	t := time.AfterFunc(wait, func() { cancel(fmt.Errorf("no program start within %v", wait)) })
	context.AfterFunc(ctx, func() { t.Stop() }) // gRPC ends the call's context when the call ends
	return context.WithValue(ctx, readBoundKey{}, t), nil
}

// admitOne takes a program slot, or refuses the program at once: the
// daemon is draining, or MaxPrograms are in flight.
func (s *Server) admitOne() (release func(), err error) {
	select {
	case <-s.draining:
		s.opts.Metrics.refused(refusedDraining)
		return nil, status.Error(codes.Unavailable, "the daemon is draining: try another")
	default:
	}
	select {
	case s.admit <- struct{}{}:
	default:
		s.opts.Metrics.refused(refusedFull)
		return nil, status.Error(codes.ResourceExhausted, "the daemon is full: try another")
	}
	s.opts.Metrics.started()
	return func() {
		s.opts.Metrics.finished()
		<-s.admit
	}, nil
}

// serve runs an admitted program's start and hands its result to reply.
// p is the program's stream (its calls, its retained handles), nil for a
// Standalone program, which has neither.
func (s *Server) serve(ctx context.Context, start *pb.Start, p *peer, reply func(*pb.Result) error) error {
	s.mu.Lock()
	s.seq++
	reqID := fmt.Sprintf("p%d", s.seq)
	s.mu.Unlock()
	log := s.log.With("request", reqID, "mode", start.Mode.String())
	limits, capped := s.grant(start.Limits)
	if len(capped) > 0 {
		if start.RequireLimits {
			log.Info("program refused: limits above the maxima", "asked", capped)
			return status.Errorf(codes.FailedPrecondition, "the daemon will not grant %s", strings.Join(capped, ", "))
		}
		log.Info("limits capped at the maxima", "asked", capped)
	}
	if len(start.Trace) > 0 {
		ctx = s.propagator().Extract(ctx, propagation.MapCarrier(start.Trace))
	}
	if d := start.Determinism; d != nil {
		det := codemode.Determinism{Seed: d.Seed}
		if d.ClockSet {
			det.Clock = time.Unix(0, d.ClockUnixNs).UTC()
		}
		ctx = codemode.WithDeterminism(ctx, det)
	}
	var dispatch codemode.DispatchFunc
	rctx := ctx // a Run script's context: its capabilities find the peer in it
	if p != nil {
		dispatch, rctx = p.dispatch, withPeer(ctx, p)
	}
	res := &pb.Result{Limits: &pb.Limits{Memory: int64(limits.Memory), Stack: int64(limits.Stack), Payload: int64(limits.Payload),
		Logs: int64(limits.Logs), DeadlineMs: limits.Deadline.Milliseconds()}}
	began := time.Now()
	switch start.Mode {
	case pb.Start_MODE_RUN:
		e, err := s.executor(limits, start.Capabilities, start.Governance, queueTimeout(start))
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		var r *codemode.Result
		var rerr error
		text := "" // the error's text, when not its Error (a resumption's ExecuteResult.Error)
		sess, kept, err := s.session(ctx, e, start)
		if err != nil {
			return err
		}
		switch {
		case sess == nil && start.Session != nil:
			return reply(&pb.Result{SessionUnknown: true, Limits: res.Limits})
		case start.Resume != nil:
			out := s.resume(rctx, e, start, nil)
			r = &codemode.Result{Value: out.Result, Logs: out.Logs, Stats: out.Stats, Paused: out.Paused, Effects: out.Effects}
			if out.Err != nil {
				rerr, text = out.Err, out.Error
			}
		case sess != nil:
			r, rerr = sess.Run(rctx, string(start.Code))
			res.JournalEntry = journalSince(sess, kept)
		default:
			r, rerr = e.Run(rctx, string(start.Code))
		}
		if r != nil {
			p.flush(int64(r.Stats.HostCalls))
			res.ResultJson, res.Logs, res.Stats, res.EffectsJson = r.Value, wireTexts(r.Logs), stats(r.Stats), effectsJSON(r.Effects)
			if r.Paused != nil {
				res.ResultJson = nil
				if res.Paused, err = s.paused(r.Paused); err != nil {
					return status.Error(codes.Internal, err.Error())
				}
			}
		}
		if rerr != nil {
			ee, ok := errors.AsType[*codemode.ExecError](rerr)
			if !ok {
				ee = codemode.InternalError(codemode.RunJSToolName, rerr)
			}
			res.Error, res.ErrorJson, res.Kind, res.Err = []byte(cmp.Or(text, ee.Error())), []byte(ee.LLMJSON()), string(ee.Kind),
				toPBError(ee, rerr)
			res.ResultJson = nil
		}
		if memoryRefused(rerr) {
			return s.memoryRefusal(log, res)
		}
	default:
		// A session's Execute programs run on the executor of its Run
		// programs (the client's capabilities): one session, one sandbox.
		var caps []*pb.Capability
		if start.Session != nil {
			caps = start.Capabilities
		}
		e, err := s.executor(limits, caps, start.Governance, queueTimeout(start))
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		req := codemode.Request{Code: string(start.Code), Dispatch: dispatch, RetainHandles: start.RetainHandles}
		for _, pr := range start.Providers {
			p := codemode.Provider{Name: string(pr.Name), Tools: texts(pr.Tools), ObjectArgs: pr.ObjectArgs, Prelude: string(pr.Prelude),
				ProxySource: string(pr.ProxySource)}
			for _, d := range pr.Apis {
				p.APIs = append(p.APIs, codemode.ProviderTool{Name: string(d.Name), Description: string(d.Description),
					Params: rawJSON(d.ParamsJson), Returns: rawJSON(d.ReturnsJson)})
			}
			req.Providers = append(req.Providers, p)
		}
		sess, kept, err := s.session(ctx, e, start)
		if err != nil {
			return err
		}
		var r codemode.ExecuteResult
		switch {
		case sess == nil && start.Session != nil:
			return reply(&pb.Result{SessionUnknown: true, Limits: res.Limits})
		case start.Resume != nil:
			r = s.resume(ctx, e, start, dispatch)
		case sess != nil:
			r = sess.Execute(ctx, req)
			res.JournalEntry = journalSince(sess, kept)
		default:
			r = e.Execute(ctx, req)
		}
		p.flush(int64(r.Stats.HostCalls))
		res.ResultJson, res.Logs, res.Error, res.Stats = r.Result, wireTexts(r.Logs), []byte(r.Error), stats(r.Stats)
		res.EffectsJson = effectsJSON(r.Effects)
		if r.Paused != nil {
			if res.Paused, err = s.paused(r.Paused); err != nil {
				return status.Error(codes.Internal, err.Error())
			}
		}
		if r.Err != nil {
			res.ErrorJson, res.Kind, res.Err = []byte(r.Err.LLMJSON()), string(r.Err.Kind), toPBError(r.Err, r.Err)
			if memoryRefused(r.Err) {
				return s.memoryRefusal(log, res)
			}
		}
		if r.Retained != nil {
			res.Retained = true
			defer r.Retained.Close()
			if ctx.Err() == nil && p != nil {
				if err := reply(res); err != nil {
					return err
				}
				return serveRetained(ctx, p, r.Retained, s.opts.MaxInvokes)
			}
		}
	}
	if ctx.Err() != nil {
		log.Info("program abandoned", "elapsed", time.Since(began), "cause", ctx.Err())
		return status.FromContextError(ctx.Err()).Err()
	}
	kind := orOK(res.Kind)
	if res.Paused != nil {
		kind = "paused"
	}
	log.Info("program", "kind", kind, "elapsed", time.Since(began), "host_calls", res.Stats.GetHostCalls())
	s.opts.Metrics.ran(kind, time.Since(began), res.Stats.GetHostCalls())
	if err := reply(res); err != nil {
		log.Info("result not taken", "cause", err)
		return err
	}
	return nil
}

// session is the daemon's session a start names (nil for none), and how
// many runs it had kept: the one of its id at the client's point, or
// made from the journal the start brings. nil with start.Session set: the
// daemon has no such session, and the start brought no journal (the
// client sends it again with one). A journal that no longer replays is
// the start's error.
func (s *Server) session(ctx context.Context, e *codemode.Executor, start *pb.Start) (*codemode.Session, int, error) {
	ref := start.Session
	if ref == nil {
		return nil, 0, nil
	}
	switch {
	case ref.Id == "" || len(ref.Id) > 128:
		return nil, 0, status.Error(codes.InvalidArgument, "a session's id is 1 to 128 bytes")
	case start.Resume != nil:
		return nil, 0, status.Error(codes.InvalidArgument, "a session's paused program does not resume on the daemon")
	case start.RetainHandles:
		return nil, 0, status.Error(codes.InvalidArgument, "a session's program cannot retain its sandbox: the session keeps it")
	}
	key := sessionKey{e: e, id: ref.Id}
	s.mu.Lock()
	sess := s.sessions[key]
	s.mu.Unlock()
	if sess != nil {
		if n := sess.Kept(); n == int(ref.Runs) {
			return sess, n, nil
		}
	}
	if len(ref.Journal) == 0 {
		return nil, 0, nil
	}
	made, err := e.ReplaySession(ctx, ref.Id, ref.Journal)
	if err != nil {
		if errors.Is(err, codemode.ErrSessionRefused) {
			return nil, 0, status.Error(codes.InvalidArgument, err.Error())
		}
		return nil, 0, status.Error(codes.FailedPrecondition, err.Error())
	}
	if n := made.Kept(); n != int(ref.Runs) {
		made.Close()
		return nil, 0, status.Errorf(codes.InvalidArgument, "the session's journal holds %d programs, not %d", n, ref.Runs)
	}
	s.mu.Lock()
	old := s.sessions[key]
	s.sessions[key] = made
	if len(s.sessions) > maxSessions {
		for k, v := range s.sessions { // forget the closed ones
			if v.Kept() < 0 {
				delete(s.sessions, k)
			}
		}
	}
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return made, int(ref.Runs), nil
}

// queueTimeout is the queue timeout a start asks for, at most
// maxQueueTimeout (0: none).
func queueTimeout(start *pb.Start) time.Duration {
	return min(time.Duration(max(start.QueueTimeoutMs, 0))*time.Millisecond, maxQueueTimeout)
}

// maxQueueTimeout bounds the queue timeout a client may ask for: its
// programs wait no longer than this for their turns.
const maxQueueTimeout = 10 * time.Minute

// maxSessions is how many sessions the daemon remembers before it forgets
// the closed ones (idle ones are evicted by the memory budget and closed
// by the executor's TTL: ServerOptions.Executor).
const maxSessions = 4096

// journalSince is the run a session kept after its first kept runs, for
// the client's journal; nil when it kept none.
func journalSince(sess *codemode.Session, kept int) []byte {
	j, n, err := sess.Journal(kept)
	if err != nil || n == kept {
		return nil
	}
	return j
}

// memoryRefused says err is a program's that never started for want of
// room in the memory budget: no code of it ran, no call was made.
func memoryRefused(err error) bool {
	var ee *codemode.ExecError
	return errors.As(err, &ee) && ee.Kind == codemode.KindMemoryBudget && errors.Is(err, codemode.ErrBusy)
}

// memoryRefusal refuses a program the memory budget had no room for, as
// one past MaxPrograms is: the client tries another daemon. The status
// carries the program's result (its error of kind memory_budget) as a
// detail: a client whose every daemon refused it reports that error.
func (s *Server) memoryRefusal(log *slog.Logger, res *pb.Result) error {
	log.Info("program refused: the memory budget is full")
	s.opts.Metrics.refused(refusedMemory)
	st := status.Newf(codes.ResourceExhausted, "the daemon's memory budget (%d bytes) is full: try another",
		s.opts.MemoryBudget.Bytes())
	if d, err := st.WithDetails(res); err == nil {
		st = d
	}
	return st.Err()
}

// first is a stream's first message, which p's reader hands over, within
// StartTimeout; or why there is none (the stream ended before it, or the
// wait did).
func (s *Server) first(p *peer) (*pb.ClientMessage, error) {
	wait := s.opts.StartTimeout
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r := <-p.first:
		return r.m, r.err
	case <-t.C:
		// Returning ends the stream, and with it the reader's Recv.
		return nil, status.Errorf(codes.DeadlineExceeded, "no program start within %v", wait)
	}
}

// serveRetained serves a retained sandbox's handles over the program's
// stream until the client releases it, leaves, or the sandbox closes; at
// most maxInvokes handle calls in flight, and no reply waits past the
// peer's grace.
func serveRetained(ctx context.Context, p *peer, r *codemode.Retained, maxInvokes int) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	inFlight := make(chan struct{}, maxInvokes)
	reply := func(m *pb.ServerMessage) {
		if err := p.reply(ctx, m); err != nil && ctx.Err() == nil {
			cancel(err)
		}
	}
	for {
		select {
		case m := <-p.control:
			switch {
			case m.GetInvoke() != nil:
				inv := m.GetInvoke()
				select {
				case inFlight <- struct{}{}:
				default:
					reply(&pb.ServerMessage{Msg: &pb.ServerMessage_InvokeResult{InvokeResult: &pb.InvokeResult{Id: inv.Id,
						Error: fmt.Appendf(nil, "remote: RESOURCE_EXHAUSTED: %d handle calls are in flight on this sandbox: wait for their answers", maxInvokes)}}})
					continue
				}
				wg.Add(1)
				go func() { // calls run one at a time in the sandbox; answers in order of finishing
					defer wg.Done()
					defer func() { <-inFlight }()
					reply(&pb.ServerMessage{Msg: &pb.ServerMessage_InvokeResult{InvokeResult: invoke(ctx, r, inv)}})
				}()
			case m.GetLogs() != nil:
				reply(&pb.ServerMessage{Msg: &pb.ServerMessage_Logs{Logs: &pb.LogsReply{Id: m.GetLogs().Id, Logs: wireTexts(r.Logs())}}})
			case m.GetRelease() != nil:
				r.Close()
				wg.Wait()
				return p.reply(ctx, &pb.ServerMessage{Msg: &pb.ServerMessage_Closed{Closed: &pb.Closed{}}})
			}
		case <-r.Done():
			wg.Wait()
			closed := &pb.Closed{}
			if err := r.Err(); err != nil {
				closed.Error = []byte(err.Error())
				if ee, ok := errors.AsType[*codemode.ExecError](err); ok {
					closed.Err = toPBError(ee, err)
				}
			}
			return p.reply(ctx, &pb.ServerMessage{Msg: &pb.ServerMessage_Closed{Closed: closed}})
		case <-p.gone:
			return nil
		case <-ctx.Done():
			if err := context.Cause(ctx); status.Code(err) == codes.DeadlineExceeded {
				return err // a reply the client did not take
			}
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// invoke runs one handle call.
func invoke(ctx context.Context, r *codemode.Retained, inv *pb.Invoke) *pb.InvokeResult {
	out := &pb.InvokeResult{Id: inv.Id}
	var h codemode.Handle
	if err := json.Unmarshal(inv.HandleJson, &h); err != nil {
		out.Error = []byte("not a handle: " + err.Error())
		return out
	}
	parsed, err := codemode.ParseForDispatch(string(inv.ArgsJson))
	args, ok := parsed.([]any)
	if err != nil || !ok {
		out.Error = []byte("the arguments are not a JSON array")
		return out
	}
	v, err := r.Call(ctx, h, args...)
	if err != nil {
		out.Error = []byte(err.Error())
		if ee, ok := errors.AsType[*codemode.ExecError](err); ok {
			out.ErrorJson, out.Err = []byte(ee.LLMJSON()), toPBError(ee, err)
		}
		out.Closed = errors.Is(err, codemode.ErrRetainedClosed)
		return out
	}
	b, err := codemode.StringifyForDispatch(v)
	if err != nil {
		out.Error = []byte("the result does not encode: " + err.Error())
		return out
	}
	out.ValueJson = []byte(b)
	return out
}

// rawJSON is a copy of b as JSON, nil when empty.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(json.RawMessage(b))
}

func orOK(kind string) string {
	if kind == "" {
		return "ok"
	}
	return kind
}

func stats(s codemode.RunStats) *pb.Stats {
	return &pb.Stats{ElapsedUs: s.Elapsed.Microseconds(), HostCalls: int64(s.HostCalls), PeakMemory: s.PeakMemory}
}

// propagator is the daemon's trace propagator.
func (s *Server) propagator() propagation.TextMapPropagator {
	if s.opts.Propagator != nil {
		return s.opts.Propagator
	}
	return otel.GetTextMapPropagator()
}

// governance is the daemon's side of a client's policy: the client's
// policies, this daemon's key.
func (s *Server) governance(g *pb.Governance) (codemode.Governance, string) {
	gov := codemode.Governance{Tools: map[string]codemode.ToolPolicy{}, Key: s.key, TTL: time.Duration(g.GetTtlMs()) * time.Millisecond}
	policies := make(map[string]*pb.ToolPolicy, len(g.GetTools()))
	for _, t := range g.GetTools() {
		policies[string(t.GetName())] = t.GetPolicy() // a name given twice: its last, as a map's entry
	}
	names := slices.Sorted(maps.Keys(policies))
	var sig strings.Builder
	fmt.Fprintf(&sig, "ttl %d;", g.GetTtlMs())
	for _, name := range names {
		t := policies[name]
		gov.Tools[name] = codemode.ToolPolicy{Timeout: time.Duration(t.GetTimeoutNs()),
			MaxInFlight: int(min(t.GetMaxInFlight(), math.MaxInt32)), Budget: int(min(t.GetBudget(), math.MaxInt32)),
			RequiresApproval: t.GetRequiresApproval(), Effect: codemode.Effect(t.GetEffect())}
		fmt.Fprintf(&sig, "%q %d %d %d %t %q;", name, t.GetTimeoutNs(), t.GetMaxInFlight(), t.GetBudget(), t.GetRequiresApproval(),
			t.GetEffect())
	}
	return gov, sig.String()
}

// resume resumes a paused program from the body its client sent, sealed
// here with the daemon's key.
func (s *Server) resume(ctx context.Context, e *codemode.Executor, start *pb.Start, dispatch codemode.DispatchFunc) codemode.ExecuteResult {
	gov, _ := s.governance(start.Governance)
	cont, err := codemode.SealContinuation(gov, start.Resume.Body)
	if err != nil {
		// As Executor.Resume refuses a continuation.
		return codemode.ExecuteResult{Logs: []string{}, Error: err.Error(), Err: codemode.InternalError(codemode.ExecuteName, err)}
	}
	d := codemode.Reject(string(start.Resume.Reason))
	if start.Resume.Approve {
		d = codemode.Approve()
		if len(start.Resume.ArgsJson) > 0 {
			d = codemode.ApproveWith(json.RawMessage(start.Resume.ArgsJson))
		}
	}
	return e.Resume(ctx, cont, d, dispatch)
}

// paused is a paused program's message: its continuation's body, which
// the client seals with the host's key.
func (s *Server) paused(p *codemode.Paused) (*pb.Paused, error) {
	body, err := codemode.OpenContinuation(s.key, p.Continuation)
	if err != nil {
		return nil, fmt.Errorf("the paused program's continuation: %w", err)
	}
	return &pb.Paused{Body: body, Tool: []byte(p.Tool), ArgsJson: p.Args, Completed: int64(p.Completed),
		ExpiresUnix: p.Expires.Unix(), Id: p.ID}, nil
}

// executor returns the executor of a set of limits, of (Run) the
// capabilities a client serves, each forwarding to the program's peer,
// and of the client's governance.
func (s *Server) executor(limits codemode.Limits, caps []*pb.Capability, g *pb.Governance, queue time.Duration) (*codemode.Executor, error) {
	var sig strings.Builder
	for _, c := range caps {
		fmt.Fprintf(&sig, "%q %q %q %t;", c.Name, c.Description, c.ParamsJson, c.Async)
	}
	key := execKey{limits: limits, caps: sig.String(), queue: queue}
	var gov codemode.Governance
	if g != nil {
		gov, key.gov = s.governance(g)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.execs[key]; e != nil {
		return e, nil
	}
	// Refused at once when the budget has no room: the client tries
	// another daemon (options in Executor may say otherwise).
	ttl := s.opts.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	opts := append([]codemode.Option{codemode.WithLimits(limits), codemode.WithMemoryBudget(s.opts.MemoryBudget),
		codemode.WithMemoryWait(0), codemode.WithSessionTTL(ttl)}, s.opts.Executor...)
	if g != nil {
		opts = append(opts, codemode.WithGovernance(gov))
	}
	if queue > 0 {
		opts = append(opts, codemode.WithQueueTimeout(queue))
	}
	for _, c := range caps {
		name := string(c.Name)
		opts = append(opts, codemode.WithCapability(codemode.Capability{Name: name, Description: string(c.Description),
			Params: slices.Clone(json.RawMessage(c.ParamsJson)), Async: c.Async, Unchecked: len(c.ParamsJson) == 0,
			Func: func(ctx context.Context, args json.RawMessage) (any, error) {
				p := peerOf(ctx)
				if p == nil {
					return nil, errors.New("no program stream")
				}
				return p.capability(ctx, name, slices.Clone(args))
			}}))
	}
	e, err := codemode.New(opts...)
	if err != nil {
		return nil, err
	}
	if len(s.execs) >= maxExecutors {
		for k, old := range s.execs { // a new set: drop one, closed once its runs are past their deadline
			delete(s.execs, k)
			time.AfterFunc(k.limits.Deadline+time.Second, func() { old.Close() })
			break
		}
	}
	s.execs[key] = e
	return e, nil
}

// maxExecutors bounds the executors a daemon keeps (one per distinct
// limits and capability set).
const maxExecutors = 64

// effectsWire is codemode.Effects without its model-facing MarshalJSON:
// every field crosses the wire.
type effectsWire codemode.Effects

// effectsJSON is a ledger on the wire (Result.effects_json), or nil.
func effectsJSON(e *codemode.Effects) []byte {
	if e == nil {
		return nil
	}
	b, err := json.Marshal((*effectsWire)(e))
	if err != nil {
		return nil
	}
	return b
}

// fromEffectsJSON is the ledger a Result carries, or nil.
func fromEffectsJSON(b []byte) *codemode.Effects {
	if len(b) == 0 {
		return nil
	}
	var w effectsWire
	if json.Unmarshal(b, &w) != nil {
		return nil
	}
	return (*codemode.Effects)(&w)
}
