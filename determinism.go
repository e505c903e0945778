//go:build cgo

package codemode

import (
	"context"
	"time"
)

// Determinism fixes, for the runs of a context, what a run would otherwise
// draw from the machine, so that a run can be repeated exactly (a batch
// harness records a run's tool calls and replays them: see cmd/codemode).
//
// Seed seeds the generator behind Math.random and crypto.getRandomValues
// and crypto.randomUUID (a zero Seed is a seed like any other). With Clock
// set, the run's clock is virtual: Date starts at Clock, performance.now()
// near 0 (the web globals read the clock as they load), and both advance
// one microsecond per read of either, so two runs that read the clock
// alike see the same values, and a loop that waits on the clock still
// ends. A zero Clock leaves the real clock. Timers still fire on the real
// clock, in the order of their delays.
//
// A deterministic run costs some 15 µs more to start (its Date is read
// in); Execute programs and tools keep unit images of their own for
// deterministic runs (holding that Date), which other runs never restore.
type Determinism struct {
	Seed  uint64
	Clock time.Time
}

type determinismKey struct{}

// WithDeterminism returns a context whose runs (Run, Execute, Call) are
// deterministic as d says.
func WithDeterminism(ctx context.Context, d Determinism) context.Context {
	return context.WithValue(ctx, determinismKey{}, d)
}

// DeterminismFrom returns the Determinism WithDeterminism put in ctx, if
// any: for a runner that carries it elsewhere (the daemon's client sends
// it with the program).
func DeterminismFrom(ctx context.Context) (Determinism, bool) { return determinismOf(ctx) }

// determinismOf returns the context's Determinism, if it has one.
func determinismOf(ctx context.Context) (Determinism, bool) {
	d, ok := ctx.Value(determinismKey{}).(Determinism)
	return d, ok
}

// splitmix64 spreads a seed over the generator's state words.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// RunStats are what one run measured.
type RunStats struct {
	// Elapsed is the wall time from the call's entry to its return.
	Elapsed time.Duration
	// HostCalls counts the capability and provider calls the program
	// made that reached the host (each sync or async call once, whether
	// it succeeded or not); a governed run's calls answered from its
	// continuation, refused by a policy or decision before they ran, or
	// paused at are not counted.
	HostCalls int
	// PeakMemory is the most engine heap the run held, in bytes,
	// including the sandbox's own (some 110 KiB).
	PeakMemory int64
	// Limits are the limits the run ran under: the executor's, or for a
	// remote run the daemon's grant (a request above its maxima gets them).
	Limits Limits
}
