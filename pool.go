//go:build cgo

package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Admission: two resources, held for different spans (see doc.go,
// Concurrency). A run holds a sandbox (a slot: its arena, its images, its
// state) from start to end, waiting on host calls and timers included; it
// holds an execution right only while the engine runs its JavaScript. So
// a thousand runs awaiting I/O hold a thousand sandboxes and no core.

// DefaultSlots is how many sandboxes an executor keeps alive at most (runs
// alive at once) unless [WithSlots] says otherwise: a waiting run costs
// its sandbox's resident pages, not a core, so the bound is set by memory
// (see RATIONALE.md).
const DefaultSlots = 1024

// Idle sandboxes: after idleRelease without a run, the most recently used
// keep their pages while their sum stays within the idle memory budget
// (WithIdleMemory); beyond it, warmSlots of them hand the arena pages
// above their images back to the kernel (keeping their images while the
// sum stays within the budget) and the rest are freed entirely.
const idleRelease = time.Second

// warmSlots is how many idle sandboxes an executor keeps built, at most,
// past the idle memory budget's full ones.
func warmSlots(concurrency int) int { return max(2*concurrency, 4) }

// slotPool hands out slots, one run each at a time. Slots are made on
// demand up to max and reused most recently used first; a run that finds
// none free queues, first come first served, under its deadline and
// context. Close cancels and frees them all.
type slotPool struct {
	mu     sync.Mutex
	max    int
	warm   int
	budget int64         // bytes idle slots may keep resident (WithIdleMemory)
	memory *MemoryBudget // the runs' memory budget, or nil
	// sessions are the executor's: their idle sandboxes are evicted for
	// memory as idle slots are reclaimed.
	sessions *sessionSet
	made     int          // slots counted against max (idle, in use, being made)
	idle     []idleSlot   // free slots, the most recently used last
	waiters  []chan *slot // runs waiting for a slot, the longest waiting first
	all      map[*slot]struct{}
	closed   bool
	trim     *time.Timer // armed while idle slots may need trimming
	// retire (tests) keeps a returned slot out of use until Close, in
	// retired: every run then gets a new slot, in a region of its own.
	retire  bool
	retired []*slot
}

type idleSlot struct {
	s        *slot
	since    time.Time
	released bool // its pages above the image went back to the kernel
}

func (p *slotPool) init(max, warm int, budget int64, memory *MemoryBudget) {
	p.max = max
	p.warm = warm
	p.budget = budget
	p.memory = memory
	p.all = make(map[*slot]struct{})
	memory.join(p)
}

// errNoSlot says why get returned no slot.
type errNoSlot struct {
	timeout bool
	cause   error
}

// get returns a free slot, waiting for one until the deadline, the end of
// ctx or of closing; clk, when set, is stopped while it waits.
func (p *slotPool) get(ctx context.Context, deadline time.Time, closing <-chan struct{}, clk *clock) (*slot, *errNoSlot) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, &errNoSlot{cause: ErrClosed}
	}
	if n := len(p.idle); n > 0 && len(p.waiters) == 0 {
		s := p.idle[n-1].s
		p.idle[n-1] = idleSlot{}
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return s, nil
	}
	if p.made < p.max && len(p.waiters) == 0 {
		p.made++
		p.mu.Unlock()
		s := newSlot(p.memory)
		if s == nil {
			p.mu.Lock()
			p.made--
			p.mu.Unlock()
			return nil, &errNoSlot{cause: errors.New("cannot allocate a slot")}
		}
		p.mu.Lock()
		p.all[s] = struct{}{}
		p.mu.Unlock()
		return s, nil
	}
	ch := make(chan *slot, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
	clk.stop()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var fail *errNoSlot
	select {
	case s := <-ch:
		return s, nil
	case <-ctx.Done():
		fail = &errNoSlot{cause: ctx.Err()}
	case <-closing:
		fail = &errNoSlot{cause: ErrClosed}
	case <-timer.C:
		fail = &errNoSlot{timeout: true}
	}
	p.mu.Lock()
	for i, w := range p.waiters {
		if w == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return nil, fail
		}
	}
	p.mu.Unlock()
	// A slot was handed over as the wait ended: pass it on.
	p.put(<-ch)
	return nil, fail
}

func newSlot(memory *MemoryBudget) *slot {
	c := C.bridge_slot_new(memory.cPtr())
	if c == nil {
		return nil
	}
	s := &slot{c: c, io: (*slotIO)(C.calloc(1, C.size_t(unsafe.Sizeof(slotIO{}))))}
	s.handle = slots.add(s)
	return s
}

// put returns a slot: to the run that has waited longest, or to the idle
// list. Under a memory budget, a sandbox that grew past a small one's size
// gives its pages back at once, not after a second of idleness: the
// budget's other runs may be waiting for them.
func (p *slotPool) put(s *slot) {
	// A run the budget refused before it opened frees nothing: it wakes
	// no one.
	if p.memory != nil && s.io.out.unstarted == 0 {
		if int64(s.io.out.charged) > p.memory.small() {
			C.bridge_slot_release(s.c)
		}
		defer p.memory.released()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retire {
		p.retired = append(p.retired, s)
		return
	}
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		ch <- s
		return
	}
	p.idle = append(p.idle, idleSlot{s: s, since: time.Now()})
	if p.trim == nil && !p.closed {
		p.trim = time.AfterFunc(idleRelease, p.trimIdle)
	}
}

// trimIdle trims the slots idle for idleRelease, the most recently used
// first: each keeps what it holds while the sum so kept stays within the
// budget (the next burst then finds its pages made: a sandbox made anew
// costs the kernel a page fault and a zeroed page per page it touches);
// past the budget, the warm ones give back the pages above their images
// and keep those while the sum stays within the budget, and the rest are
// freed. What a slot holds is what the memory budget charges it, if more
// (to the page, as its run ended): so the idle slots' charge stays within
// the idle budget too. It re-arms itself while idle slots remain that a
// later pass may trim.
func (p *slotPool) trimIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trim = nil
	if p.closed {
		return
	}
	now := time.Now()
	pending := false
	var resident int64
	free := make([]bool, len(p.idle))
	for i := len(p.idle) - 1; i >= 0; i-- {
		is := &p.idle[i]
		if now.Sub(is.since) < idleRelease {
			pending = true
			continue
		}
		held := is.s.holds()
		if held > 0 && !is.released && resident+held <= p.budget {
			resident += held
			continue
		}
		if len(p.idle)-i <= p.warm {
			if !is.released {
				C.bridge_slot_release(is.s.c)
				is.released = true
			}
			if held = is.s.holds(); resident+held <= p.budget {
				resident += held
				continue
			}
		}
		free[i] = true
	}
	kept := p.idle[:0]
	for i, is := range p.idle {
		if free[i] {
			delete(p.all, is.s)
			p.made--
			is.s.free()
			continue
		}
		kept = append(kept, is)
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	if pending {
		p.trim = time.AfterFunc(idleRelease, p.trimIdle)
	}
	p.memory.released()
}

// reclaim is trimIdle at once and for every idle slot, for a run waiting
// for memory: the warm ones give back the pages above their images, the
// rest are freed.
func (p *slotPool) reclaim() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	kept := p.idle[:0]
	for i, is := range p.idle {
		if len(p.idle)-i > p.warm {
			delete(p.all, is.s)
			p.made--
			is.s.free()
			continue
		}
		if !is.released {
			C.bridge_slot_release(is.s.c)
			is.released = true
		}
		kept = append(kept, is)
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	p.memory.released()
}

// idleCharge is what the memory budget charges the pool's idle slots.
func (p *slotPool) idleCharge() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, is := range p.idle {
		n += is.s.charged()
	}
	return n
}

// reclaimSome gives back need bytes of the idle slots' charge, or as much
// as they have, for a sandbox that must grow: the least recently used
// first, the pages above their images (the slot stays, warm), then, if
// that was not enough, whole slots. It returns the bytes given back.
func (p *slotPool) reclaimSome(need int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0
	}
	var got int64
	for i := 0; i < len(p.idle) && got < need; i++ {
		if is := &p.idle[i]; !is.released {
			had := is.s.charged()
			C.bridge_slot_release(is.s.c)
			is.released = true
			got += had - is.s.charged()
		}
	}
	n := 0
	for ; n < len(p.idle) && got < need; n++ {
		s := p.idle[n].s
		got += s.charged()
		delete(p.all, s)
		p.made--
		s.free()
	}
	if n > 0 {
		rest := copy(p.idle, p.idle[n:])
		clear(p.idle[rest:])
		p.idle = p.idle[:rest]
	}
	if got > 0 {
		p.memory.released()
	}
	return got
}

// detach takes s out of the pool for good (a retained sandbox keeps it):
// another slot may be made in its place. The caller frees it with free.
func (p *slotPool) detach(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.all, s)
	p.made--
}

// cancelAll stops every run in progress and refuses new ones.
func (p *slotPool) cancelAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.trim != nil {
		p.trim.Stop()
		p.trim = nil
	}
	for s := range p.all {
		C.bridge_slot_cancel(s.c, -1)
	}
}

// freeAll releases the C side; no run may be in progress.
func (p *slotPool) freeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.all {
		s.free()
	}
	p.all = nil
	p.idle = nil
}

// counts reports the slots made and the idle ones, retired included
// (tests).
func (p *slotPool) counts() (made, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made, len(p.idle) + len(p.retired)
}

// held reports the bytes the pool's sandboxes may hold resident, by the
// arenas' own accounting (tests: under a sanitizer the RSS measures its
// allocator).
func (p *slotPool) held() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for s := range p.all {
		n += int64(C.bridge_slot_held(s.c))
	}
	return n
}

// errWaitDeadline: the run's own deadline passed while it waited.
var errWaitDeadline = errors.New("codemode: the deadline passed while waiting")

// gate bounds the runs executing JavaScript at once (WithConcurrency):
// a right is taken before every cgo call that may run the engine and
// given back when it returns, and inside a synchronous capability while
// its handler runs. Runs that have started (back from a host call, a timer
// or a synchronous handler) get a free right before runs that have not,
// each group first come first served: a run that has begun finishes
// before new ones crowd it out of its deadline, and a burst of new runs
// (each first slice builds a sandbox) cannot hold back the ones in flight.
//
// A right is taken and given back on every synchronous host call (around
// its handler), so the way with no run waiting takes no lock: free and
// waiting are atomic, and a run that must wait counts itself in waiting
// (under mu) before it looks at free once more, so a right given back as
// it queues is never missed.
type gate struct {
	mu      sync.Mutex
	size    int             // rights in all
	free    atomic.Int64    // rights no run holds
	waiting atomic.Int64    // runs in resume and start
	resume  []chan struct{} // started runs waiting, the longest first
	start   []chan struct{} // runs waiting for their first slice
	// Test hooks.
	hook          bool
	running, peak int64
}

func newGate(n int) *gate {
	g := &gate{size: n}
	g.free.Store(int64(n))
	return g
}

// tryEnter takes a free right at once, with no run waiting for one.
func (g *gate) tryEnter() bool { return !g.hook && g.waiting.Load() == 0 && g.grab() }

// grab takes a free right if there is one.
func (g *gate) grab() bool {
	for f := g.free.Load(); f > 0; f = g.free.Load() {
		if g.free.CompareAndSwap(f, f-1) {
			return true
		}
	}
	return false
}

// enter takes a right, waiting for one until the deadline, the end of ctx
// or the executor's closing; resuming says the run has started, and clk,
// when set, is stopped while it waits. Its error is errWaitDeadline, ctx's
// error or ErrClosed.
func (g *gate) enter(ctx context.Context, deadline time.Time, closing context.Context, resuming bool, clk *clock) error {
	if g.tryEnter() {
		return nil
	}
	g.mu.Lock()
	if len(g.resume) == 0 && (resuming || len(g.start) == 0) && g.grab() {
		g.took()
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	if resuming {
		g.resume = append(g.resume, ch)
	} else {
		g.start = append(g.start, ch)
	}
	g.waiting.Add(1)
	// A right given back since the look above (by a leave that saw no
	// one waiting) goes to the first in line.
	if g.grab() {
		g.handOn()
	}
	g.mu.Unlock()
	clk.stop()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var err error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closing.Done():
		err = ErrClosed
	case <-timer.C:
		err = errWaitDeadline
	}
	g.mu.Lock()
	if g.drop(&g.resume, ch) || g.drop(&g.start, ch) {
		g.waiting.Add(-1)
		g.mu.Unlock()
		return err
	}
	g.mu.Unlock()
	<-ch // granted as the wait ended: pass it on
	g.leave()
	return err
}

// drop removes ch from q, reporting whether it was there.
func (g *gate) drop(q *[]chan struct{}, ch chan struct{}) bool {
	for i, w := range *q {
		if w == ch {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}

// leave gives a right back: to the started run that has waited longest,
// else to the oldest new one, else to the pool.
func (g *gate) leave() {
	if !g.hook && g.waiting.Load() == 0 {
		g.free.Add(1)
		if g.waiting.Load() == 0 {
			return
		}
		// A run queued meanwhile: it may have looked at free before this
		// right came back.
		g.mu.Lock()
		if g.grab() {
			g.handOn()
		}
		g.mu.Unlock()
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hook {
		g.running--
	}
	g.free.Add(1)
	if g.grab() {
		g.handOn()
	}
}

// handOn gives a right just taken (grab) to the started run that has
// waited longest, else to the oldest new one, else back to the pool
// (under mu).
func (g *gate) handOn() {
	var q *[]chan struct{}
	switch {
	case len(g.resume) > 0:
		q = &g.resume
	case len(g.start) > 0:
		q = &g.start
	default:
		g.free.Add(1)
		return
	}
	ch := (*q)[0]
	(*q)[0] = nil
	*q = (*q)[1:]
	g.waiting.Add(-1)
	g.took()
	ch <- struct{}{}
}

// took counts a right handed out (test hooks; under mu).
func (g *gate) took() {
	if g.hook {
		g.running++
		g.peak = max(g.peak, g.running)
	}
}

// charged is what the slot's memory budget charges it (0 without one).
func (s *slot) charged() int64 { return int64(C.bridge_slot_charged(s.c)) }

// holds is what an idle slot holds: the bytes that may be resident (its
// arena's own accounting), or what its memory budget charges it, if more.
func (s *slot) holds() int64 {
	return max(int64(C.bridge_slot_held(s.c)), s.charged())
}
