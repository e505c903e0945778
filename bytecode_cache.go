//go:build cgo

package codemode

import (
	"container/list"
	"fmt"
	"sync"
	"sync/atomic"
)

// DefaultCacheSize is the default bound of the bytecode cache, in bytes.
const DefaultCacheSize = 64 << 20

// WithCacheSize bounds the bytecode cache to n bytes of bytecode (0 keeps
// [DefaultCacheSize]; New refuses a negative n). Scripts are evicted least
// recently used first; the bytecode of registered tools is never evicted.
func WithCacheSize(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: negative cache size %d", ErrInvalidLimits, n)
		}
		c.cacheSize = n
		return nil
	}
}

// CacheStats are the bytecode cache's counters.
type CacheStats struct {
	Entries int    // bytecode entries held
	Bytes   int    // their total size
	Hits    uint64 // lookups that found bytecode
	Misses  uint64 // lookups that had to compile
}

// CacheStats returns the bytecode cache's counters. Safe for concurrent use.
func (e *Executor) CacheStats() CacheStats {
	return e.cache.stats()
}

// bytecodeCache holds compiled bytecode keyed by scriptKey: HMAC-SHA256 of
// the engine version, the bridge version, the kind of source and the
// source, so only bytecode this process wrote can ever be found. Entries
// pinned by registered tools stay (shared by every tool with the same
// source); the others are evicted least recently used past max bytes.
type bytecodeCache struct {
	mu      sync.Mutex
	max     int
	bytes   int
	entries map[[32]byte]*cacheEntry
	lru     list.List // unpinned entries, most recently used first

	hits, misses atomic.Uint64
}

type cacheEntry struct {
	key  [32]byte
	bc   []byte
	pins int           // registered tools using it
	elem *list.Element // in lru while unpinned
}

func newBytecodeCache(max int) *bytecodeCache {
	return &bytecodeCache{max: max, entries: make(map[[32]byte]*cacheEntry)}
}

// get returns the bytecode under key and counts a hit or a miss.
func (c *bytecodeCache) get(key [32]byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	if e.elem != nil {
		c.lru.MoveToFront(e.elem)
	}
	return e.bc, true
}

// put stores evictable bytecode under key (no-op if present or too big).
func (c *bytecodeCache) put(key [32]byte, bc []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok || len(bc) > c.max {
		return
	}
	e := &cacheEntry{key: key, bc: bc}
	e.elem = c.lru.PushFront(e)
	c.entries[key] = e
	c.bytes += len(bc)
	c.evict()
}

// pin stores bytecode for a registered tool, or pins the entry already
// there; it is never evicted until every pin is released.
func (c *bytecodeCache) pin(key [32]byte, bc []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		e = &cacheEntry{key: key, bc: bc}
		c.entries[key] = e
		c.bytes += len(bc)
	}
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
	}
	e.pins++
	c.evict()
	return e.bc
}

// unpin releases a tool's pin; an entry no tool uses any more is freed.
func (c *bytecodeCache) unpin(key [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.pins == 0 {
		return
	}
	if e.pins--; e.pins == 0 {
		delete(c.entries, key)
		c.bytes -= len(e.bc)
	}
}

// evict drops least recently used unpinned entries past the bound.
func (c *bytecodeCache) evict() {
	for c.bytes > c.max {
		back := c.lru.Back()
		if back == nil {
			return
		}
		e := c.lru.Remove(back).(*cacheEntry)
		delete(c.entries, e.key)
		c.bytes -= len(e.bc)
	}
}

func (c *bytecodeCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: len(c.entries), Bytes: c.bytes, Hits: c.hits.Load(), Misses: c.misses.Load()}
}
