//go:build cgo

package codemode

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// Observer is told of every run of an executor and of each tool call a
// run makes ([WithObserver]): the seam for tracing and metrics (the
// module github.com/codemode-go/codemode/otel turns it into OpenTelemetry
// spans and metrics). Its methods are called on the goroutines that do
// the work, concurrently for concurrent runs and calls; they must be
// quick and must not panic.
//
// RunStart's context becomes the run's: the contexts the run's tool
// handlers get derive from it, so a span it carries is the parent of the
// calls'. ToolStart's context is the one the call's handler gets (for a
// provider tool, the DispatchFunc's), so a handler's own spans nest under
// the call's.
type Observer interface {
	RunStart(ctx context.Context, run RunInfo) context.Context
	RunEnd(ctx context.Context, run RunInfo, end RunEnd)
	ToolStart(ctx context.Context, call ToolCallInfo) context.Context
	ToolEnd(ctx context.Context, call ToolCallInfo, end ToolCallEnd)
}

// RunInfo names a run: its kind (RunKindRun, RunKindExecute,
// RunKindResume), for a resume the continuation's id, and for a run in a
// [Session] the session's id.
type RunInfo struct {
	Kind         string
	Continuation string
	Session      string
}

// The kinds of a run.
const (
	RunKindRun     = "run"     // Executor.Run (and CodeModeTool)
	RunKindExecute = "execute" // Executor.Execute
	RunKindResume  = "resume"  // Executor.Resume
)

// RunEnd is how a run ended: Outcome is "ok", "paused" or the
// [ErrorKind] of Err; Cached says its program's bytecode came from the
// cache (false: it was compiled).
type RunEnd struct {
	Outcome    string
	Err        error
	Elapsed    time.Duration
	HostCalls  int
	PeakMemory int64
	Cached     bool
	// Effects is the run's effects ledger (nil: it called no tool).
	Effects *Effects
}

// ToolCallInfo names a tool call: the tool's policy name (a capability's
// name, a provider tool's "provider.tool"), its provider (empty for a
// capability), and its place among the run's calls (0, 1, ...). A
// provider tool's names are the program's to choose: an Observer gets
// them as valid UTF-8 of at most MaxObservedName bytes (and a failure's
// text of at most MaxObservedText), so a program cannot make an exporter
// refuse a batch or hold megabytes per span.
type ToolCallInfo struct {
	Tool     string
	Provider string
	Seq      int
}

// ToolCallEnd is how a call ended: Outcome is "ok", "error" (the call
// failed as the program sees it: a Go error or panic, arguments refused
// with a TypeError, a provider tool's answer {"error": …} with a truthy
// error or outside the envelope, a capability's result that is not JSON;
// Err says how, in the program's error's text), "timeout" (its per-call
// timeout), "rejected" (its approval was refused), "budget" (past its
// budget), "replayed" (a resumed run's call answered from the
// continuation: the tool did not run; Err is set when that answer is a
// failure) or "paused" (the run paused at it); Policy says what
// governance decided ("", "approved", "edited", "rejected", "budget",
// "replayed"). Err is set whenever the program sees the call fail.
type ToolCallEnd struct {
	Outcome string
	Err     error
	Elapsed time.Duration
	Policy  string
}

// WithObserver has o told of the executor's runs and their tool calls.
// Without one nothing is measured for it (no cost).
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.observer = o
		return nil
	}
}

// runObs is a run an Observer was told of.
type runObs struct {
	info RunInfo
	ctx  context.Context
}

// runStart tells the Observer of a run; a run Resume started (resumed
// set) is kind resume.
func (e *Executor) runStart(ctx context.Context, kind string, resumed *govRun, sess *Session) (context.Context, runObs) {
	info := RunInfo{Kind: kind}
	if resumed != nil && resumed.from != "" { // a replay of a session's journal has none
		info = RunInfo{Kind: RunKindResume, Continuation: resumed.from}
	}
	if sess != nil {
		info.Session = sess.id
	}
	ctx = e.observer.RunStart(ctx, info)
	return ctx, runObs{info: info, ctx: ctx}
}

// runEnd tells the Observer how the run ended: paused, ok, or err's kind.
func (e *Executor) runEnd(t runObs, st RunStats, paused, cached bool, err error, eff *Effects) {
	end := RunEnd{Outcome: "ok", Elapsed: st.Elapsed, HostCalls: st.HostCalls, PeakMemory: st.PeakMemory, Cached: cached,
		Effects: eff}
	var ee *ExecError
	switch {
	case paused:
		end.Outcome = "paused"
	case errors.As(err, &ee):
		end.Outcome = string(ee.Kind)
	case err != nil:
		end.Outcome = string(KindInternal)
	}
	if err != nil {
		end.Err = observedError{err, observedText(err.Error())}
	}
	e.observer.RunEnd(t.ctx, t.info, end)
}

// observedError is an error as an Observer gets it: its text clipped
// (observedText: a thrown message is the program's to choose), the error
// itself behind it (errors.Is and errors.As see it).
type observedError struct {
	err  error
	text string
}

func (e observedError) Error() string { return e.text }
func (e observedError) Unwrap() error { return e.err }

// callNote is what an Observer is told of a call beyond "ok" and "error"
// (ToolCallEnd.Outcome) and what governance decided (ToolCallEnd.Policy),
// as a byte in each completion.
type callNote uint8

const (
	noteNone callNote = iota
	notePaused
	noteReplayed
	noteRejected
	noteBudget
	noteTimeout
	noteApproved
	noteEdited
)

var noteNames = [...]string{"", "paused", "replayed", "rejected", "budget", "timeout", "approved", "edited"}

func (n callNote) String() string { return noteNames[n] }

// The most of a program's text an Observer is handed.
const (
	MaxObservedName = 128
	MaxObservedText = 1024
)

// observedName is a name as an Observer gets it.
func observedName(s string) string { return clip(s, MaxObservedName) }

// observedText is a failure's text as an Observer gets it.
func observedText(s string) string { return clip(s, MaxObservedText) }

// clip is s as valid UTF-8 (a bad sequence becomes U+FFFD), cut to at most
// n bytes on a character's boundary.
func clip(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
