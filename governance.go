//go:build cgo

package codemode

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// ToolPolicy governs the calls of one tool within one run. The zero value
// governs nothing.
type ToolPolicy struct {
	// Timeout bounds each call: a call still running after it fails inside
	// the program with a catchable Error naming the tool and the limit
	// (the handler's context ends then; what it returns later is dropped),
	// and the run goes on. Zero: only the run's deadline.
	Timeout time.Duration
	// MaxInFlight bounds this tool's calls running at once in one run
	// (a handler left running by its Timeout counts until it returns);
	// further calls wait for a place (within the run's deadline). Zero: no
	// bound but the run's own.
	MaxInFlight int
	// Budget bounds this tool's calls per run: a call past it fails inside
	// the program with a catchable Error saying so, and the tool does not
	// run. Zero: no bound. A resumed run counts the calls made before its
	// pause.
	Budget int
	// RequiresApproval makes each call wait for a decision: the
	// Governance's Approver's, or, without one, the run pauses at the call
	// (see [Paused]).
	RequiresApproval bool
	// Effect declares what the tool does to the world, for the effects
	// ledger of every run ([Effects]): EffectRead or EffectWrite; empty
	// is EffectWrite, so that a tool nobody marked is never taken for
	// one a retry can repeat. A Governance whose policies only declare
	// effects governs nothing else: its runs take no governed path.
	Effect Effect
}

// governs reports whether the policy asks anything of a call besides
// declaring its effect.
func (p ToolPolicy) governs() bool {
	return p.Timeout != 0 || p.MaxInFlight != 0 || p.Budget != 0 || p.RequiresApproval
}

// ToolCall is a governed call waiting for a decision.
type ToolCall struct {
	// Tool is the tool's policy name: a capability's name, a provider
	// tool's "provider.tool".
	Tool string
	// Args is the call's arguments as JSON: a capability's argument
	// object, a provider tool's argsJSON (see [DispatchFunc]).
	Args json.RawMessage
}

// Decision is a person's (or a policy's) answer to a call that requires
// approval. The zero value rejects the call with no reason.
type Decision struct {
	// Approve lets the call run.
	Approve bool
	// Reason is a rejection's reason: the program catches an Error whose
	// message is `tool "<tool>" was rejected: <reason>`.
	Reason string
	// Args, when set on an approval, replace the call's arguments (the
	// tool runs with them; the program is not told). Same form as
	// [ToolCall].Args: JSON text, an array or an object where the call's
	// are ([Decision.Check]); other arguments never reach the tool.
	Args json.RawMessage
}

// Approve is the decision that lets a call run as it was made.
func Approve() Decision { return Decision{Approve: true} }

// ApproveWith is the decision that lets a call run with other arguments.
func ApproveWith(args json.RawMessage) Decision { return Decision{Approve: true, Args: args} }

// Reject is the decision that refuses a call; the program catches the reason.
func Reject(reason string) Decision { return Decision{Reason: reason} }

// Approver decides a call that requires approval while the run waits for
// it, with the call's context (it carries the run's deadline; the
// program goes on meanwhile, as it does while any tool runs). An error
// fails the call inside the program with the error's text, as a rejection
// does, and so does a decision that fails [Decision.Check]. A decision
// that comes after the run has ended (its deadline passed, its caller's
// context ended, or the program settled without awaiting the call) is
// void: the tool never runs, whatever the Approver decided.
type Approver func(ctx context.Context, call ToolCall) (Decision, error)

// Governance is the host's policy over the tool calls of an executor's
// runs (capabilities, provider tools, the tools of a CodeModeTool), set
// with [WithGovernance].
type Governance struct {
	// Tools maps a tool's policy name (a capability's name, a provider
	// tool's "provider.tool") to its policy; the entry "*" is the policy
	// of every tool not named.
	Tools map[string]ToolPolicy
	// Approver decides calls that require approval; nil pauses the run at
	// such a call instead (Key must be set).
	Approver Approver
	// CanApprove, when set, is asked as a call that requires approval is
	// made whether the Approver can decide it, with the run's context (on
	// the run's goroutine: it must answer at once); false pauses the run
	// at the call instead (Key must be set). A surface that can ask a
	// person on some requests only (an MCP client that supports
	// elicitation) says which.
	CanApprove func(ctx context.Context) bool
	// Key authenticates continuations (HMAC-SHA-256 under a key derived
	// from it); at least 32 bytes, secret, and the same in every process
	// that resumes. Without it a run cannot pause: a call that would pause
	// it fails inside the program, saying why.
	Key []byte
	// Encrypt seals a continuation's contents (AES-256-GCM, key derived
	// from Key), so that its bytes reveal nothing to whoever carries them.
	Encrypt bool
	// TTL is how long a continuation can be resumed (default 24 h),
	// exactly: a continuation made at t is refused from t+TTL on (to the
	// nanosecond, by the resuming process's clock).
	TTL time.Duration
	// Redeem, when set, is asked before a continuation resumes, with the
	// continuation's id (unique per pause) and its expiry: an error
	// refuses it (wrapped in a [*ContinuationError]). Without it a
	// continuation resumes as often as it is presented, each time from
	// the same record; [SingleUse] makes each resume once in one process,
	// and a host with several processes keeps the ids it saw in its own
	// store until they expire.
	Redeem func(id string, expires time.Time) error

	keys *contKeys // derived from Key once, by WithGovernance
}

// DefaultContinuationTTL is how long a continuation lasts when the
// Governance sets no TTL.
const DefaultContinuationTTL = 24 * time.Hour

// WithGovernance governs the executor's tool calls (see [Governance]).
// New refuses a Key shorter than 32 bytes, a negative limit, and a policy
// that requires approval with neither an Approver nor a Key.
func WithGovernance(g Governance) Option {
	return func(c *config) error {
		if err := g.Validate(); err != nil {
			return err
		}
		gg := g
		gg.Tools = make(map[string]ToolPolicy, len(g.Tools))
		for k, v := range g.Tools {
			gg.Tools[k] = v
		}
		gg.Key = append([]byte(nil), g.Key...)
		if len(gg.Key) > 0 {
			mac, seal := continuationKeys(gg.Key)
			gg.keys = &contKeys{mac, seal}
		}
		if gg.TTL == 0 {
			gg.TTL = DefaultContinuationTTL
		}
		c.effects = nil
		for name, p := range gg.Tools {
			if p.Effect != "" {
				if c.effects == nil {
					c.effects = make(map[string]Effect, len(gg.Tools))
				}
				c.effects[name] = p.Effect
			}
		}
		c.gov = &gg
		if !gg.governs() {
			c.gov = nil // effects only: the runs need no governed side
		}
		return nil
	}
}

// Validate reports what WithGovernance refuses in g (matching
// ErrInvalidLimits): a Key shorter than 32 bytes, a negative limit or
// TTL, a policy that requires approval with neither an Approver nor a Key.
func (g *Governance) Validate() error {
	if len(g.Key) > 0 && len(g.Key) < 32 {
		return fmt.Errorf("%w: the governance key is %d bytes; it needs at least 32", ErrInvalidLimits, len(g.Key))
	}
	if g.TTL < 0 {
		return fmt.Errorf("%w: negative continuation TTL %v", ErrInvalidLimits, g.TTL)
	}
	for name, p := range g.Tools {
		if p.Timeout < 0 || p.MaxInFlight < 0 || p.Budget < 0 {
			return fmt.Errorf("%w: tool %q: negative policy limit", ErrInvalidLimits, name)
		}
		if p.Effect != "" && p.Effect != EffectRead && p.Effect != EffectWrite {
			return fmt.Errorf("%w: tool %q: effect %q is neither %q nor %q", ErrInvalidLimits, name, p.Effect,
				EffectRead, EffectWrite)
		}
		if p.RequiresApproval && g.Approver == nil && len(g.Key) == 0 {
			return fmt.Errorf("%w: tool %q requires approval, and there is neither an Approver nor a Key to pause with",
				ErrInvalidLimits, name)
		}
	}
	return nil
}

// governs reports whether g asks anything of its runs besides declaring
// effects: a limit, an approval, or a Key (a continuation to resume).
func (g *Governance) governs() bool {
	if len(g.Key) > 0 {
		return true
	}
	for _, p := range g.Tools {
		if p.governs() {
			return true
		}
	}
	return false
}

// policy is the policy of a tool by its policy name.
func (g *Governance) policy(name string) ToolPolicy {
	if p, ok := g.Tools[name]; ok {
		return p
	}
	return g.Tools["*"]
}

// mayPause reports whether a run under g can pause: some policy requires
// approval and the Approver may not decide it.
func (g *Governance) mayPause() bool {
	if len(g.Key) == 0 || (g.Approver != nil && g.CanApprove == nil) {
		return false
	}
	for _, p := range g.Tools {
		if p.RequiresApproval {
			return true
		}
	}
	return false
}

// Paused is a run that stopped at a call that requires approval. Show
// Tool and Args to whoever decides, and hand the decision with
// Continuation to [Executor.Resume] (in this process or any other whose
// executor has the same Key), before Expires.
type Paused struct {
	// Continuation is the run, self-contained and authenticated (see
	// SECURITY.md for what it holds).
	Continuation []byte
	// ID is the continuation's own id, unique per pause ([Governance].Redeem).
	ID string
	// Tool and Args are the call waiting for a decision.
	Tool string
	Args json.RawMessage
	// Completed is how many tool calls the run made before it paused (a
	// resume answers them from the continuation; none runs again).
	Completed int
	// Expires is when the continuation stops being accepted.
	Expires time.Time
}

// Error makes a paused run's Paused an error where a surface can only
// return one (a Tool's Call): errors.As finds it.
func (p *Paused) Error() string {
	return fmt.Sprintf("codemode: the run paused: tool %q requires approval", p.Tool)
}

// KindDiverged is the outcome of a resumed run that did not repeat its
// record: it made a different call (or fewer calls) than the run that
// paused. Nothing of the live part runs past the divergence.
const KindDiverged ErrorKind = "diverged"

// callRecord is one tool call of a governed run: what the program asked,
// and its answer once it has one (neither: it never ran).
type callRecord struct {
	Tool      string  `json:"tool"`
	Args      string  `json:"args"`
	Result    *string `json:"result,omitempty"`
	Error     *string `json:"error,omitempty"`
	TypeError bool    `json:"typeError,omitempty"`
}

func (r *callRecord) answered() bool { return r.Result != nil || r.Error != nil }

// completion is the record's answer as the engine delivers it.
func (r *callRecord) completion(id uint32, dispatch bool) completion {
	d := completion{id: id}
	if r.Error != nil {
		d.failed, d.failure, d.badArgs = true, *r.Error, r.TypeError
		if dispatch {
			d.tool = r.Tool
		}
		return d
	}
	d.result = append([]byte(*r.Result), 0)
	d.str = dispatch
	return d
}

// record keeps an answer.
func (r *callRecord) record(d completion) {
	if d.failed {
		msg := d.failure
		r.Error, r.TypeError = &msg, d.badArgs
		return
	}
	s := string(d.result)
	s = strings.TrimSuffix(s, "\x00")
	r.Result = &s
}

// govRun is the governed side of one run: its record of calls, the
// per-tool counts and in-flight bounds, and the replay of a resumed run.
type govRun struct {
	g      *Governance
	origin continuationBody // what a continuation of this run starts from

	mu       sync.Mutex
	calls    []callRecord // every call the run made, by the order it made them
	replay   []callRecord // a resumed run's record, answered in order
	pending  int          // the index in replay of the call the decision is for (-1: none)
	decision Decision
	counts   map[string]int
	slots    map[string]chan struct{}

	// restoring: the run replays a session's journal, where a call its
	// record holds no answer for fails rather than runs (it never
	// completed in the run that made it).
	restoring bool

	ended    atomic.Bool   // the run has settled (end)
	done     chan struct{} // closed as ended is set
	from     string        // a resumed run's: the continuation's id
	stop     error         // why the run was stopped at a call: errPausedHere or a divergence
	paused   int           // the call it paused at
	diverged string
}

// errPausedHere marks a run stopped to pause.
var errPausedHere = errors.New("paused")

// newGovRun starts the governed side of a run.
func newGovRun(g *Governance, origin continuationBody) *govRun {
	return &govRun{g: g, origin: origin, pending: -1, done: make(chan struct{})}
}

// action is what a governed call does.
type action int

const (
	actLive   action = iota // run the tool (policy applies)
	actAnswer               // answer from the record
	actFail                 // fail inside the program with msg
	actStop                 // stop the run (a pause or a divergence)
)

// verdict is issue's answer for one call.
type verdict struct {
	act     action
	seq     int
	policy  ToolPolicy
	msg     string          // actFail's message
	why     callNote        // actFail's reason for an Observer: budget, rejected
	rec     callRecord      // actAnswer's record
	args    json.RawMessage // actLive: arguments decided in place of the call's (an edit)
	decided bool            // actLive: the call's approval is decided already
}

// issue registers a call the program just made (on the run's goroutine,
// in the program's order, ctx the run's) and says what happens to it.
func (r *govRun) issue(ctx context.Context, tool string, args []byte) verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := len(r.calls)
	r.calls = append(r.calls, callRecord{Tool: tool, Args: string(args)})
	v := verdict{seq: seq, policy: r.g.policy(tool)}
	if r.stop != nil {
		v.act = actStop
		return v
	}
	if seq < len(r.replay) {
		want := &r.replay[seq]
		if want.Tool != tool || want.Args != string(args) {
			r.diverge(fmt.Sprintf("call %d was %s(%s) and is now %s(%s)", seq+1, want.Tool, want.Args, tool, args))
			v.act = actStop
			return v
		}
		if r.counts == nil {
			r.counts = map[string]int{}
		}
		switch {
		case seq == r.pending:
			r.counts[tool]++
			d := r.decision
			if !d.Approve {
				v.act, v.msg, v.why = actFail, rejection(tool, d.Reason), noteRejected
				return v
			}
			v.act, v.args, v.decided = actLive, d.Args, true
			return v
		case want.answered():
			r.counts[tool]++
			v.act, v.rec = actAnswer, *want
			r.calls[seq] = *want
			return v
		case r.restoring:
			v.act, v.msg = actFail, fmt.Sprintf("tool %q did not complete in the session's run that called it, and is not called again as it is restored", tool)
			return v
		}
		// Made before the pause but never run: governed as a live call.
	}
	if v.policy.Budget > 0 {
		if r.counts == nil {
			r.counts = map[string]int{}
		}
		if r.counts[tool] >= v.policy.Budget {
			v.act, v.msg, v.why = actFail, fmt.Sprintf("tool %q is over its budget of %d calls per run", tool, v.policy.Budget), noteBudget
			return v
		}
		r.counts[tool]++
	}
	if v.policy.RequiresApproval && !r.asks(ctx) {
		if len(r.g.Key) == 0 {
			v.act, v.msg = actFail, fmt.Sprintf("tool %q requires approval, and this executor can neither ask nor pause", tool)
			return v
		}
		r.stop, r.paused = errPausedHere, seq
		v.act = actStop
	}
	return v
}

// asks reports whether the Approver decides the run's calls.
func (r *govRun) asks(ctx context.Context) bool {
	if r.g.Approver == nil {
		return false
	}
	if r.g.CanApprove == nil {
		return true
	}
	defer func() { recover() }() // a panicking CanApprove cannot approve
	return r.g.CanApprove(ctx)
}

// rejection is the message a rejected call fails with.
func rejection(tool, reason string) string {
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("tool %q was rejected: %s", tool, reason)
}

// diverge stops the run for a divergence from its record (r.mu held).
func (r *govRun) diverge(why string) {
	if r.stop == nil {
		r.stop, r.diverged = errors.New(why), why
	}
}

// complete records call seq's answer.
func (r *govRun) complete(seq int, d completion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seq < len(r.calls) {
		r.calls[seq].record(d)
	}
}

// slot takes one of tool's in-flight places within ctx; release gives it back.
func (r *govRun) slot(ctx context.Context, tool string, n int) (release func(), err error) {
	if n <= 0 {
		return func() {}, nil
	}
	r.mu.Lock()
	if r.slots == nil {
		r.slots = map[string]chan struct{}{}
	}
	ch := r.slots[tool]
	if ch == nil {
		ch = make(chan struct{}, n)
		r.slots[tool] = ch
	}
	r.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stopped reports why the run was stopped at a call, if it was.
func (r *govRun) stopped() (paused bool, diverged string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stop == nil:
		return false, "", false
	case r.stop == errPausedHere:
		return true, "", true
	}
	return false, r.diverged, true
}

// unfinished is why a resumed run that ended on its own diverged: it
// never reached the call its decision was for, or made fewer calls than
// its record.
func (r *govRun) unfinished() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) < len(r.replay) {
		next := r.replay[len(r.calls)]
		return fmt.Sprintf("the program ended before making call %d, %s(%s)", len(r.calls)+1, next.Tool, next.Args)
	}
	return ""
}

// governed calls one live governed call: the approval (unless decided),
// the tool's in-flight place, and its per-call timeout around do. It
// returns the completion the program gets, and whether the handler ran.
func (r *govRun) governed(ctx context.Context, v verdict, tool string, args []byte, id uint32, dispatch bool,
	do func(ctx context.Context, args []byte) completion) (completion, bool) {
	fail := func(msg string) (completion, bool) {
		d := completion{id: id, failed: true, failure: msg}
		if dispatch {
			d.tool = tool
		}
		return d, false
	}
	rejected := func(msg string) (completion, bool) {
		d, ran := fail(msg)
		d.why, d.policy = noteRejected, noteRejected
		return d, ran
	}
	// A call whose run ended while it waited for its decision never runs:
	// a decision that comes after the run settled (or after its deadline,
	// or its caller's context ended) is void.
	void := func(policy callNote) (completion, bool) {
		d, ran := fail(fmt.Sprintf("tool %q: the run ended before its approval", tool))
		d.why, d.policy = noteTimeout, policy
		return d, ran
	}
	policy := noteNone
	if v.decided {
		policy = noteApproved
		if v.args != nil {
			policy = noteEdited
		}
	}
	if v.args != nil {
		args = v.args
	} else if v.policy.RequiresApproval || v.policy.Timeout > 0 {
		// A sync capability's arguments are borrowed until its handler
		// returns; an approver, or a handler left behind by its timeout,
		// may keep them past that.
		args = bytes.Clone(args)
	}
	if v.policy.RequiresApproval && !v.decided {
		if r.g.Approver == nil {
			return fail(fmt.Sprintf("tool %q requires approval, and this executor has no Approver", tool))
		}
		if r.over(ctx) { // nobody is asked for a run that has ended
			return void(noteNone)
		}
		call := ToolCall{Tool: tool, Args: json.RawMessage(args)}
		d, err := r.safeApprove(ctx, call)
		if err == nil {
			err = d.Check(call)
		}
		switch {
		case err == errRunEnded:
			return void(noteNone)
		case err != nil:
			return rejected(fmt.Sprintf("tool %q was not approved: %v", tool, err))
		case !d.Approve:
			return rejected(rejection(tool, d.Reason))
		case d.Args != nil:
			args, policy = d.Args, noteEdited
		default:
			policy = noteApproved
		}
		if r.over(ctx) {
			return void(policy)
		}
	}
	release, err := r.slot(ctx, tool, v.policy.MaxInFlight)
	if err == nil && r.over(ctx) { // its run ended while it waited: dropped, as a queued call is
		release()
		err = context.Canceled
	}
	if err != nil {
		return fail(fmt.Sprintf("tool %q: no place in flight before the run ended", tool))
	}
	if v.policy.Timeout <= 0 {
		defer release()
		d := do(ctx, args)
		d.policy = policy
		return d, true
	}
	cctx, cancel := context.WithTimeout(ctx, v.policy.Timeout)
	defer cancel()
	done := make(chan completion, 1)
	go func() {
		defer release() // a handler left behind by its timeout keeps its place until it returns
		done <- do(cctx, args)
	}()
	select {
	case d := <-done:
		d.policy = policy
		return d, true
	case <-cctx.Done():
		msg := fmt.Sprintf("tool %q timed out after %v (its per-call timeout)", tool, v.policy.Timeout)
		if ctx.Err() != nil {
			msg = fmt.Sprintf("tool %q: the run ended during the call", tool) // never delivered
		}
		d, _ := fail(msg)
		d.why, d.policy = noteTimeout, policy
		return d, true // the handler did start
	}
}

// end marks the run settled: a call still waiting for its approval or its
// in-flight place never starts. Safe to call on a nil govRun.
func (r *govRun) end() {
	if r != nil && r.ended.CompareAndSwap(false, true) {
		close(r.done)
	}
}

// over reports whether a call that waited (for a decision, a place in
// flight) may no longer start: the run has settled, or ctx, the call's
// (the run's deadline, the caller's context), has ended or passed its
// deadline.
func (r *govRun) over(ctx context.Context) bool {
	if r.ended.Load() || ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// ErrInvalidDecision is matched by the error of a [Decision] whose edited
// arguments cannot stand for the call's: they must be JSON text (RFC 8259,
// so valid UTF-8) and, where the call's arguments are an array (a provider
// tool's, by default) or an object (ObjectArgs, a capability's argument
// object), the same.
var ErrInvalidDecision = errors.New("codemode: invalid decision")

// decisionError is a Decision refused; it matches ErrInvalidDecision.
type decisionError struct{ reason string }

func (e *decisionError) Error() string        { return "codemode: invalid decision: " + e.reason }
func (e *decisionError) Is(target error) bool { return target == ErrInvalidDecision }

// Check reports whether d can decide call (the call it is for: a
// [Paused]'s or [ContinuationInfo]'s Tool and Args, an [Approver]'s
// ToolCall): an approval's edited arguments must be JSON text, and an
// array or an object where call's arguments are. Its error matches
// [ErrInvalidDecision]. [Executor.Resume] refuses a decision that fails it
// before anything runs; an Approver's that fails it rejects the call (the
// tool does not run).
func (d Decision) Check(call ToolCall) error {
	if !d.Approve || d.Args == nil {
		return nil
	}
	if !utf8.Valid(d.Args) || !json.Valid(d.Args) {
		return &decisionError{"the edited arguments are not JSON: " + clip(string(d.Args), 64)}
	}
	if want := jsonForm(call.Args); want != 0 && jsonForm(d.Args) != want {
		return &decisionError{fmt.Sprintf("the edited arguments must be a JSON %s, as the call's are: %s",
			map[byte]string{'[': "array", '{': "object"}[want], clip(string(d.Args), 64))}
	}
	return nil
}

// jsonForm is '[' or '{' for JSON text that is an array or an object, else 0.
func jsonForm(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) > 0 && (b[0] == '[' || b[0] == '{') {
		return b[0]
	}
	return 0
}

// safeApprove asks the Approver, a panic being its error, and waits for
// its decision only while the call may still run: until ctx ends or the
// run settles (the decision, when it comes, is dropped), so that an
// Approver deaf to its context holds neither a synchronous call's run nor
// an async call's goroutine past the run.
func (r *govRun) safeApprove(ctx context.Context, call ToolCall) (Decision, error) {
	type decided struct {
		d   Decision
		err error
	}
	ch := make(chan decided, 1)
	go func() {
		var out decided
		defer func() {
			if p := recover(); p != nil {
				out = decided{err: fmt.Errorf("panic: %v", p)}
			}
			ch <- out
		}()
		out.d, out.err = r.g.Approver(ctx, call)
	}()
	select {
	case out := <-ch:
		return out.d, out.err
	case <-ctx.Done():
	case <-r.done:
	}
	return Decision{}, errRunEnded
}

// errRunEnded is the decision of a call whose run ended while its
// Approver decided.
var errRunEnded = errors.New("the run ended before the decision")

// newContinuationID is a fresh random id.
func newContinuationID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// governedOutcome turns the outcome of a governed run that was stopped at
// a call into a pause or a divergence, and checks that a resumed run that
// ended on its own repeated its whole record.
func (c *call) governedOutcome(ctx context.Context, o *outcome) {
	gov := c.prog.gov
	paused, diverged, stopped := gov.stopped()
	if !stopped && (o.err == nil || o.err.Kind == KindJS || o.err.Kind == KindCapability || o.err.Kind == KindPendingPromise) {
		// Ended on its own (not by a limit or the caller) before its
		// record did: it did not compute what the paused run computed.
		diverged = gov.unfinished()
	}
	switch {
	case diverged != "":
		o.value, o.err = nil, &ExecError{Kind: KindDiverged, Name: c.name,
			Message: "the resumed run did not repeat its record: " + diverged}
	case paused:
		// The calls in flight beside the paused one finish first (within
		// the deadline): their answers go into the continuation, so none
		// runs again on resume.
		if err := c.host.quiesce(ctx); err != nil {
			o.value, o.err = nil, err
			return
		}
		p, err := gov.pause(c.ex)
		if err != nil {
			o.value, o.err = nil, internalError(c.name, err)
			return
		}
		o.value, o.err, o.paused = nil, nil, p
	}
}

// quiesce waits until no call of the run is running or queued: nil, or
// the run's timeout or cancellation if it comes first.
func (h *hostRun) quiesce(ctx context.Context) *ExecError {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		h.mu.Lock()
		idle := h.inflight == 0 && len(h.queue) == 0
		h.mu.Unlock()
		if idle {
			return nil
		}
		wait := time.Until(h.clock.Deadline())
		if wait <= 0 {
			return h.run.timeout()
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-h.notify:
		case <-timer.C:
		case <-ctx.Done():
			return h.run.canceled(ctx)
		case <-h.ex.closing.Done():
			return internalError(h.run.name, ErrClosed)
		}
	}
}

// pause makes the continuation of a run stopped at a call.
func (r *govRun) pause(ex *Executor) (*Paused, error) {
	r.mu.Lock()
	b := r.origin
	b.V, b.ID = 1, newContinuationID()
	now := time.Now()
	exp := now.Add(r.g.TTL)
	b.Created, b.Expires, b.ExpiresNs = now.Unix(), exp.Add(time.Second-1).Unix(), exp.UnixNano()
	b.Limits = ex.limits
	b.Calls = append([]callRecord(nil), r.calls[:r.paused+1]...)
	b.Calls[r.paused].Result, b.Calls[r.paused].Error = nil, nil
	b.Pending = r.paused
	pending := b.Calls[r.paused]
	r.mu.Unlock()
	cont, err := sealContinuation(r.g, &b)
	if err != nil {
		return nil, err
	}
	completed := 0
	for i := range b.Calls {
		if b.Calls[i].answered() {
			completed++
		}
	}
	return &Paused{Continuation: cont, ID: b.ID, Tool: pending.Tool, Args: json.RawMessage(pending.Args),
		Completed: completed, Expires: b.expiry()}, nil
}

// govern returns the governed side of a run under the executor's
// Governance (nil without one, at no cost); a run that may pause is made deterministic (a fresh seed and
// the current time on a virtual clock, unless ctx fixes them), so that a
// resume can repeat it.
func (e *Executor) govern(ctx context.Context, origin continuationBody) (context.Context, *govRun) {
	if e.gov == nil {
		return ctx, nil // nothing to govern, and no resume (Resume needs a Governance)
	}
	if e.gov.mayPause() {
		d, ok := determinismOf(ctx)
		if !ok || d.Clock.IsZero() {
			if !ok {
				var b [8]byte
				rand.Read(b[:])
				d.Seed = binary.LittleEndian.Uint64(b[:])
			}
			d.Clock = time.Now().UTC()
			ctx = WithDeterminism(ctx, d)
		}
		origin.Seed, origin.Clock = d.Seed, d.Clock
	}
	if names, ok := grantsOf(ctx); ok {
		origin.Grants = append([]string{}, names...)
	}
	return ctx, newGovRun(e.gov, origin)
}

// Resume continues a paused run (Run's or Execute's) with the decision for
// the call it paused at: the continuation is checked first (a tampered,
// truncated, expired or foreign one, or one Governance.Redeem refuses, is
// a [*ContinuationError] in Err and nothing runs); then the program runs
// again from its start with its seed and clock, every call it made before
// the pause is answered from the continuation (none runs again), the
// paused call gets the decision (an approval runs the tool, with the
// edited arguments if any; a rejection fails it inside the program with
// the reason), and the program goes on live, to its end or its next
// pause (Paused again). dispatch serves an Execute program's provider
// tools (as Request.Dispatch); a Run program's capabilities are this
// executor's. A program that does not repeat its record ends with an
// [*ExecError] of kind [KindDiverged].
//
// The executor must have the Governance Key the continuation was made
// with, and the limits it recorded (memory, stack, payload and logs: the
// run must compute what it computed); the deadline is this executor's,
// counted from this call. A decision that fails [Decision.Check] against
// the paused call is refused before anything runs (and before Redeem),
// kind [KindInvalidArgs], matching [ErrInvalidDecision]. A Run program's outcome comes back in the
// ExecuteResult's form: Result, Logs, Err (Error its text).
func (e *Executor) Resume(ctx context.Context, continuation []byte, d Decision, dispatch DispatchFunc) ExecuteResult {
	if ctx == nil {
		return refusedResult(nilContext(ExecuteName))
	}
	b, r, ctx, refused := e.resumption(ctx, continuation, d, nil)
	if refused != nil {
		return *refused
	}
	if b.Mode == modeExecute {
		return e.executeObserved(ctx, Request{Code: b.Code, Providers: b.Providers, Dispatch: dispatch}, r, nil)
	}
	res, err := e.runObserved(ctx, b.Code, r)
	return runAsExecuteResult(res, err)
}

// resumption opens a continuation for a resume in sess (nil: none) with
// decision d: its body, the governed side that replays it, and the
// context the run goes on with (its seed, clock and grants); or the
// result of a refusal, when nothing may run.
func (e *Executor) resumption(ctx context.Context, continuation []byte, d Decision, sess *Session) (
	*continuationBody, *govRun, context.Context, *ExecuteResult) {
	refused := func(err error) *ExecuteResult {
		return &ExecuteResult{Logs: []string{}, Error: err.Error(), Err: internalError(ExecuteName, err)}
	}
	if e.gov == nil {
		return nil, nil, nil, refused(refuse("this executor has no Governance (WithGovernance)"))
	}
	b, err := openWith(e.gov, continuation, time.Now())
	if err == nil {
		err = sessionBinding(b, sess)
	}
	if err == nil {
		// Before admit: a Redeem that lets a continuation resume once must
		// not spend it on a decision refused here.
		pending := &b.Calls[b.Pending]
		if err := d.Check(ToolCall{Tool: pending.Tool, Args: json.RawMessage(pending.Args)}); err != nil {
			res := refusedResult(&ExecError{Kind: KindInvalidArgs, Name: ExecuteName, Reason: err.(*decisionError).reason, cause: err})
			return nil, nil, nil, &res
		}
		err = e.admit(b)
	}
	if err != nil {
		return nil, nil, nil, refused(err)
	}
	r := newGovRun(e.gov, *b)
	r.origin.Calls, r.origin.Pending, r.origin.ID = nil, 0, ""
	r.replay, r.pending, r.decision, r.from = b.Calls, b.Pending, d, b.ID
	// The run's handlers see its seed, clock and grants in ctx (a run
	// one of them starts is a run of its own, governed afresh).
	ctx = WithDeterminism(ctx, Determinism{Seed: b.Seed, Clock: b.Clock})
	if b.Grants != nil {
		ctx = Grant(ctx, b.Grants...)
	}
	return b, r, ctx, nil
}

// sessionBinding refuses a continuation of a session's run outside that
// session, or in it once it has moved on; and one of a plain run in a
// session.
func sessionBinding(b *continuationBody, sess *Session) error {
	switch {
	case sess == nil && b.Session != "":
		return refuse("it is a session's run: resume it with that session's Resume")
	case sess == nil:
		return nil
	case b.Session != sess.id:
		return refuse("it is not a run of this session")
	case b.SessionRuns != len(sess.journal):
		return refuse("the session has kept %d runs since the paused one began (it began after %d)",
			len(sess.journal)-b.SessionRuns, b.SessionRuns)
	}
	return nil
}

// runAsExecuteResult is a Run's outcome in the ExecuteResult's form.
func runAsExecuteResult(res *Result, err error) ExecuteResult {
	out := ExecuteResult{Logs: []string{}}
	if res != nil {
		out.Result, out.Stats, out.Paused, out.Effects = res.Value, res.Stats, res.Paused, res.Effects
		if res.Logs != nil {
			out.Logs = res.Logs
		}
	}
	if err != nil {
		var ee *ExecError
		if !errors.As(err, &ee) {
			ee = internalError(RunJSToolName, err)
		}
		out.Result, out.Err, out.Error = nil, ee, ee.describe()
		if out.Effects != nil {
			out.Effects.End = ee.Kind
		}
	}
	return out
}

// admit checks that this executor can resume b: the limits it recorded,
// and the host's Redeem.
func (e *Executor) admit(b *continuationBody) error {
	l, m := b.Limits, e.limits
	if b.OwnNetwork {
		return refuse("the program had a network of its own (Request.Outbound), which a resume cannot restore")
	}
	if l.Memory != m.Memory || l.Stack != m.Stack || l.Payload != m.Payload || l.Logs != m.Logs {
		return refuse("it ran under memory %d, stack %d, payload %d and logs %d bytes; this executor's are %d, %d, %d and %d",
			l.Memory, l.Stack, l.Payload, l.Logs, m.Memory, m.Stack, m.Payload, m.Logs)
	}
	if e.gov.Redeem != nil {
		if err := e.gov.Redeem(b.ID, b.expiry()); err != nil {
			return &ContinuationError{Reason: "Redeem refused it: " + err.Error(), cause: err}
		}
	}
	return nil
}
