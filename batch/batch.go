// Package batch runs many Code Mode programs concurrently, with per-job
// limits, and yields their outcomes in input order (or as they finish): the
// loop under `codemode batch`, for a Go harness to use directly.
//
// Jobs stream in and outcomes stream out: at most Concurrency jobs are in
// flight, so a batch of a million jobs holds as much memory as one of a
// hundred. Each job runs in a fresh sandbox: as a run_js script
// ([codemode.Executor.Run]) when it uses no provider, else as an
// [codemode.Executor.Execute] program; its limits are the batch's unless
// the job brings its own (an executor per distinct set of limits, made on
// first use and closed when the batch ends).
//
// A job's outcome is a function of the job alone: its deadline counts its
// own time — its JavaScript, its tool calls, its timers — and not the time
// it waits for its turn behind other jobs ([codemode.WithQueueTimeout]),
// so the same file of jobs gets the same outcomes, job by job, at any
// Concurrency and on a loaded machine (within the timing a job's own code
// asks for). A job that waits longer than Options.QueueTimeout for its
// turn is busy (kind internal), never a timeout.
package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/codemode-go/codemode"
)

// DefaultQueueTimeout is how long a job may wait for its turn unless
// Options.QueueTimeout says otherwise: long enough for a batch whose jobs
// are all CPU-bound at a high Concurrency.
const DefaultQueueTimeout = time.Hour

// Job is one program of a batch.
type Job struct {
	// ID names the job in its outcome; the batch does not look at it.
	ID string
	// Line is where the job came from (1-based; 0 when not from a file).
	Line int
	// Code is the program: any shape Execute takes.
	Code string
	// Limits replaces the batch's limits for this job (zero fields: the
	// defaults, as in [codemode.WithLimits]); nil keeps the batch's.
	Limits *codemode.Limits
	// Providers names the batch providers the job may use; nil: all.
	Providers []string
	// Determinism, when set, makes the run repeatable
	// ([codemode.WithDeterminism]).
	Determinism *codemode.Determinism
	// Err marks a job that could not be read (a malformed input line):
	// it is not run, and its outcome is of kind [KindBadInput].
	Err error
	// Resume, when set, makes the job the resumption of a paused run
	// ([codemode.Executor.Resume]) in place of running Code: the
	// continuation, and the decision for its call.
	Resume *Resumption
}

// Resumption is a paused run to resume, with its decision.
type Resumption struct {
	Continuation []byte
	Decision     codemode.Decision
}

// Outcome kinds besides the ExecError kinds (js, timeout,
// memory_exceeded, capability, pending_promise, internal).
const (
	KindOK       = "ok"        // the program returned a value
	KindBadInput = "bad_input" // the job could not be read or names an unknown provider
	KindPaused   = "paused"    // a governed program stopped at a call needing a decision (Outcome.Paused)
)

// Outcome is what one job came to.
type Outcome struct {
	// Kind is [KindOK], [KindBadInput] or the error's kind.
	Kind string
	// Result is the program's value (JSON), when Kind is ok.
	Result json.RawMessage
	// Err is the failure, when the program ran and failed.
	Err *codemode.ExecError
	// Problem is the text of a bad_input outcome, and Cause its error
	// (errors.Is finds ErrUnknownProvider in a job naming a provider the
	// batch does not have).
	Problem string
	Cause   error
	// Logs are the program's console lines.
	Logs []string
	// Stats is what the run measured (zero for a job that did not run).
	Stats codemode.RunStats
	// Paused is the pause of a [KindPaused] outcome: its continuation, and
	// the call waiting for a decision.
	Paused *codemode.Paused
	// Diagnostics are what a type check in warn mode found
	// (codemode.WithTypeCheck among Options.Executor).
	Diagnostics []codemode.TypeDiagnostic
	// Effects is the run's ledger: which tools its program called, in
	// order, and how each ended (nil: it called none). A failed job's
	// Effects.Wrote says whether it left writes behind.
	Effects *codemode.Effects
}

// Progress is the batch's state after an outcome.
type Progress struct {
	Done, Failed int           // outcomes so far, and those neither ok nor paused
	Elapsed      time.Duration // since the batch began
}

// Options configure a batch.
type Options struct {
	// Concurrency bounds the jobs in flight. Zero means GOMAXPROCS. The
	// executor runs at most GOMAXPROCS programs' JavaScript at once; a job
	// waiting for its turn spends none of its deadline (see the package
	// documentation), so raising it costs CPU-bound jobs nothing but
	// memory, and helps when jobs mostly wait on tools (a job waiting on a
	// tool holds no core).
	Concurrency int
	// QueueTimeout bounds the time one job may wait for its turn (a
	// sandbox, an execution right), in all (default DefaultQueueTimeout);
	// past it the job is busy (kind internal).
	QueueTimeout time.Duration
	// Unordered yields outcomes as jobs finish instead of in input order.
	Unordered bool
	// Limits are the jobs' limits unless a job brings its own.
	Limits codemode.Limits
	// Executor are further options of the batch's executors (capabilities,
	// TypeScript, outbound network...).
	Executor []codemode.Option
	// Providers are the namespaces jobs may use, served by Dispatch.
	Providers []codemode.Provider
	// AlwaysExecute runs every job as an Execute program. By default a job
	// that uses no provider runs as a run_js script ([codemode.Executor.Run]:
	// the same shapes and results, a cheaper sandbox, errors named run_js).
	AlwaysExecute bool
	// Dispatch serves the jobs' tool calls, unless DispatchFor is set.
	Dispatch codemode.DispatchFunc
	// DispatchFor, when set, gives each job its own dispatch (a recorder,
	// a replayer); nil from it means Dispatch. It is called on the job's
	// worker before the job's run starts, so it may block (until a tool
	// server is ready, say) without spending the job's deadline.
	DispatchFor func(Job) codemode.DispatchFunc
	// Stop, when closed, ends the batch gracefully: no further job starts,
	// the ones in flight finish and are yielded. Cancelling the context
	// instead stops the runs in flight too.
	Stop <-chan struct{}
	// Progress, when set, is called after each outcome, on the goroutine
	// iterating the batch.
	Progress func(Progress)
	// Remote, when set, runs the jobs elsewhere instead of in this
	// process: it returns the runner of a set of limits (a
	// remote.Client dialled with them: the daemon fleet), made once per
	// set. The jobs' tool calls still come to Dispatch, here. QueueTimeout
	// and Executor are the remote runner's to honour (the client asks the
	// daemon for the queue timeout).
	Remote func(codemode.Limits) (Engine, error)
}

// Engine is what runs a batch's programs: a *codemode.Executor (the
// default, in process) or, through Options.Remote, a daemon's client.
type Engine interface {
	Run(ctx context.Context, script string) (*codemode.Result, error)
	Execute(ctx context.Context, req codemode.Request) codemode.ExecuteResult
	Resume(ctx context.Context, continuation []byte, d codemode.Decision, dispatch codemode.DispatchFunc) codemode.ExecuteResult
}

// Run runs jobs and yields each with its outcome, in input order unless
// opts.Unordered. Stopping the iteration early stops the batch (runs in
// flight are cancelled). An executor that cannot be made (invalid limits)
// makes the jobs that need it bad_input outcomes; nothing panics, and every
// job read is yielded exactly once unless the batch is stopped (then the
// jobs read but not started are not yielded, so a resumed batch runs them).
func Run(ctx context.Context, jobs iter.Seq[Job], opts Options) iter.Seq2[Job, Outcome] {
	return func(yield func(Job, Outcome) bool) {
		b := newRunner(ctx, opts)
		defer b.close()
		start := time.Now()
		var prog Progress
		emit := func(it *item) bool {
			if it.skipped {
				return true
			}
			prog.Done++
			if it.out.Kind != KindOK && it.out.Kind != KindPaused {
				prog.Failed++
			}
			prog.Elapsed = time.Since(start)
			if opts.Progress != nil {
				opts.Progress(prog)
			}
			return yield(it.job, it.out)
		}
		ordered := b.feed(jobs)
		if opts.Unordered {
			for it := range b.finished {
				if !emit(it) {
					b.abort()
					return
				}
			}
			return
		}
		for it := range ordered {
			<-it.done
			if !emit(it) {
				b.abort()
				return
			}
		}
	}
}

// item is a job on its way: its outcome is set before done closes;
// skipped marks one the batch stopped before it started.
type item struct {
	job     Job
	out     Outcome
	skipped bool
	done    chan struct{}
}

// runner runs a batch: a feeder reads jobs ahead into a queue that
// Concurrency workers take from (so reading the next job overlaps the
// runs), and the items go to the consumer in input order, or as they
// finish.
type runner struct {
	ctx      context.Context
	cancel   context.CancelFunc
	opts     Options
	workers  int
	queue    chan *item // read, waiting for a worker
	finished chan *item // Unordered: outcomes as they come
	wg       sync.WaitGroup

	mu    sync.Mutex
	execs map[codemode.Limits]*executor
}

type executor struct {
	once sync.Once
	e    Engine
	own  *codemode.Executor // e when the batch made it (closed with the batch)
	err  error
}

func newRunner(ctx context.Context, opts Options) *runner {
	n := opts.Concurrency
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &runner{ctx: ctx, cancel: cancel, opts: opts, workers: n, queue: make(chan *item, 8*n),
		execs: map[codemode.Limits]*executor{}}
	if opts.Unordered {
		b.finished = make(chan *item, n)
	}
	return b
}

// feed starts the workers and the reader; it returns the items in input
// order (nil when Unordered: finished closes after the last outcome).
func (b *runner) feed(jobs iter.Seq[Job]) <-chan *item {
	var ordered chan *item
	if b.finished == nil {
		ordered = make(chan *item, 64*b.workers)
	}
	var workers sync.WaitGroup
	for range b.workers {
		workers.Add(1)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer workers.Done()
			for it := range b.queue {
				if b.stopped() {
					it.skipped = true
				} else {
					it.out = b.runOne(it.job)
				}
				close(it.done)
				if b.finished != nil && !it.skipped {
					b.finished <- it
				}
			}
		}()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() {
			close(b.queue)
			if ordered != nil {
				close(ordered)
			} else {
				go func() {
					workers.Wait()
					close(b.finished)
				}()
			}
		}()
		for job := range jobs {
			if b.stopped() {
				return
			}
			it := &item{job: job, done: make(chan struct{})}
			if ordered != nil {
				select {
				case ordered <- it:
				case <-b.ctx.Done():
					return
				}
			}
			select {
			case b.queue <- it:
			case <-b.ctx.Done():
				it.skipped = true
				close(it.done)
				return
			}
		}
	}()
	return ordered
}

func (b *runner) stopped() bool {
	if b.ctx.Err() != nil {
		return true
	}
	select {
	case <-b.opts.Stop:
		return true
	default:
		return false
	}
}

// abort stops everything after the consumer stopped iterating.
func (b *runner) abort() {
	b.cancel()
	if b.finished != nil {
		go func() { // let the runs in flight hand over and end
			for range b.finished {
			}
		}()
	}
}

// close waits for the runs in flight and closes the executors.
func (b *runner) close() {
	b.cancel()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, x := range b.execs {
		if x.own != nil {
			x.own.Close()
		}
	}
}

// executor returns the engine of a set of limits, made on first use: an
// executor of the batch's own, or Options.Remote's.
func (b *runner) executor(l codemode.Limits) (Engine, error) {
	b.mu.Lock()
	x := b.execs[l]
	if x == nil {
		x = &executor{}
		b.execs[l] = x
	}
	b.mu.Unlock()
	x.once.Do(func() {
		q := b.opts.QueueTimeout
		if q <= 0 {
			q = DefaultQueueTimeout
		}
		if b.opts.Remote != nil {
			x.e, x.err = b.opts.Remote(l)
			return
		}
		x.own, x.err = codemode.New(append([]codemode.Option{codemode.WithLimits(l), codemode.WithQueueTimeout(q)}, b.opts.Executor...)...)
		if x.own != nil {
			x.e = x.own
		}
	})
	return x.e, x.err
}

// runOne runs one job to its outcome.
func (b *runner) runOne(job Job) Outcome {
	if job.Err != nil {
		return Outcome{Kind: KindBadInput, Problem: job.Err.Error(), Cause: job.Err, Logs: []string{}}
	}
	providers, err := b.providers(job.Providers)
	if err != nil {
		return Outcome{Kind: KindBadInput, Problem: err.Error(), Cause: err, Logs: []string{}}
	}
	limits := b.opts.Limits
	if job.Limits != nil {
		limits = *job.Limits
	}
	e, err := b.executor(limits)
	if err != nil {
		return Outcome{Kind: KindBadInput, Problem: fmt.Sprintf("the job's limits: %v", err), Logs: []string{}}
	}
	dispatch := b.opts.Dispatch
	if b.opts.DispatchFor != nil {
		if d := b.opts.DispatchFor(job); d != nil {
			dispatch = d
		}
	}
	ctx := b.ctx
	if job.Determinism != nil {
		ctx = codemode.WithDeterminism(ctx, *job.Determinism)
	}
	var res codemode.ExecuteResult
	switch {
	case job.Resume != nil:
		res = e.Resume(ctx, job.Resume.Continuation, job.Resume.Decision, dispatch)
	case len(providers) == 0 && !b.opts.AlwaysExecute:
		return runScript(ctx, e, job.Code)
	default:
		res = e.Execute(ctx, codemode.Request{Code: job.Code, Providers: providers, Dispatch: dispatch})
	}
	out := Outcome{Result: res.Result, Logs: res.Logs, Stats: res.Stats, Diagnostics: res.Diagnostics, Effects: res.Effects}
	switch {
	case res.Paused != nil:
		out.Kind, out.Paused, out.Result = KindPaused, res.Paused, nil
	case res.Err != nil:
		out.Kind, out.Err, out.Result = string(res.Err.Kind), res.Err, nil
	case res.Error != "": // a refused request: nothing ran
		out.Kind, out.Problem, out.Result = KindBadInput, res.Error, nil
	default:
		out.Kind = KindOK
		if out.Result == nil {
			out.Result = json.RawMessage("null")
		}
	}
	return out
}

// runScript runs a job without providers as a run_js script (Run: no
// provider runtime in its sandbox, so a third cheaper than Execute).
func runScript(ctx context.Context, e Engine, code string) Outcome {
	res, err := e.Run(ctx, code)
	var out Outcome
	if res != nil {
		out.Result, out.Logs, out.Stats, out.Diagnostics, out.Effects = res.Value, res.Logs, res.Stats, res.Diagnostics, res.Effects
	}
	if out.Logs == nil {
		out.Logs = []string{}
	}
	if res != nil && res.Paused != nil {
		out.Kind, out.Paused, out.Result = KindPaused, res.Paused, nil
		return out
	}
	if err != nil {
		var ee *codemode.ExecError
		if !errors.As(err, &ee) {
			ee = &codemode.ExecError{Kind: codemode.KindInternal, Name: codemode.RunJSToolName, Message: err.Error()}
		}
		out.Kind, out.Err, out.Result = string(ee.Kind), ee, nil
		return out
	}
	out.Kind = KindOK
	if out.Result == nil {
		out.Result = json.RawMessage("null")
	}
	return out
}

// ErrUnknownProvider is a job naming a provider the batch does not have.
var ErrUnknownProvider = errors.New("unknown provider")

// providers returns the batch providers a job may use.
func (b *runner) providers(names []string) ([]codemode.Provider, error) {
	if names == nil {
		return b.opts.Providers, nil
	}
	out := make([]codemode.Provider, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(b.opts.Providers, func(p codemode.Provider) bool { return p.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("%w %q", ErrUnknownProvider, n)
		}
		out = append(out, b.opts.Providers[i])
	}
	return out, nil
}
