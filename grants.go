//go:build cgo

package codemode

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Grant narrows what the runs started with the returned context may reach
// (the reference's IR-lane gates): only the named capabilities exist in
// their sandboxes; every other one is absent (typeof is "undefined"), as
// if never added. A name no capability has grants nothing. A context
// without a grant reaches every capability, at no cost; a grant's sandbox
// is built once per distinct set of names. Run, Execute and CodeModeTool
// honour it; [CodeModeTool.Granted] also leaves the rest out of the
// description.
func Grant(ctx context.Context, names ...string) context.Context {
	g := slices.Clone(names)
	slices.Sort(g)
	return context.WithValue(ctx, grantKey{}, slices.Compact(g))
}

type grantKey struct{}

// grantsOf is ctx's grant, sorted, or nil when it has none.
func grantsOf(ctx context.Context) ([]string, bool) {
	g, ok := ctx.Value(grantKey{}).([]string)
	return g, ok
}

// grantState is what a capability table keeps for grants: its subsets.
type grantState struct {
	grantMu sync.Mutex
	granted map[string]*capTable
}

// derivedTable makes a capability table derived from the current one (a
// grant's, fetch's): kept, like every table, until the executor closes,
// since slots' images are keyed by the table.
func (e *Executor) derivedTable(caps []Capability) *capTable {
	t := newCapTable(caps)
	e.capMu.Lock()
	e.capTables = append(e.capTables, t)
	e.capMu.Unlock()
	return t
}

// grantTable is t narrowed to the granted names (t itself when they
// grant all of it): made once per set, freed with the executor.
func (e *Executor) grantTable(t *capTable, names []string) *capTable {
	var keep []Capability
	for _, c := range t.caps {
		if _, ok := slices.BinarySearch(names, c.Name); ok {
			keep = append(keep, c)
		}
	}
	if len(keep) == len(t.caps) {
		return t
	}
	key := strings.Join(names, "\x00")
	t.grantMu.Lock()
	defer t.grantMu.Unlock()
	if g, ok := t.granted[key]; ok {
		return g
	}
	g := e.derivedTable(keep)
	if t.granted == nil {
		t.granted = map[string]*capTable{}
	}
	t.granted[key] = g
	return g
}
