//go:build cgo

package codemode

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSlotTable: handles are never 0, find their slot while registered,
// are reused once removed, and the table grows past a chunk while
// readers look up concurrently.
func TestSlotTable(t *testing.T) {
	var tab slotTable
	a, b := &slot{}, &slot{}
	ha, hb := tab.add(a), tab.add(b)
	assert.NotZero(t, ha)
	assert.NotEqual(t, ha, hb)
	assert.Same(t, a, tab.get(ha))
	assert.Same(t, b, tab.get(hb))
	tab.remove(ha)
	assert.Nil(t, tab.get(ha))
	c := &slot{}
	assert.Equal(t, ha, tab.add(c), "a freed index is reused")
	assert.Same(t, c, tab.get(ha))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				assert.Same(t, b, tab.get(hb))
			}
		}
	}()
	hs := make([]uintptr, 3*slotChunkSize)
	ss := make([]*slot, len(hs))
	for i := range hs {
		ss[i] = &slot{}
		hs[i] = tab.add(ss[i])
	}
	close(stop)
	wg.Wait()
	for i, h := range hs {
		assert.Same(t, ss[i], tab.get(h))
	}
}
