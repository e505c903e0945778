//go:build cgo

package codemode

import (
	"sync"
	"sync/atomic"
)

// slotTable maps the handles C holds to their slots without a lock or a
// hash: a host call's first step, on every call. (cgo.Handle's sync.Map
// lookup, its interface hashing and comparison, was some 500 instructions
// of a sync host call's ~9,000.) A handle is an index plus one; indices
// are reused once their slot is freed. The table grows in chunks that
// never move, so a reader needs only the atomic load of the chunk list.
type slotTable struct {
	mu     sync.Mutex
	chunks atomic.Pointer[[]*slotChunk]
	free   []uintptr
	next   uintptr
}

const slotChunkSize = 1024

type slotChunk [slotChunkSize]atomic.Pointer[slot]

var slots slotTable

// add registers s and returns its handle (never 0).
func (t *slotTable) add(s *slot) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uintptr
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = t.next
		t.next++
		var chunks []*slotChunk
		if p := t.chunks.Load(); p != nil {
			chunks = *p
		}
		if int(i/slotChunkSize) >= len(chunks) {
			grown := append(append([]*slotChunk(nil), chunks...), new(slotChunk))
			t.chunks.Store(&grown)
		}
	}
	(*t.chunks.Load())[i/slotChunkSize][i%slotChunkSize].Store(s)
	return i + 1
}

// get returns the slot of a handle add returned and remove has not.
func (t *slotTable) get(h uintptr) *slot {
	i := h - 1
	return (*t.chunks.Load())[i/slotChunkSize][i%slotChunkSize].Load()
}

// remove forgets a handle; its index serves a later slot.
func (t *slotTable) remove(h uintptr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := h - 1
	(*t.chunks.Load())[i/slotChunkSize][i%slotChunkSize].Store(nil)
	t.free = append(t.free, i)
}
