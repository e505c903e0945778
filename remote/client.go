package remote

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/gopool"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// Client runs programs on a daemon. It has the local executor's shape
// ([codemode.Runner]): Execute's dispatch and Run's capabilities run in the
// client's process, called back over each program's stream; the daemon
// receives the program, the providers' names and the capabilities'
// descriptions, never their code or credentials. A program that cannot
// call back needs no stream: an Execute request with no providers and no
// Dispatch, or a Run with no capabilities, neither retained nor resumed,
// goes as one unary call (Standalone), or on a stream to a daemon that
// predates it.
type Client struct {
	conn    *grpc.ClientConn
	client  pb.ExecutorClient
	limits  codemode.Limits
	require bool
	caps    []codemode.Capability
	gov     *codemode.Governance // WithGovernance: the key stays here
	pbGov   *pb.Governance       // what the daemon is told of it
	prop    propagation.TextMapPropagator
	queue   time.Duration // WithQueueTimeout

	// noStandalone is when a daemon last answered Standalone with
	// UNIMPLEMENTED (it predates it, or a proxy does not route it), in
	// Unix nanoseconds: for a minute after, every program takes a stream.
	noStandalone atomic.Int64

	mu     sync.Mutex
	closed bool
}

// Option configures [Dial].
type Option func(*dialConfig) error

type dialConfig struct {
	creds   credentials.TransportCredentials
	token   string
	limits  codemode.Limits
	require bool
	// daemonDefaults: the limits' zero fields are the daemon's
	// (WithDaemonDefaults), not the library's.
	daemonDefaults bool
	caps           []codemode.Capability
	grpc           []grpc.DialOption
	gov            *codemode.Governance
	prop           propagation.TextMapPropagator
	queue          time.Duration
}

// WithPropagator sets how trace context travels: in each program's Start
// (the daemon's run is a child of the caller's span) and back in each
// tool call (the client's work for it is a child of the daemon's call
// span). Default: OpenTelemetry's global propagator
// (otel.GetTextMapPropagator, which carries nothing until one is set).
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(d *dialConfig) error { d.prop = p; return nil }
}

// WithGovernance governs the tool calls of this client's programs (see
// codemode.Governance): the daemon is told the per-tool policies and runs
// under them; a call that requires approval pauses the program, whose
// continuation the daemon hands back unsealed, and this client seals with
// g's Key, which never leaves the process. [Client.Resume] resumes it on
// any daemon. An Approver is not supported here (the program pauses
// instead); g needs a Key for approval.
func WithGovernance(g codemode.Governance) Option {
	return func(d *dialConfig) error {
		if g.Approver != nil || g.CanApprove != nil {
			return errors.New("remote: WithGovernance: an Approver cannot decide a daemon's calls; the program pauses, and Resume goes on")
		}
		if err := g.Validate(); err != nil {
			return fmt.Errorf("remote: WithGovernance: %w", err)
		}
		d.gov = &g
		return nil
	}
}

// WithTLS dials with these transport credentials (TLS, mTLS); the default
// is plaintext, for loopback.
func WithTLS(c credentials.TransportCredentials) Option {
	return func(d *dialConfig) error { d.creds = c; return nil }
}

// WithToken sends a bearer token with every program.
func WithToken(token string) Option {
	return func(d *dialConfig) error { d.token = token; return nil }
}

// WithLimits asks for these limits; zero fields are the library's defaults
// ([codemode.DefaultLimits]), as an in-process executor's are, unless
// [WithDaemonDefaults]. The daemon caps each at its maximum, and the
// result's Stats.Limits says what it granted. Without WithLimits a client
// asks for the library's defaults: switching an executor for a client
// changes no limit.
func WithLimits(l codemode.Limits) Option {
	return func(d *dialConfig) error { d.limits, d.require = l, false; return nil }
}

// WithDaemonDefaults leaves the limits a client does not set to the
// daemon (its defaults are its maxima: `codemode serve`'s deadline is
// 30 s), instead of asking for the library's.
func WithDaemonDefaults() Option {
	return func(d *dialConfig) error { d.daemonDefaults = true; return nil }
}

// WithQueueTimeout asks the daemon to count a program's deadline in its
// own time only — not its waits for a sandbox or an execution right
// there, which d bounds apart (codemode.WithQueueTimeout; at most 10
// minutes) — so that its outcome does not depend on what else the daemon
// runs: what a batch harness needs.
func WithQueueTimeout(d time.Duration) Option {
	return func(c *dialConfig) error {
		if d < 0 {
			return fmt.Errorf("remote: negative queue timeout %v", d)
		}
		c.queue = d
		return nil
	}
}

// WithRequiredLimits asks for these limits and will not have less: a
// daemon whose maxima are below any nonzero field refuses the program
// (an internal error whose message names the fields and the maxima)
// rather than run it under less. Its zero fields are the daemon's.
func WithRequiredLimits(l codemode.Limits) Option {
	return func(d *dialConfig) error { d.limits, d.require = l, true; return nil }
}

// WithCapability serves a capability to Run scripts from this process.
func WithCapability(c codemode.Capability) Option {
	return func(d *dialConfig) error {
		if c.Func == nil {
			return fmt.Errorf("remote: capability %q has no Func", c.Name)
		}
		d.caps = append(d.caps, c)
		return nil
	}
}

// WithDialOptions adds gRPC dial options (a balancing policy, say).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(d *dialConfig) error { d.grpc = append(d.grpc, opts...); return nil }
}

// Dial connects to a daemon at target (a gRPC target: "127.0.0.1:7070",
// "dns:///codemode.ns.svc:7070").
func Dial(target string, opts ...Option) (*Client, error) {
	d := &dialConfig{creds: insecure.NewCredentials()}
	for _, o := range opts {
		if err := o(d); err != nil {
			return nil, err
		}
	}
	dopts := append([]grpc.DialOption{grpc.WithTransportCredentials(d.creds)}, d.grpc...)
	if d.token != "" {
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearer{d.token, d.creds.Info().SecurityProtocol != "insecure"}))
	}
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, err
	}
	limits := d.limits
	if !d.daemonDefaults && !d.require {
		limits = limits.WithDefaults()
	}
	c := &Client{conn: conn, client: pb.NewExecutorClient(conn), limits: limits, require: d.require, caps: d.caps, gov: d.gov,
		prop: d.prop, queue: d.queue}
	if g := d.gov; g != nil {
		c.pbGov = &pb.Governance{TtlMs: int64((g.TTL + time.Millisecond - 1) / time.Millisecond)}
		for _, name := range slices.Sorted(maps.Keys(g.Tools)) {
			t := g.Tools[name]
			c.pbGov.Tools = append(c.pbGov.Tools, &pb.ToolPolicyEntry{Name: []byte(name), Policy: &pb.ToolPolicy{TimeoutNs: int64(t.Timeout),
				MaxInFlight: int64(t.MaxInFlight), Budget: int64(t.Budget), RequiresApproval: t.RequiresApproval, Effect: string(t.Effect)}})
		}
	}
	return c, nil
}

// bearer is a token as per-RPC credentials.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Close closes the connection; later calls fail with codemode.ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.conn.Close()
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// recvLimit is the largest message the client takes from the daemon: what
// a program under its limits sends, when it names the payload and logs
// (the daemon grants no more); else as much as gRPC allows, since the
// daemon's maxima decide.
func (c *Client) recvLimit() int {
	if c.limits.Payload > 0 && c.limits.Logs > 0 {
		return MessageLimit(c.limits)
	}
	return math.MaxInt32
}

func (c *Client) pbLimits() *pb.Limits {
	l := c.limits
	return &pb.Limits{Memory: int64(l.Memory), Stack: int64(l.Stack), Payload: int64(l.Payload), Logs: int64(l.Logs),
		DeadlineMs: l.Deadline.Milliseconds()}
}

// Execute runs a provider program on the daemon; its tool calls come back
// to req.Dispatch here. It never panics and returns no Go error. The
// program's outcome is the one the executor on the daemon gave: its
// result, logs and Error byte for byte, and an Err of the same kind and
// fields, with the same Error and LLMJSON, that errors.Is matches against
// the same codemode and context errors. So is the end of ctx: a
// cancellation is kind internal matching context.Canceled, a passed
// deadline kind timeout. A program every daemon tried refused for want
// of memory is the executor's memory_budget error (matching
// codemode.ErrMemoryBudget and codemode.ErrBusy). Any other failure of
// the daemon or the transport (unreachable, refusing the program, failing
// mid-run) is Err of kind internal, its status visible to status.Code.
func (c *Client) Execute(ctx context.Context, req codemode.Request) codemode.ExecuteResult {
	if ctx == nil {
		return failed(codemode.ExecuteName, codemode.ErrNilContext)
	}
	return c.execute(ctx, c.executeStart(req), req.Dispatch, nil)
}

// executeStart is the start of an Execute request.
func (c *Client) executeStart(req codemode.Request) *pb.Start {
	start := &pb.Start{Mode: pb.Start_MODE_EXECUTE, Code: []byte(req.Code), Limits: c.pbLimits(), RequireLimits: c.require,
		Governance: c.pbGov}
	for _, p := range req.Providers {
		pp := &pb.Provider{Name: []byte(p.Name), Tools: wireTexts(p.Tools), ObjectArgs: p.ObjectArgs, Prelude: []byte(p.Prelude),
			ProxySource: []byte(p.ProxySource)}
		for _, api := range p.APIs {
			pp.Apis = append(pp.Apis, &pb.ToolDoc{Name: []byte(api.Name), Description: []byte(api.Description), ParamsJson: api.Params,
				ReturnsJson: api.Returns})
		}
		start.Providers = append(start.Providers, pp)
	}
	start.RetainHandles = req.RetainHandles
	return start
}

// execute runs an Execute program's start (or a resumption's).
func (c *Client) execute(ctx context.Context, start *pb.Start, dispatch codemode.DispatchFunc, sess *Session) codemode.ExecuteResult {
	budget := c.budget(ctx)
	var kept *remoteRetained
	// With no dispatch, a call (through __dispatch) would be answered "not
	// found" here; the daemon answers it the same way on Standalone.
	alone := dispatch == nil && standalone(start)
	res, err := c.program(ctx, start, alone, &kept, func(ctx context.Context, call *pb.Call) *pb.Answer {
		a := &pb.Answer{Id: call.Id}
		if dispatch == nil {
			a.Outcome = &pb.Answer_Failure{Failure: []byte(codemode.ToolNotFoundError{Tool: string(call.Tool)}.Error())}
			return a
		}
		env, err := safeDispatch(ctx, dispatch, call)
		if err != nil {
			a.Outcome = &pb.Answer_Failure{Failure: []byte(err.Error())}
		} else {
			a.Outcome = &pb.Answer_Envelope{Envelope: []byte(env)}
		}
		return a
	}, sess)
	refused := err
	if err != nil {
		if res = refusal(err); res == nil {
			return lost(ctx, codemode.ExecuteName, budget, err)
		}
	}
	out := codemode.ExecuteResult{Logs: texts(res.Logs), Error: string(res.Error), Stats: fromStats(res.Stats, res.Limits),
		Effects: fromEffectsJSON(res.EffectsJson)}
	if out.Logs == nil {
		out.Logs = []string{}
	}
	if len(res.ResultJson) > 0 {
		out.Result = json.RawMessage(res.ResultJson)
	}
	out.Err = resultError(res, refused)
	if kept != nil {
		out.Retained = codemode.NewRetained(kept)
	}
	if res.Paused != nil {
		p, err := c.seal(res.Paused)
		if err != nil {
			return failed(codemode.ExecuteName, err)
		}
		out.Paused, out.Result = p, nil
	}
	return out
}

// propagator is the client's trace propagator.
func (c *Client) propagator() propagation.TextMapPropagator {
	if c.prop != nil {
		return c.prop
	}
	return otel.GetTextMapPropagator()
}

// inject is ctx's trace context for a Start.
func (c *Client) inject(ctx context.Context) map[string]string {
	carrier := propagation.MapCarrier{}
	c.propagator().Inject(ctx, carrier)
	return headerSafe(carrier)
}

// extract puts a call's trace context into ctx.
func (c *Client) extract(ctx context.Context, trace map[string]string) context.Context {
	if len(trace) == 0 {
		return ctx
	}
	return c.propagator().Extract(ctx, propagation.MapCarrier(trace))
}

// seal makes the host's continuation of a program the daemon paused.
func (c *Client) seal(p *pb.Paused) (*codemode.Paused, error) {
	if c.gov == nil || len(c.gov.Key) == 0 {
		return nil, errors.New("the daemon paused a program this client did not govern")
	}
	cont, err := codemode.SealContinuation(*c.gov, p.Body)
	if err != nil {
		return nil, err
	}
	// What the person is shown is what the continuation holds, not what
	// the daemon says beside it.
	info, err := codemode.InspectContinuation(c.gov.Key, cont)
	if err != nil {
		return nil, err
	}
	return &codemode.Paused{Continuation: cont, ID: info.ID, Tool: info.Tool, Args: info.Args,
		Completed: info.Completed, Expires: info.Expires}, nil
}

// Resume resumes a program this client's governance paused (made by any
// daemon) on the daemon this client reaches, with the decision for its
// call (see codemode.Executor.Resume): the continuation is authenticated
// here with the host's key, and only its body travels. dispatch serves an
// Execute program's tools; a Run program's are the client's capabilities.
// A refused continuation is Err (codemode.ErrContinuation) and nothing
// runs. The outcome is Executor.Resume's, as Execute's is Executor.Execute's.
func (c *Client) Resume(ctx context.Context, continuation []byte, d codemode.Decision, dispatch codemode.DispatchFunc) codemode.ExecuteResult {
	refused := func(err error) codemode.ExecuteResult {
		// As Executor.Resume refuses a continuation.
		return codemode.ExecuteResult{Logs: []string{}, Error: err.Error(), Err: codemode.InternalError(codemode.ExecuteName, err)}
	}
	if ctx == nil {
		return failed(codemode.ExecuteName, codemode.ErrNilContext)
	}
	if c.gov == nil || len(c.gov.Key) == 0 {
		return refused(errors.New("remote: Resume: this client has no governance key (WithGovernance)"))
	}
	info, err := codemode.InspectContinuation(c.gov.Key, continuation)
	if err != nil {
		return refused(err)
	}
	if err := d.Check(codemode.ToolCall{Tool: info.Tool, Args: info.Args}); err != nil {
		// As Executor.Resume refuses it: before Redeem, which must not
		// spend a continuation on a decision that cannot run.
		ee := codemode.InternalError("", err) // the one way to give it err as its cause
		ee.Kind, ee.Name, ee.Message = codemode.KindInvalidArgs, codemode.ExecuteName, ""
		ee.Reason = strings.TrimPrefix(err.Error(), codemode.ErrInvalidDecision.Error()+": ")
		return codemode.ExecuteResult{Logs: []string{}, Error: strings.TrimPrefix(ee.Error(), "codemode: "), Err: ee}
	}
	if c.gov.Redeem != nil {
		if err := c.gov.Redeem(info.ID, info.Expires); err != nil {
			return refused(fmt.Errorf("%w: Redeem refused it: %v", codemode.ErrContinuation, err))
		}
	}
	body, err := codemode.OpenContinuation(c.gov.Key, continuation)
	if err != nil {
		return refused(err)
	}
	l := info.Limits
	r := &pb.Resume{Body: body, Approve: d.Approve, Reason: []byte(d.Reason)}
	if d.Approve && d.Args != nil {
		r.ArgsJson = d.Args
	}
	start := &pb.Start{Mode: pb.Start_MODE_EXECUTE, Limits: &pb.Limits{Memory: int64(l.Memory), Stack: int64(l.Stack),
		Payload: int64(l.Payload), Logs: int64(l.Logs), DeadlineMs: c.limits.Deadline.Milliseconds()},
		RequireLimits: true, Governance: c.pbGov, Resume: r}
	if info.Execute {
		return c.execute(ctx, start, dispatch, nil)
	}
	start.Mode, start.Capabilities = pb.Start_MODE_RUN, c.pbCapabilities()
	res, text, err := c.run(ctx, start, nil)
	out := codemode.ExecuteResult{Logs: []string{}}
	if res != nil {
		out.Result, out.Stats, out.Paused, out.Effects = res.Value, res.Stats, res.Paused, res.Effects
		if res.Logs != nil {
			out.Logs = res.Logs
		}
	}
	if err != nil {
		ee, ok := err.(*codemode.ExecError)
		if !ok {
			ee = codemode.InternalError(codemode.RunJSToolName, err)
		}
		out.Result, out.Err, out.Error = nil, ee, cmp.Or(text, ee.Error())
	}
	return out
}

func safeDispatch(ctx context.Context, d codemode.DispatchFunc, call *pb.Call) (env string, err error) {
	defer func() {
		if r := recover(); r != nil {
			env, err = "", fmt.Errorf("panic: %v", r)
		}
	}()
	return d(ctx, string(call.Provider), string(call.Tool), string(call.ArgsJson))
}

// Run runs a run_js script on the daemon with the client's capabilities
// (WithCapability); their calls come back here. Its outcome is the one
// the executor on the daemon gave, as Execute's is (see there).
func (c *Client) Run(ctx context.Context, script string) (*codemode.Result, error) {
	if ctx == nil {
		return nil, failed(codemode.RunJSToolName, codemode.ErrNilContext).Err
	}
	r, _, err := c.run(ctx, c.runStart(script), nil)
	return r, err
}

// runStart is the start of a Run script.
func (c *Client) runStart(script string) *pb.Start {
	return &pb.Start{Mode: pb.Start_MODE_RUN, Code: []byte(script), Limits: c.pbLimits(), RequireLimits: c.require,
		Capabilities: c.pbCapabilities(), Governance: c.pbGov}
}

// pbCapabilities are the client's capabilities as the daemon is told them.
func (c *Client) pbCapabilities() []*pb.Capability {
	var caps []*pb.Capability
	for _, cp := range c.caps {
		caps = append(caps, &pb.Capability{Name: []byte(cp.Name), Description: []byte(cp.Description),
			ParamsJson: cp.Params, Async: cp.Async})
	}
	return caps
}

// run runs a Run script's start (or a resumption's); text is the
// daemon's ExecuteResult.Error of a resumption that failed.
func (c *Client) run(ctx context.Context, start *pb.Start, sess *Session) (r *codemode.Result, text string, err error) {
	budget := c.budget(ctx)
	res, err := c.program(ctx, start, standalone(start), nil, func(ctx context.Context, call *pb.Call) *pb.Answer {
		a := &pb.Answer{Id: call.Id}
		i := slices.IndexFunc(c.caps, func(cp codemode.Capability) bool { return cp.Name == string(call.Tool) })
		if !call.Capability || i < 0 {
			a.Outcome = &pb.Answer_Failure{Failure: fmt.Appendf(nil, "no capability %q", call.Tool)}
			return a
		}
		v, err := safeCapability(ctx, c.caps[i], json.RawMessage(call.ArgsJson))
		if err != nil {
			a.Outcome = &pb.Answer_Failure{Failure: []byte(err.Error())}
			return a
		}
		b, err := codemode.StringifyForDispatch(v)
		if raw, ok := v.(json.RawMessage); ok {
			b, err = string(raw), nil
		}
		if err != nil {
			a.Outcome = &pb.Answer_Failure{Failure: []byte("cannot encode the result as JSON: " + err.Error())}
			return a
		}
		a.Outcome = &pb.Answer_ResultJson{ResultJson: []byte(b)}
		return a
	}, sess)
	refused := err
	if err != nil {
		if res = refusal(err); res == nil {
			return nil, "", lost(ctx, codemode.RunJSToolName, budget, err).Err
		}
	}
	r = &codemode.Result{Logs: texts(res.Logs), Stats: fromStats(res.Stats, res.Limits), // nil for none, as the executor's
		Effects: fromEffectsJSON(res.EffectsJson)}
	if res.Paused != nil {
		if r.Paused, err = c.seal(res.Paused); err != nil {
			return r, "", failed(codemode.RunJSToolName, err).Err
		}
		return r, "", nil
	}
	if ee := resultError(res, refused); ee != nil {
		return r, string(res.Error), ee
	}
	if len(res.Error) > 0 { // a daemon's Go error with no ExecError (none does)
		ee := &codemode.ExecError{Kind: codemode.KindInternal, Name: codemode.RunJSToolName, Message: string(res.Error)}
		return r, string(res.Error), ee
	}
	r.Value = json.RawMessage(res.ResultJson)
	return r, "", nil
}

// resultError is the Err of a program's result, nil if it succeeded: as
// the daemon's executor made it (err), or, from a daemon that predates
// err, read from error_json. also, when set, is seen by errors.Is through
// it too (the status of the refusal that carried the result).
func resultError(res *pb.Result, also error) *codemode.ExecError {
	if res.Err != nil {
		return fromPBError(res.Err, also)
	}
	if len(res.ErrorJson) > 0 {
		ee := &codemode.ExecError{}
		if json.Unmarshal(res.ErrorJson, ee) == nil && ee.Kind != "" {
			return ee
		}
	}
	return nil
}

func safeCapability(ctx context.Context, c codemode.Capability, args json.RawMessage) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Func(ctx, args)
}

// retries bounds how often a program the daemon never started is sent
// again (to the next daemon, with round-robin balancing).
const retries = 3

// program runs one program, sending it again only if no daemon started it:
// refused (RESOURCE_EXHAUSTED) or unreachable (UNAVAILABLE) before its
// first tool call. A program that made a tool call is never sent again,
// so no side effect runs twice.
//
// A session's program (sess set) that reaches a daemon without its session
// is sent again with the session's journal, which the daemon replays
// first (nothing ran the first time); the run the session kept goes into
// the client's journal.
func (c *Client) program(ctx context.Context, start *pb.Start, alone bool, kept **remoteRetained, answer func(context.Context, *pb.Call) *pb.Answer,
	sess *Session) (*pb.Result, error) {
	if d, ok := codemode.DeterminismFrom(ctx); ok {
		start.Determinism = &pb.Determinism{Seed: d.Seed, ClockSet: !d.Clock.IsZero()}
		if !d.Clock.IsZero() {
			start.Determinism.ClockUnixNs = d.Clock.UnixNano()
		}
	}
	if c.queue > 0 {
		start.QueueTimeoutMs = max(c.queue.Milliseconds(), 1)
	}
	for attempt := 0; ; attempt++ {
		res, called, err := c.attempt(ctx, start, alone, kept, answer)
		if err == nil && res.SessionUnknown && sess != nil {
			if start.Session.Journal != nil {
				return nil, status.Error(codes.Internal, "the daemon did not take the session's journal")
			}
			start.Session.Journal = sess.journalBytes()
			attempt--
			continue
		}
		if err == nil && sess != nil {
			sess.kept(res)
		}
		code := status.Code(err)
		if err == nil || called || attempt >= retries || ctx.Err() != nil ||
			(code != codes.ResourceExhausted && code != codes.Unavailable) {
			return res, err
		}
		select {
		case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// attempt runs one program: alone (it cannot call back), as one
// Standalone call; otherwise on a stream, where it sends the start,
// answers each call (on a goroutine of its own: calls overlap), and
// returns the result. called says whether the daemon made a tool call.
func (c *Client) attempt(ctx context.Context, start *pb.Start, alone bool, kept **remoteRetained, answer func(context.Context, *pb.Call) *pb.Answer) (res *pb.Result, called bool, err error) {
	if c.isClosed() {
		return nil, false, codemode.ErrClosed
	}
	if since := c.noStandalone.Load(); alone && (since == 0 || time.Since(time.Unix(0, since)) > standaloneRetry) {
		start.Trace = c.inject(ctx)
		res, err := c.client.Standalone(ctx, start, grpc.MaxCallRecvMsgSize(c.recvLimit()))
		if status.Code(err) != codes.Unimplemented {
			return res, false, err
		}
		c.noStandalone.Store(time.Now().UnixNano()) // nothing ran: the stream runs it
	}
	// A retained sandbox's stream outlives this call (and ctx): until the
	// result, ctx's end still ends it.
	var sctx context.Context
	var cancel context.CancelFunc
	stopWatch := func() bool { return true }
	if start.RetainHandles {
		sctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		stopWatch = context.AfterFunc(ctx, cancel)
	} else {
		sctx, cancel = context.WithCancel(ctx)
	}
	keep := false
	defer func() {
		if !keep {
			stopWatch()
			cancel()
		}
	}()
	stream, err := c.client.Program(sctx, grpc.MaxCallRecvMsgSize(c.recvLimit()))
	if err != nil {
		return nil, false, err
	}
	var smu sync.Mutex
	sendClosed := false
	send := func(m *pb.ClientMessage) error {
		smu.Lock()
		defer smu.Unlock()
		if sendClosed {
			return nil // the program has its result: a late answer goes nowhere
		}
		return stream.Send(m)
	}
	start.Trace = c.inject(ctx)
	if err := send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: start}}); err != nil {
		return nil, false, recvErr(stream)
	}
	// Answers run on goroutines of their own and are not waited for: as in
	// process, a call the program did not await may still be running when
	// the result is returned (its context ends then, and its answer goes
	// nowhere).
	var calls callLog
	for {
		m, err := stream.Recv()
		if err != nil {
			cancel()
			if called {
				err = calls.lost(err)
			}
			return nil, called, err
		}
		switch msg := m.Msg.(type) {
		case *pb.ServerMessage_Call:
			called = true
			cctx := codemode.CallContext(c.extract(sctx, msg.Call.Trace)) // the call left the sandbox before the result
			call := msg.Call
			i := calls.made(call)
			gopool.Go(func() {
				a := answer(cctx, call)
				calls.answered(i, a)
				send(&pb.ClientMessage{Msg: &pb.ClientMessage_Answer{Answer: a}})
			})
		case *pb.ServerMessage_Result:
			if msg.Result.Retained && kept != nil && stopWatch() {
				keep = true
				*kept = newRemoteRetained(stream, send, cancel)
				return msg.Result, called, nil
			}
			smu.Lock()
			sendClosed = true
			stream.CloseSend()
			smu.Unlock()
			cancel() // answers still running are for a finished program
			return msg.Result, called, nil
		}
	}
}

// callLog is what a program's tool calls did on the client, for the
// error of a program lost mid-run: which were made and which completed.
type callLog struct {
	mu    sync.Mutex
	names []string
	state []byte // 0 running, 1 completed, 2 failed
}

func (l *callLog) made(c *pb.Call) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := string(c.Tool)
	if len(c.Provider) > 0 {
		name = string(c.Provider) + "." + name
	}
	l.names = append(l.names, name)
	l.state = append(l.state, 0)
	return len(l.names) - 1
}

func (l *callLog) answered(i int, a *pb.Answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state[i] = 1
	if _, failed := a.Outcome.(*pb.Answer_Failure); failed {
		l.state[i] = 2
	}
}

// lost is err, the end of a program's stream after it made tool calls,
// saying which: the program is not sent again (a call would run twice).
func (l *callLog) lost(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for i, name := range l.names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteString([]string{" (running)", " (completed)", " (failed)"}[l.state[i]])
	}
	return &midRunError{err: err, calls: b.String(), n: len(l.names)}
}

// midRunError is a program lost after it made tool calls.
type midRunError struct {
	err   error
	calls string
	n     int
}

func (e *midRunError) Error() string {
	return fmt.Sprintf("%v; the program was lost after it made %d tool call(s): %s; it was not sent again, so none runs twice",
		e.err, e.n, e.calls)
}

func (e *midRunError) Unwrap() error { return e.err }

// standaloneRetry is how long after an UNIMPLEMENTED Standalone the
// client sends every program on a stream.
const standaloneRetry = time.Minute

// standalone says a start is one the daemon's Standalone takes: no
// providers or capabilities to call, no handles to keep, no resumption.
func standalone(start *pb.Start) bool {
	return len(start.Providers) == 0 && len(start.Capabilities) == 0 && !start.RetainHandles && start.Resume == nil &&
		start.Session == nil
}

func recvErr(stream pb.Executor_ProgramClient) error {
	_, err := stream.Recv()
	if err == nil {
		err = errors.New("the daemon did not take the program")
	}
	return err
}

// failed is the result of a program the daemon did not run to its end:
// kind internal, its cause err; for a status of the daemon's or the
// transport's (RESOURCE_EXHAUSTED for a program every daemon tried
// refused for want of room), the message is "remote: <code>: <message>",
// otherwise the executor's for such a failure ("codemode: execute:
// codemode: executor closed" for a closed client).
func failed(name string, err error) codemode.ExecuteResult {
	ee := codemode.InternalError(name, err) // status.Code and errors.Is see the daemon's status through it
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		ee.Name, ee.Message = name, fmt.Sprintf("remote: %s: %s", s.Code(), s.Message())
	}
	return codemode.ExecuteResult{Logs: []string{}, Error: ee.Message, Err: ee}
}

// lost is the result of a program whose stream or call failed with err
// before its result came: if ctx had ended, what the executor reports for
// a run whose caller cancelled (kind internal, matching
// context.Canceled) or whose caller's deadline passed (kind timeout after
// budget, matching context.DeadlineExceeded), also when the stream ended
// with the deadline a moment before ctx saw it pass; else failed's.
func lost(ctx context.Context, name string, budget time.Duration, err error) codemode.ExecuteResult {
	if d, ok := ctx.Deadline(); ok && ctx.Err() == nil && status.Code(err) == codes.DeadlineExceeded {
		// The caller's deadline travelled with the stream and the daemon
		// (or grpc's own timer) saw it pass before this context's timer
		// fired: the context ends within moments, so wait for it (bounded)
		// and report what ended the program as the executor would.
		t := time.NewTimer(time.Until(d) + time.Second)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	switch ctx.Err() {
	case nil:
		return failed(name, err)
	case context.DeadlineExceeded:
		ms := int64((max(budget, 0) + time.Millisecond - 1) / time.Millisecond)
		ee := &codemode.ExecError{Kind: codemode.KindTimeout, Name: name, DeadlineMS: ms}
		// Executor.Execute's text for a timeout (docs/PROTOCOL.md, "The end of a run").
		return codemode.ExecuteResult{Logs: []string{}, Error: fmt.Sprintf("The program timed out after %dms.", ms), Err: ee}
	default:
		ee := codemode.InternalError(name, context.Canceled)
		return codemode.ExecuteResult{Logs: []string{}, Error: ee.Message, Err: ee}
	}
}

// budget is the time a program starting now has: the caller's deadline,
// or, when sooner, the deadline the client asks for (as the executor
// counts a run's budget; a daemon that grants less ends the program with
// its own timeout first).
func (c *Client) budget(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return c.limits.Deadline
	}
	b := time.Until(d)
	if c.limits.Deadline > 0 {
		b = min(b, c.limits.Deadline)
	}
	return b
}

func fromStats(s *pb.Stats, l *pb.Limits) codemode.RunStats {
	var st codemode.RunStats
	if s != nil {
		st = codemode.RunStats{Elapsed: time.Duration(s.ElapsedUs) * time.Microsecond, HostCalls: int(s.HostCalls), PeakMemory: s.PeakMemory}
	}
	if l != nil {
		st.Limits = codemode.Limits{Memory: int(l.Memory), Stack: int(l.Stack), Payload: int(l.Payload), Logs: int(l.Logs),
			Deadline: time.Duration(l.DeadlineMs) * time.Millisecond}
	}
	return st
}

var _ codemode.Runner = (*Client)(nil)
