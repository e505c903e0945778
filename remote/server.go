// Package remote is the daemon arrangement of providers-and-dispatch.txt
// over gRPC: a program runs on the daemon ([NewServer], `codemode serve`),
// and every tool call it makes travels back over the program's own
// bidirectional stream to the client ([Dial]), which runs the dispatch and
// the capabilities in its own process: the tools still run where the
// credentials are, and the daemon holds none of them.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-go/codemode"
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
	// Metrics, when set, counts what the daemon does (see NewMetrics).
	Metrics *Metrics
	// StartTimeout bounds the wait for a stream's first message, its
	// Start (default 10 s): a client that opens streams and sends nothing
	// cannot hold the daemon's program slots.
	StartTimeout time.Duration
}

// Server serves programs (the Executor service of remote.proto).
type Server struct {
	pb.UnimplementedExecutorServer
	opts ServerOptions
	max  codemode.Limits
	log  *slog.Logger

	admit chan struct{}
	mu    sync.Mutex
	execs map[execKey]*codemode.Executor
	seq   uint64
}

type execKey struct {
	limits codemode.Limits
	caps   string // the capability set's signature (Run)
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
	if opts.Max.Deadline > 0 {
		max.Deadline = opts.Max.Deadline
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := opts.MaxPrograms
	if n <= 0 {
		n = codemode.DefaultSlots
	}
	return &Server{opts: opts, max: max, log: log, admit: make(chan struct{}, n), execs: map[execKey]*codemode.Executor{}}
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
// the daemon's maxima (zero fields: the maxima).
func (s *Server) grant(l *pb.Limits) codemode.Limits {
	g := s.max
	if l == nil {
		return g
	}
	for _, f := range []struct {
		dst *int
		v   int64
	}{{&g.Memory, l.Memory}, {&g.Stack, l.Stack}, {&g.Payload, l.Payload}, {&g.Logs, l.Logs}} {
		if f.v > 0 && f.v < int64(*f.dst) {
			*f.dst = int(f.v)
		}
	}
	if d := time.Duration(l.DeadlineMs) * time.Millisecond; d > 0 && d < g.Deadline {
		g.Deadline = d
	}
	return g
}

// Program serves one program's stream.
func (s *Server) Program(stream pb.Executor_ProgramServer) error {
	ctx := stream.Context()
	select {
	case s.admit <- struct{}{}:
		defer func() { <-s.admit }()
	default:
		s.opts.Metrics.refused()
		return status.Error(codes.ResourceExhausted, "the daemon is full: try another")
	}
	s.opts.Metrics.started()
	defer s.opts.Metrics.finished()
	first, err := s.first(stream)
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
	s.mu.Lock()
	s.seq++
	reqID := fmt.Sprintf("p%d", s.seq)
	s.mu.Unlock()
	log := s.log.With("request", reqID, "mode", start.Mode.String())
	limits := s.grant(start.Limits)
	p := newPeer(stream)
	p.metrics = s.opts.Metrics
	p.metrics.moved("in", proto.Size(first))
	go p.receive()
	defer p.stop()

	res := &pb.Result{Limits: &pb.Limits{Memory: int64(limits.Memory), Stack: int64(limits.Stack), Payload: int64(limits.Payload),
		Logs: int64(limits.Logs), DeadlineMs: limits.Deadline.Milliseconds()}}
	began := time.Now()
	switch start.Mode {
	case pb.Start_MODE_RUN:
		e, err := s.executor(limits, start.Capabilities)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		r, rerr := e.Run(withPeer(ctx, p), start.Code)
		if r != nil {
			p.flush(int64(r.Stats.HostCalls))
			res.ResultJson, res.Logs, res.Stats = string(r.Value), r.Logs, stats(r.Stats)
		}
		if rerr != nil {
			var ee *codemode.ExecError
			if errors.As(rerr, &ee) {
				res.Error, res.ErrorJson, res.Kind = ee.Error(), ee.LLMJSON(), string(ee.Kind)
			} else {
				res.Error, res.Kind = rerr.Error(), string(codemode.KindInternal)
			}
			res.ResultJson = ""
		}
	default:
		e, err := s.executor(limits, nil)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		req := codemode.Request{Code: start.Code, Dispatch: p.dispatch, RetainHandles: start.RetainHandles}
		for _, pr := range start.Providers {
			p := codemode.Provider{Name: pr.Name, Tools: pr.Tools, ObjectArgs: pr.ObjectArgs, Prelude: pr.Prelude, ProxySource: pr.ProxySource}
			for _, d := range pr.Apis {
				p.APIs = append(p.APIs, codemode.ProviderTool{Name: d.Name, Description: d.Description,
					Params: rawJSON(d.ParamsJson), Returns: rawJSON(d.ReturnsJson)})
			}
			req.Providers = append(req.Providers, p)
		}
		r := e.Execute(ctx, req)
		p.flush(int64(r.Stats.HostCalls))
		res.ResultJson, res.Logs, res.Error, res.Stats = string(r.Result), r.Logs, r.Error, stats(r.Stats)
		if r.Err != nil {
			res.ErrorJson, res.Kind = r.Err.LLMJSON(), string(r.Err.Kind)
		}
		if r.Retained != nil {
			res.Retained = true
			defer r.Retained.Close()
			if ctx.Err() == nil {
				if err := p.send(&pb.ServerMessage{Msg: &pb.ServerMessage_Result{Result: res}}); err != nil {
					return err
				}
				return serveRetained(ctx, p, r.Retained)
			}
		}
	}
	if ctx.Err() != nil {
		log.Info("program abandoned", "elapsed", time.Since(began), "cause", ctx.Err())
		return status.FromContextError(ctx.Err()).Err()
	}
	log.Info("program", "kind", orOK(res.Kind), "elapsed", time.Since(began), "host_calls", res.Stats.GetHostCalls())
	s.opts.Metrics.ran(orOK(res.Kind), time.Since(began), res.Stats.GetHostCalls())
	if err := p.send(&pb.ServerMessage{Msg: &pb.ServerMessage_Result{Result: res}}); err != nil {
		return err
	}
	return nil
}

// first receives a stream's first message within StartTimeout.
func (s *Server) first(stream pb.Executor_ProgramServer) (*pb.ClientMessage, error) {
	type received struct {
		m   *pb.ClientMessage
		err error
	}
	ch := make(chan received, 1)
	go func() {
		m, err := stream.Recv()
		ch <- received{m, err}
	}()
	wait := s.opts.StartTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-t.C:
		// Returning ends the stream, and with it the pending Recv.
		return nil, status.Errorf(codes.DeadlineExceeded, "no program start within %v", wait)
	}
}

// serveRetained serves a retained sandbox's handles over the program's
// stream until the client releases it, leaves, or the sandbox closes.
func serveRetained(ctx context.Context, p *peer, r *codemode.Retained) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case m := <-p.control:
			switch {
			case m.GetInvoke() != nil:
				inv := m.GetInvoke()
				wg.Add(1)
				go func() { // calls run one at a time in the sandbox; answers in order of finishing
					defer wg.Done()
					p.send(&pb.ServerMessage{Msg: &pb.ServerMessage_InvokeResult{InvokeResult: invoke(ctx, r, inv)}})
				}()
			case m.GetLogs() != nil:
				p.send(&pb.ServerMessage{Msg: &pb.ServerMessage_Logs{Logs: &pb.LogsReply{Id: m.GetLogs().Id, Logs: r.Logs()}}})
			case m.GetRelease() != nil:
				r.Close()
				wg.Wait()
				return p.send(&pb.ServerMessage{Msg: &pb.ServerMessage_Closed{Closed: &pb.Closed{}}})
			}
		case <-r.Done():
			wg.Wait()
			msg := ""
			if err := r.Err(); err != nil {
				msg = err.Error()
			}
			return p.send(&pb.ServerMessage{Msg: &pb.ServerMessage_Closed{Closed: &pb.Closed{Error: msg}}})
		case <-p.gone:
			return nil
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// invoke runs one handle call.
func invoke(ctx context.Context, r *codemode.Retained, inv *pb.Invoke) *pb.InvokeResult {
	out := &pb.InvokeResult{Id: inv.Id}
	var h codemode.Handle
	if err := json.Unmarshal([]byte(inv.HandleJson), &h); err != nil {
		out.Error = "not a handle: " + err.Error()
		return out
	}
	parsed, err := codemode.ParseForDispatch(inv.ArgsJson)
	args, ok := parsed.([]any)
	if err != nil || !ok {
		out.Error = "the arguments are not a JSON array"
		return out
	}
	v, err := r.Call(ctx, h, args...)
	if err != nil {
		out.Error = err.Error()
		var ee *codemode.ExecError
		if errors.As(err, &ee) {
			out.ErrorJson = ee.LLMJSON()
		}
		out.Closed = errors.Is(err, codemode.ErrRetainedClosed)
		return out
	}
	b, err := codemode.StringifyForDispatch(v)
	if err != nil {
		out.Error = "the result does not encode: " + err.Error()
		return out
	}
	out.ValueJson = b
	return out
}

// rawJSON is s as JSON, nil when empty.
func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
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

// executor returns the executor of a set of limits and (Run) of the
// capabilities a client serves, each forwarding to the program's peer.
func (s *Server) executor(limits codemode.Limits, caps []*pb.Capability) (*codemode.Executor, error) {
	var sig strings.Builder
	for _, c := range caps {
		fmt.Fprintf(&sig, "%q %q %q %t;", c.Name, c.Description, c.ParamsJson, c.Async)
	}
	key := execKey{limits, sig.String()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.execs[key]; e != nil {
		return e, nil
	}
	opts := append([]codemode.Option{codemode.WithLimits(limits)}, s.opts.Executor...)
	for _, c := range caps {
		name := c.Name
		opts = append(opts, codemode.WithCapability(codemode.Capability{Name: name, Description: c.Description,
			Params: json.RawMessage(c.ParamsJson), Async: c.Async, Unchecked: c.ParamsJson == "",
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
