//go:build cgo

package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Memory admission: each run's heap is bounded by Limits.Memory, and a
// MemoryBudget bounds their sum (see RATIONALE.md, "Memory is admitted").
//
// A budget is charged for what sandboxes hold resident, as they grow, not
// for the sum of their limits (most runs use a fraction of theirs): a
// sandbox's arena pages up to the furthest it wrote since they were last
// handed back, and its snapshot images, in chunks of 256 KiB as it grows
// and to the page once its run ended (so an idle sandbox is charged what
// it holds). It is charged before a run opens its sandbox, as the sandbox
// grows, and given back as a run ends and as idle sandboxes return their
// pages: after a second idle, past the idle memory allowance
// (WithIdleMemory); all of them for a run that waits for room to start;
// as much as it lacks for a sandbox that cannot grow (C calls back
// go_membudget_reclaim before it refuses the sandbox). Caps keep small
// runs from being starved by large ones: a sandbox past
// [MemoryStats].Small grows only while the sum stays below Budget −
// Reserve; a new run opens only below Budget − Reserve/2; a small sandbox
// grows up to Budget − Reserve/4, and a tiny one (what a new sandbox holds
// once open, and 512 KiB) up to the budget itself.

// ErrMemoryBudget is matched by every error of kind [KindMemoryBudget].
var ErrMemoryBudget = errors.New("codemode: memory budget spent")

// KindMemoryBudget is the outcome of a run the executor's [MemoryBudget]
// stopped: its sandbox needed more memory while the runs beside it held
// the rest of the budget, once idle sandboxes had given back what they
// could (not its own limit: that is memory_exceeded), or
// it waited for room to start until its deadline (then it also matches
// [ErrBusy]: it never started, and no code of it ran). LimitBytes is the
// budget.
const KindMemoryBudget ErrorKind = "memory_budget"

// memoryChunk is the unit a budget is charged in (bridge_arena.c's
// MB_CHUNK).
const memoryChunk = 256 << 10

// MemoryBudget bounds the engine memory of all the runs of the executors
// that share it, at once. Make one with [NewMemoryBudget] and give it to
// executors with [WithMemoryBudget]; an executor without that option
// shares [DefaultMemoryBudget] with the process's other executors. A
// MemoryBudget is safe for concurrent use.
type MemoryBudget struct {
	c *C.bridge_membudget

	mu      sync.Mutex
	changed chan struct{}          // closed and remade when memory comes back while runs wait
	pools   map[*slotPool]struct{} // the executors' pools: idle sandboxes give pages back under pressure
	waiting atomic.Int64
	stopped atomic.Int64 // runs stopped because their sandbox could not grow
	turned  atomic.Int64 // runs that never started for want of room
}

// MemoryStats is what a [MemoryBudget] reports.
type MemoryStats struct {
	// Budget is the bytes the runs may hold at once.
	Budget int64
	// InUse is the bytes charged now: running sandboxes and idle ones
	// that still hold their pages (an idle one is charged what it holds,
	// to the page).
	InUse int64
	// Reserve is what a sandbox past Small may not take (Budget/8), and a
	// new run not half of: room for runs that stay small.
	Reserve int64
	// Small is the size up to which a sandbox may grow into the reserve
	// (Budget/64, at least 2 MiB and at most 32 MiB).
	Small int64
	// Waiting is the runs waiting now for room to start.
	Waiting int64
	// Stopped counts the runs stopped because their sandbox could not
	// grow (kind memory_budget; they had started).
	Stopped int64
	// TurnedAway counts the runs that never started: no room before
	// their deadline, or none at once under WithMemoryWait(0).
	TurnedAway int64
}

// NewMemoryBudget makes a budget of bytes. Its error wraps
// [ErrInvalidLimits] when bytes is below 8 MiB.
func NewMemoryBudget(bytes int64) (*MemoryBudget, error) {
	if bytes < minMemoryBudget {
		return nil, fmt.Errorf("%w: memory budget %d is below the minimum of %d bytes", ErrInvalidLimits, bytes, minMemoryBudget)
	}
	return newMemoryBudget(bytes), nil
}

const minMemoryBudget = 8 << 20

func newMemoryBudget(bytes int64) *MemoryBudget {
	b := &MemoryBudget{c: (*C.bridge_membudget)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bridge_membudget{})))),
		changed: make(chan struct{}), pools: map[*slotPool]struct{}{}}
	b.setBytes(bytes)
	atomic.StoreInt64(b.field(&b.c.entry), 2*memoryChunk)
	runtime.AddCleanup(b, func(c *C.bridge_membudget) { C.free(unsafe.Pointer(c)) }, b.c)
	return b
}

// setBytes sizes the budget and its caps.
func (b *MemoryBudget) setBytes(n int64) {
	atomic.StoreInt64(b.field(&b.c.reserve), n/8)
	atomic.StoreInt64(b.field(&b.c.small), min(max(n/64, 2<<20), 32<<20))
	atomic.StoreInt64(b.field(&b.c.limit), n)
}

// field is one of the C struct's int64 fields, for sync/atomic.
func (b *MemoryBudget) field(p *C.int64_t) *int64 { return (*int64)(unsafe.Pointer(p)) }

// small is Stats().Small, read alone (a pool reads it per run).
func (b *MemoryBudget) small() int64 { return atomic.LoadInt64(b.field(&b.c.small)) }

// Bytes returns the budget's size.
func (b *MemoryBudget) Bytes() int64 { return atomic.LoadInt64(b.field(&b.c.limit)) }

// Stats reports the budget's use.
func (b *MemoryBudget) Stats() MemoryStats {
	return MemoryStats{
		Budget:     b.Bytes(),
		InUse:      atomic.LoadInt64(b.field(&b.c.used)),
		Reserve:    atomic.LoadInt64(b.field(&b.c.reserve)),
		Small:      b.small(),
		Waiting:    b.waiting.Load(),
		Stopped:    b.stopped.Load(),
		TurnedAway: b.turned.Load(),
	}
}

// MinMemoryBudget is the smallest budget [New] accepts beside a per-run
// memory limit: room for one sandbox at that limit (its arena may reach
// twice the limit and 4 MiB, its images 2 MiB more) below the reserve.
func MinMemoryBudget(memoryLimit int) int64 {
	return (2*int64(memoryLimit) + 6<<20) * 8 / 7
}

// DefaultMemoryBudget returns the budget the process's executors share
// unless [WithMemoryBudget] gives them another: three quarters of what
// the process may use — the smallest of its cgroup's memory limit
// (memory.max, or memory.limit_in_bytes under cgroup v1) and GOMEMLIMIT,
// where set, and otherwise of the machine's physical memory — leaving a
// quarter for Go's heap, the C library's and the binary. It is raised to
// [MinMemoryBudget] of an executor's memory limit when that is more. Nil
// where none of those can be read (then nothing bounds the sum).
func DefaultMemoryBudget() *MemoryBudget { return defaultBudget() }

var defaultBudget = sync.OnceValue(func() *MemoryBudget {
	n, _ := ProcessMemoryLimit()
	if n <= 0 {
		return nil
	}
	return newMemoryBudget(max(n/4*3, minMemoryBudget))
})

// ProcessMemoryLimit reports what the process may use, in bytes, and
// where that was read: "cgroup", "GOMEMLIMIT" or "physical memory"; 0 and
// "" when none can be read. [DefaultMemoryBudget] is three quarters of it.
func ProcessMemoryLimit() (int64, string) {
	n, from := int64(0), ""
	if c := cgroupMemoryLimit(); c > 0 {
		n, from = c, "cgroup"
	}
	if g := debug.SetMemoryLimit(-1); g > 0 && g < math.MaxInt64 && (n == 0 || g < n) {
		n, from = g, "GOMEMLIMIT"
	}
	if n == 0 {
		if p := physicalMemory(); p > 0 {
			n, from = p, "physical memory"
		}
	}
	return n, from
}

// cgroupMemoryLimit is the process's cgroup memory limit (the smallest
// along its path, v2 or v1), 0 if none is set or readable.
func cgroupMemoryLimit() int64 {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	defer f.Close()
	best := int64(0)
	note := func(file string) {
		if n := readLimit(file); n > 0 && (best == 0 || n < best) {
			best = n
		}
	}
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := filepath.Clean("/" + parts[2])
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			for p := path; ; p = filepath.Dir(p) {
				note(filepath.Join("/sys/fs/cgroup", p, "memory.max"))
				if p == "/" {
					break
				}
			}
		case strings.Contains(","+parts[1]+",", ",memory,"): // v1
			note(filepath.Join("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes"))
			note("/sys/fs/cgroup/memory/memory.limit_in_bytes") // a container sees its own at the root
		}
	}
	return best
}

// readLimit reads a cgroup limit file: "max", or a value of 2^62 or more
// (cgroup v1's "unlimited"), is none.
func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}

// physicalMemory is MemTotal of /proc/meminfo, 0 if unreadable.
func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
}

// WithMemoryBudget makes the executor's runs share b (which other
// executors may share too) instead of [DefaultMemoryBudget]; nil bounds
// nothing (each run is still bounded by Limits.Memory). New refuses a
// budget below [MinMemoryBudget] of the executor's memory limit.
func WithMemoryBudget(b *MemoryBudget) Option {
	return func(c *config) error {
		c.memory, c.memorySet = b, true
		return nil
	}
}

// WithMemoryWait bounds how long a run waits for room in the memory
// budget before it starts: at most d (or its deadline, if sooner); zero
// refuses it at once. A daemon sets zero, so a client tries another
// daemon instead of waiting. By default a run waits until its deadline.
// New refuses a negative d.
func WithMemoryWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: negative memory wait %v", ErrInvalidLimits, d)
		}
		c.memoryWait, c.memoryWaitSet = d, true
		return nil
	}
}

// MemoryBudget returns the budget the executor's runs share, nil if
// none.
func (e *Executor) MemoryBudget() *MemoryBudget { return e.memory }

// useMemoryBudget settles the executor's budget in New.
func (e *Executor) useMemoryBudget(cfg *config) error {
	b := cfg.memory
	want := MinMemoryBudget(e.limits.Memory)
	if !cfg.memorySet {
		if b = DefaultMemoryBudget(); b != nil {
			b.raise(want)
		}
	} else if b != nil && b.Bytes() < want {
		return fmt.Errorf("%w: a memory budget of %d bytes cannot hold one run at the memory limit of %d bytes: it needs at least %d",
			ErrInvalidLimits, b.Bytes(), e.limits.Memory, want)
	}
	e.memory = b
	e.memoryWait = -1
	if cfg.memoryWaitSet {
		e.memoryWait = cfg.memoryWait
	}
	return nil
}

// raise grows the budget to at least n.
func (b *MemoryBudget) raise(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Bytes() < n {
		b.setBytes(n)
	}
}

// cPtr is the C side of b, nil for none.
func (b *MemoryBudget) cPtr() *C.bridge_membudget {
	if b == nil {
		return nil
	}
	return b.c
}

// join and leave register an executor's pool: a run that waits for
// memory, or whose sandbox cannot grow, first asks idle sandboxes to give
// theirs back. A budget with pools is in budgetsOf, where C's callback
// finds it.
func (b *MemoryBudget) join(p *slotPool) {
	if b != nil {
		b.mu.Lock()
		if len(b.pools) == 0 {
			budgetsOf.Store(b.c, b)
		}
		b.pools[p] = struct{}{}
		b.mu.Unlock()
	}
}

func (b *MemoryBudget) leave(p *slotPool) {
	if b != nil {
		b.mu.Lock()
		delete(b.pools, p)
		if len(b.pools) == 0 {
			budgetsOf.Delete(b.c)
		}
		b.mu.Unlock()
		b.released()
	}
}

// budgetsOf maps the C side of each budget some executor uses
// (*C.bridge_membudget) to the budget, for go_membudget_reclaim: a slot
// knows only the C side of its budget.
var budgetsOf sync.Map

// go_membudget_reclaim is called by C (bridge_arena.c's mb_grow) when a
// running sandbox's budget has no room for it to grow, need bytes short:
// idle sandboxes of the executors sharing the budget give that much back
// (reclaimFor), on the run's own goroutine, before the sandbox is
// refused. It takes the budget's and the pools' locks, which no holder
// keeps while it waits for anything (an execution right, a run), and
// never touches the growing slot: it is in use, not idle. 1 if any idle
// sandbox gave pages back.
//
//export go_membudget_reclaim
func go_membudget_reclaim(c *C.bridge_membudget, need C.int64_t) (rc C.int32_t) {
	defer func() {
		if recover() != nil {
			rc = 0 // the sandbox is refused, as it would have been
		}
	}()
	if b, ok := budgetsOf.Load(c); ok && b.(*MemoryBudget).reclaimFor(int64(need)) {
		return 1
	}
	return 0
}

// released wakes the runs waiting for memory: some came back.
func (b *MemoryBudget) released() {
	if b == nil || b.waiting.Load() == 0 {
		return
	}
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// room reports whether a new slot's run would open now: what the last new
// sandbox took to open, in the chunks C charges, fits below the cap new
// runs open under.
func (b *MemoryBudget) room() bool {
	s := b.Stats()
	entry := (atomic.LoadInt64(b.field(&b.c.entry)) + memoryChunk - 1) / memoryChunk * memoryChunk
	return s.InUse+entry <= s.Budget-s.Reserve/2
}

// poolList is the budget's executors' pools.
func (b *MemoryBudget) poolList() []*slotPool {
	b.mu.Lock()
	defer b.mu.Unlock()
	pools := make([]*slotPool, 0, len(b.pools))
	for p := range b.pools {
		pools = append(pools, p)
	}
	return pools
}

// reclaim asks every idle sandbox of the budget's executors for its pages
// (a run waiting for room to start); then, while there is no room for the
// run, idle sessions are evicted to their journals, the least recently
// used first.
func (b *MemoryBudget) reclaim() {
	pools := b.poolList()
	for _, p := range pools {
		p.reclaim()
	}
	for _, p := range pools {
		if b.room() {
			return
		}
		if p.sessions != nil {
			for !b.room() && p.sessions.evict(1) > 0 {
			}
		}
	}
}

// reclaimFor gives back need bytes of what idle sandboxes of the budget's
// executors are charged, for a sandbox that must grow: nothing when they
// are charged less in all (the sandbox is refused either way, and the
// next burst keeps them); else the least recently used first, the pages
// above their images before whole sandboxes (see slotPool.reclaimSome),
// until need came back. It reports whether any came back.
func (b *MemoryBudget) reclaimFor(need int64) bool {
	pools := b.poolList()
	var idle int64
	for _, p := range pools {
		idle += p.idleCharge()
		if p.sessions != nil {
			idle += p.sessions.idleCharge()
		}
	}
	if need <= 0 || idle < need {
		return false
	}
	var got int64
	for _, p := range pools {
		if got >= need {
			break
		}
		got += p.reclaimSome(need - got)
	}
	for _, p := range pools {
		if got >= need {
			break
		}
		if p.sessions != nil {
			got += p.sessions.evict(need - got)
		}
	}
	return got > 0
}

// wait waits for room for a run the budget refused before it opened,
// until until, the end of ctx or closing; clk, when set, is stopped while
// it waits. tries is how many times the run was refused: the first time,
// idle sandboxes give their pages back; a run that then finds room tries
// again at once, the first two times; after that it waits for memory to
// come back (so a run refused despite the room it saw does not spin).
// With no time to wait it only reclaims, once.
func (b *MemoryBudget) wait(ctx context.Context, until time.Time, closing <-chan struct{}, clk *clock, tries int) error {
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	b.mu.Lock()
	ch := b.changed
	b.mu.Unlock()
	if tries == 1 {
		b.reclaim()
	}
	if tries <= 2 && b.room() { // memory came back since the refusal (no wake-up is lost)
		return nil
	}
	if !time.Now().Before(until) {
		return errWaitDeadline
	}
	clk.stop()
	defer clk.start()
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-closing:
			return ErrClosed
		case <-timer.C:
			return errWaitDeadline
		}
		b.mu.Lock()
		ch = b.changed
		b.mu.Unlock()
		if b.room() {
			return nil
		}
	}
}

// waitMemory waits for room in the budget for a run the budget refused
// before it opened, tries times so far (WithMemoryWait bounds the wait).
func (ex *Executor) waitMemory(ctx context.Context, deadline time.Time, clk *clock, tries int) error {
	until := deadline
	if clk != nil {
		until, _ = clk.waitUntil()
	}
	if ex.memoryWait >= 0 {
		if ex.memoryWait == 0 && tries > 1 {
			return errWaitDeadline
		}
		until = minTime(until, time.Now().Add(ex.memoryWait))
	}
	return ex.memory.wait(ctx, until, ex.closing.Done(), clk, tries)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// turnedAway is the error of a run that never started for want of room:
// kind memory_budget matching ErrBusy, or the context's or the closing's.
func (ex *Executor) turnedAway(ctx context.Context, name string, err error) *ExecError {
	if err != errWaitDeadline {
		return busyError(ctx, name, err)
	}
	ex.memory.turned.Add(1)
	return &ExecError{Kind: KindMemoryBudget, Name: name, LimitBytes: ex.memory.Bytes(),
		Message: "no room in the memory budget before the run could start", cause: errors.Join(ErrMemoryBudget, ErrBusy)}
}

// spent is the error of a run stopped because its sandbox could not grow.
func (ex *Executor) spent(name string) *ExecError {
	ex.memory.stopped.Add(1)
	return &ExecError{Kind: KindMemoryBudget, Name: name, LimitBytes: ex.memory.Bytes(),
		Message: "the memory budget, shared with the runs beside it, is spent", cause: ErrMemoryBudget}
}

// RestoreStats says how this process puts sandboxes back between runs
// ([SandboxRestores]).
type RestoreStats struct {
	// Mode is "written-pages" where the kernel reports which pages a run
	// wrote (Linux 6.7 or later: asynchronous userfaultfd write protection
	// and the PAGEMAP_SCAN ioctl), and a restore copies back only those;
	// "copy" where it copies the whole image back.
	Mode string
	// Reason says why Mode is "copy": "no userfaultfd", "userfaultfd
	// refused" (a seccomp profile, or vm.unprivileged_userfaultfd),
	// "no PAGEMAP_SCAN (Linux 6.7)", "CODEMODE_RESTORE=copy", ...
	Reason string
	// Whole counts the restores that copied a whole image (a slot's first
	// eight of an image, and every one in mode copy);
	// Written those that copied only written pages, and Pages the pages
	// they copied.
	Whole, Written, Pages int64
}

// SandboxRestores reports how sandboxes are restored in this process, and
// how many restores took each path so far. The environment variable
// CODEMODE_RESTORE=copy, read once, turns written-page restores off.
func SandboxRestores() RestoreStats {
	var reason *C.char
	var whole, written, pages C.uint64_t
	on := C.bridge_restore_info(&reason, &whole, &written, &pages)
	st := RestoreStats{Mode: "copy", Reason: C.GoString(reason), Whole: int64(whole), Written: int64(written),
		Pages: int64(pages)}
	if on == 1 {
		st.Mode = "written-pages"
	}
	return st
}
