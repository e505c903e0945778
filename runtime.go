//go:build cgo

package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/internal/gopool"
	"github.com/codemode-go/codemode/internal/jspos"
)

// Executor runs scripts, each in a fresh QuickJS-ng sandbox under the
// executor's [Limits]. It is safe for concurrent use by any number of
// goroutines; build one with [New] and share it. Close it when done: Close
// stops runs in progress and frees the C side.
type Executor struct {
	limits Limits
	slots  slotPool
	gate   *gate // execution rights

	// caps is the current capability set; AddCapability swaps in a new one
	// under capMu. Every table ever current is kept in capTables until
	// Close, since runs in progress may still use it.
	caps      atomic.Pointer[capTable]
	capMu     sync.Mutex
	capTables []*capTable

	closed atomic.Bool
	// closing ends when Close is called: handlers' contexts follow it.
	closing     context.Context
	stopClosing context.CancelFunc
	// life is read-held by every run in progress; Close takes it for
	// writing to wait for them.
	life    sync.RWMutex
	checked bool // build and free every sandbox on libc (see checked_on.go)
	cache   *bytecodeCache
	// runKeys remembers the cache keys of recent Run scripts (source.go).
	runKeys keyMemo
	// programKeys remembers those of recent Execute programs.
	programKeys keyMemo
	// instruments shares the instrumentation of a source that runs in
	// flight miss the cache for together.
	instruments instruments
	entries     entries // Execute's entry source and key, per provider set
	tools       toolSet
	schemas     schemaCache
	// retained counts the loops of retained sandboxes, which own slots.
	retained   sync.WaitGroup
	sessions   sessionSet    // the open sessions, which own slots
	sessionTTL time.Duration // WithSessionTTL, or 0: sessions live until closed
	checker    TypeChecker   // WithTypeCheck, or nil
	checkMode  TypeCheck     // what runs do with it unless told otherwise
	checks     checkMemo
	retainIdle time.Duration
	// queueTimeout, when positive, makes a run's deadline its own time
	// and bounds its queue waits apart (WithQueueTimeout).
	queueTimeout time.Duration
	ts           TypeScript        // strips a source that is not JavaScript; nil: none
	outbound     http.RoundTripper // the network runs are granted (fetch); nil: none
	gov          *Governance       // WithGovernance, or nil
	effects      map[string]Effect // declared effects by policy name ("*": the rest), or nil
	observer     Observer          // WithObserver, or nil
	memory       *MemoryBudget     // the runs' memory budget, or nil
	memoryWait   time.Duration     // WithMemoryWait, or -1: until the deadline
	modules      *moduleTable      // WithModules, compiled; nil: none
}

// Option configures an [Executor] in [New].
type Option func(*config) error

type config struct {
	slots         int
	concurrency   int
	limits        Limits
	caps          []Capability
	retainIdle    time.Duration
	queue         time.Duration
	sessionTTL    time.Duration
	sessions      bool // WithSessions (CodeModeTool)
	checker       TypeChecker
	checkMode     TypeCheck
	cacheSize     int
	ts            TypeScript
	tsSet         bool
	outbound      http.RoundTripper
	syncTools     bool // NewCodeModeTool: sync capabilities (WithSyncTools)
	budget        int  // NewCodeModeTool: its output budget (WithOutputBudget)
	budgetSet     bool
	modules       map[string]string
	idleMemory    int64
	idleMemorySet bool
	gov           *Governance
	effects       map[string]Effect // the tools' declared effects (WithGovernance)
	observer      Observer
	memory        *MemoryBudget // WithMemoryBudget
	memorySet     bool
	memoryWait    time.Duration // WithMemoryWait
	memoryWaitSet bool
}

// WithSlots bounds how many runs are alive at once: each run holds a slot
// (a sandbox's memory and its snapshot image) from start to end, waiting on
// host calls and timers included, and further runs queue for a free one,
// first come first served, under their deadline and context; a run that
// gets none in time fails with [ErrBusy]. WithSlots(1) makes consecutive
// runs share one sandbox. Zero keeps [DefaultSlots]; New refuses a
// negative n. Sandboxes are made on demand, and idle ones give back what
// they hold (see the package documentation, Concurrency).
func WithSlots(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: negative slot count %d", ErrInvalidLimits, n)
		}
		c.slots = n
		return nil
	}
}

// DefaultIdleMemory is how many bytes idle sandboxes keep resident, pages
// and all, unless [WithIdleMemory] says otherwise.
const DefaultIdleMemory = 32 << 20

// WithIdleMemory bounds the memory idle sandboxes keep resident once they
// have been idle for a second: the most recently used keep their pages
// (the next burst reuses them without the kernel making a page again)
// while their sum stays within n bytes; beyond it, a few warm ones keep
// only their snapshot images, while those still fit, and the rest are
// freed. Under a [MemoryBudget] idle sandboxes are charged what they hold,
// so their charge stays within n too, and they give their pages back at
// once to a run of the budget that needs the room, to start or to grow.
// A service that expects bursts of a thousand runs awaiting I/O sets
// about 150 KiB per sandbox of the burst. Zero keeps none (every idle
// sandbox is freed after a second); New refuses a negative n.
func WithIdleMemory(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: negative idle memory %d", ErrInvalidLimits, n)
		}
		c.idleMemory, c.idleMemorySet = n, true
		return nil
	}
}

// WithQueueTimeout makes a run's deadline count the run's own time: the
// time it waits for a sandbox ([WithSlots]) or for an execution right
// ([WithConcurrency]) — queued behind other runs, at its start or on its
// way back from a host call or a timer — is not charged to
// Limits.Deadline. Its JavaScript, its host calls and its timers are. The
// waits are bounded apart: d in all for one run, then it fails with
// [ErrBusy] (kind internal: the host's overload, never a timeout). A
// caller's context deadline still counts wall-clock time and decides as
// before. So a run's outcome does not depend on what runs beside it: a
// batch of evaluations scores the same at any concurrency (package batch
// and the command line use it). A service that promises its callers a
// wall-clock latency keeps the default (zero): every wait counts against
// the deadline, and a run that queues too long is ErrBusy at its
// deadline. New refuses a negative d.
//
// A host call's context follows the run's clock: its Done never fires
// for time the run spent queued, and its Deadline is the deadline as of
// the moment it is read, later after each wait. A handler that arms a
// timer of its own from Deadline (a write deadline, a dial) should read
// it again when that timer fires while the context lives. A retained
// sandbox's handle calls (Retained.Call) keep a wall-clock deadline.
func WithQueueTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: negative queue timeout %v", ErrInvalidLimits, d)
		}
		c.queue = d
		return nil
	}
}

// WithConcurrency bounds how many runs execute JavaScript at once: a run
// holds the right only while the engine runs its code, not while it waits
// on a host call, a timer or a synchronous capability's handler. Further
// runs wait their turn, first come first served. Zero keeps the default,
// runtime.GOMAXPROCS(0); New refuses a negative n.
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: negative concurrency %d", ErrInvalidLimits, n)
		}
		c.concurrency = n
		return nil
	}
}

// WithLimits sets the executor's limits. Zero fields keep their defaults;
// New refuses negative values and a Stack above [MaxStack].
func WithLimits(l Limits) Option {
	return func(c *config) error {
		c.limits = l
		return nil
	}
}

// New builds an executor. Its error wraps [ErrInvalidLimits] when the limits
// are refused, and is a [*RegisterError] when a capability is.
func New(opts ...Option) (*Executor, error) {
	var cfg config
	for _, opt := range opts {
		if opt == nil {
			return nil, errNilOption
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	limits := cfg.limits.WithDefaults()
	if err := limits.validate(); err != nil {
		return nil, err
	}
	for i, c := range cfg.caps {
		if err := validateCapability(c, cfg.caps[:i]); err != nil {
			return nil, err
		}
	}
	e := &Executor{limits: limits, retainIdle: cfg.retainIdle, queueTimeout: cfg.queue, sessionTTL: cfg.sessionTTL, checker: cfg.checker, checkMode: cfg.checkMode, checked: checkedMode, ts: cfg.ts,
		outbound: cfg.outbound, gov: cfg.gov, effects: cfg.effects, observer: cfg.observer}
	if !cfg.tsSet {
		e.ts = registeredTypeScript()
	}
	for i := range cfg.caps {
		if err := e.compileCapability(&cfg.caps[i]); err != nil {
			return nil, err
		}
	}
	mods, err := compileModules(cfg.modules)
	if err != nil {
		return nil, err
	}
	e.modules = mods
	if cfg.slots == 0 {
		cfg.slots = DefaultSlots
	}
	if cfg.concurrency == 0 {
		cfg.concurrency = runtime.GOMAXPROCS(0)
	}
	idle := int64(DefaultIdleMemory)
	if cfg.idleMemorySet {
		idle = cfg.idleMemory
	}
	if err := e.useMemoryBudget(&cfg); err != nil {
		return nil, err
	}
	e.slots.init(cfg.slots, warmSlots(cfg.concurrency), idle, e.memory)
	e.slots.sessions = &e.sessions
	e.gate = newGate(cfg.concurrency)
	if cfg.cacheSize == 0 {
		cfg.cacheSize = DefaultCacheSize
	}
	e.cache = newBytecodeCache(cfg.cacheSize)
	e.runKeys.seed = maphash.MakeSeed()
	e.programKeys.seed = maphash.MakeSeed()
	if e.retainIdle == 0 {
		e.retainIdle = DefaultRetainIdle
	}
	e.closing, e.stopClosing = context.WithCancel(context.Background())
	t := newCapTable(cfg.caps)
	e.capTables = []*capTable{t}
	e.caps.Store(t)
	return e, nil
}

// IdleWorker is the top function of a goroutine that served async host
// calls and waits, at most a second, for the next one (any executor's):
// one goroutine per call would grow a fresh stack every time. A leak
// check that runs right after Close, such as goleak's, ignores exactly
// these: goleak.IgnoreTopFunction(codemode.IdleWorker). A goroutine still
// in a handler is not one of them and is still reported.
const IdleWorker = gopool.Worker

// Limits returns the limits every run of this executor gets, defaults
// filled in.
func (e *Executor) Limits() Limits { return e.limits }

// Close stops the runs in progress (they fail with an error matching
// [ErrClosed]), waits for them to return and frees the executor's sandboxes.
// It is idempotent and always returns nil; every later call of the executor
// fails with an error matching ErrClosed. Do not call Close from a
// capability handler of the same executor: it would wait for itself.
//
// Async host calls run on goroutines shared by every executor of the
// process, which wait up to a second for the next call before they leave
// (see [IdleWorker]): a leak check after Close ignores them by that name.
func (e *Executor) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.stopClosing()
	e.slots.cancelAll()
	e.sessions.cancelAll()
	e.life.Lock()
	defer e.life.Unlock()
	e.retained.Wait()
	e.sessions.closeAll()
	e.slots.freeAll()
	e.memory.leave(&e.slots)
	e.capMu.Lock()
	defer e.capMu.Unlock()
	for _, t := range e.capTables {
		t.free()
	}
	e.modules.free()
	e.capTables = nil
	return nil
}

func (e *Executor) isClosed() bool { return e.closed.Load() }

// enter admits a run; the run calls e.life.RUnlock when it returns.
func (e *Executor) enter() bool {
	if e.closed.Load() {
		return false
	}
	e.life.RLock()
	if e.closed.Load() {
		e.life.RUnlock()
		return false
	}
	return true
}

// Result is what a successful run returns: the script's value as JSON
// (undefined becomes null) and the console lines it wrote.
type Result struct {
	Value json.RawMessage
	Logs  []string
	// Stats is what the run measured.
	Stats RunStats
	// Paused, when set, is a governed run that stopped at a call needing a
	// decision (see [Governance]): Value is nil and the error is nil; the
	// run goes on with [Executor.Resume].
	Paused *Paused
	// Diagnostics are what a type check in warn mode found (see
	// WithTypeCheck): the run went on anyway.
	Diagnostics []TypeDiagnostic
	// Effects is the ledger of the run's host calls: which tools ran, in
	// order, and how each ended; nil: the program called no tool. A
	// failed run's Result, returned next to its error, has it too:
	// Effects.Summary says whether a retry can repeat a write.
	Effects *Effects
}

// Run executes script as the body of an async function in a fresh sandbox:
// a top-level return gives the result, await works, and a body that returns
// nothing (or undefined) gives null. It takes every shape models write (an
// arrow or a named function, which is called; statements whose last
// expression is the result; a markdown fence; TypeScript with a stripper:
// see the package documentation, What models write). Line numbers in
// errors are the script's own.
//
// The run ends at the executor's deadline, counted from this call, or when
// ctx is done, whichever comes first. Every failure is an [*ExecError]
// attributed to [RunJSToolName]: a thrown error or a syntax error is kind
// js, the deadline timeout, the memory limit memory_exceeded, a promise
// that can never settle pending_promise; a cancelled ctx or a closed
// executor gives kind internal, matching ctx.Err() or [ErrClosed] with
// errors.Is. When the sandbox ran, a failed run still returns a Result
// holding its logs (Value nil) next to the error.
func (e *Executor) Run(ctx context.Context, script string) (*Result, error) {
	if ctx == nil {
		return nil, nilContext(RunJSToolName)
	}
	return e.runObserved(ctx, script, nil)
}

// runObserved is Run, or Resume's run of a Run program (resumed set),
// told to the Observer.
func (e *Executor) runObserved(ctx context.Context, script string, resumed *govRun) (*Result, error) {
	return e.observeRun(ctx, resumed, nil, func(ctx context.Context) (*Result, error, bool) {
		return e.runScript(ctx, script, resumed)
	})
}

// observeRun tells the Observer of a run of a Run script (in a session,
// with sess) that run does; cached says its bytecode came from the cache.
func (e *Executor) observeRun(ctx context.Context, resumed *govRun, sess *Session,
	run func(context.Context) (*Result, error, bool)) (*Result, error) {
	if e.observer == nil {
		res, err, _ := run(ctx)
		return res, err
	}
	ctx, t := e.runStart(ctx, RunKindRun, resumed, sess)
	res, err, cached := run(ctx)
	var st RunStats
	var eff *Effects
	if res != nil {
		st, eff = res.Stats, res.Effects
	}
	e.runEnd(t, st, res != nil && res.Paused != nil, cached, err, eff)
	return res, err
}

// runScript is Run's input to the run's path (run.go) and its outcome as a
// Result; cached says the script's bytecode came from the cache.
func (e *Executor) runScript(ctx context.Context, script string, resumed *govRun) (_ *Result, _ error, cached bool) {
	p := &program{name: RunJSToolName, file: scriptFile,
		smap:     sourceMap{file: scriptFileName, head: runHead, shape: jspos.Body, src: script, ts: e.ts, mods: e.modules},
		outbound: e.outbound}
	in := runInput{start: time.Now(), unit: unitScript, mode: modeRun, resumed: resumed, cacheBC: true}
	if resumed == nil { // a resumed program was checked as it first ran
		in.typeCheck = e.typeCheckMode(ctx, TypeCheckDefault)
	}
	o := e.do(ctx, p, in)
	if o.refused {
		return nil, o.err, false
	}
	res := &Result{Value: o.value, Logs: o.logs, Stats: o.stats, Paused: o.paused, Diagnostics: o.diagnostics,
		Effects: o.effects}
	if o.err != nil {
		return res, o.err, o.cached
	}
	return res, nil, o.cached
}
