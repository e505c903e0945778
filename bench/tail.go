package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Figures for latency-sensitive and I/O-bound services: W1's latency
// distribution under two goroutines (tail), how far past a 5 ms deadline
// a runaway script is stopped (overshoot), and W8, a thousand runs at once
// that each await a host call.

// tailFigure is W1's latency distribution for one engine.
type tailFigure struct {
	calls               int
	p50, p99, p999, max time.Duration
	note                string // why there is no figure, or why fewer calls
}

// tailOf runs W1 on every engine from two goroutines, interleaved in
// blocks of block calls, until each made calls calls or spent budget, and
// returns each engine's distribution of single-call times.
func tailOf(engines []*engine, calls, block int, budget time.Duration) []tailFigure {
	figs := make([]tailFigure, len(engines))
	lat := make([][]time.Duration, len(engines))
	spent := make([]time.Duration, len(engines))
	done := make([]bool, len(engines))
	for i, e := range engines {
		if e.runs["W1"] == nil {
			figs[i].note, done[i] = "n/a", true
		}
	}
	for round := 1; slices.Contains(done, false); round++ {
		if round%10 == 1 {
			fmt.Fprintf(os.Stderr, "tail: block %d\n", round)
		}
		for i, e := range engines {
			if done[i] {
				continue
			}
			t0 := time.Now()
			times, err := timedCalls(e.runs["W1"], block)
			spent[i] += time.Since(t0)
			lat[i] = append(lat[i], times...)
			switch {
			case err != nil:
				figs[i].note, done[i] = "fails: "+oneLine(err.Error()), true
			case len(lat[i]) >= calls:
				done[i] = true
			case spent[i] >= budget:
				figs[i].note, done[i] = fmt.Sprintf("%s calls in %v", count(float64(len(lat[i]))), budget), true
			}
		}
	}
	for i := range engines {
		if len(lat[i]) == 0 {
			continue
		}
		s := lat[i]
		sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
		figs[i].calls = len(s)
		figs[i].p50, figs[i].p99, figs[i].p999 = quantile(s, 0.5), quantile(s, 0.99), quantile(s, 0.999)
		figs[i].max = s[len(s)-1]
	}
	return figs
}

// timedCalls makes n calls of run from two goroutines and returns each
// call's time.
func timedCalls(run func() (string, error), n int) ([]time.Duration, error) {
	times := make([]time.Duration, n)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 2 {
				t0 := time.Now()
				if _, err := run(); err != nil {
					errs[g] = err
					return
				}
				times[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return times, nil
}

// quantile is the q-quantile of sorted times (the nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// overFigure is how far past spinDeadline an engine stopped for (;;) {}.
type overFigure struct {
	runs          int
	p50, p99, max time.Duration
	note          string
}

// overshootOf runs every engine's spin runs times, interleaved in blocks
// of 100, and returns the distribution of each call's time past the
// deadline (a call's whole time: making the sandbox included).
func overshootOf(engines []*engine, runs int) []overFigure {
	figs := make([]overFigure, len(engines))
	over := make([][]time.Duration, len(engines))
	for i, e := range engines {
		if e.spin == nil {
			figs[i].note = "n/a: " + e.skip["overshoot"]
		}
	}
	for b := 0; b < runs; b += 100 {
		fmt.Fprintf(os.Stderr, "overshoot: %d/%d\n", b, runs)
		for i, e := range engines {
			if e.spin == nil || figs[i].note != "" {
				continue
			}
			for range min(100, runs-b) {
				t0 := time.Now()
				if err := e.spin(); err != nil {
					figs[i].note = "fails: " + oneLine(err.Error())
					break
				}
				over[i] = append(over[i], time.Since(t0)-spinDeadline)
			}
		}
	}
	for i := range engines {
		s := over[i]
		if figs[i].note != "" || len(s) == 0 {
			continue
		}
		sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
		figs[i] = overFigure{runs: len(s), p50: quantile(s, 0.5), p99: quantile(s, 0.99), max: s[len(s)-1]}
	}
	return figs
}

// burstFigure is W8 for one engine: runs/s of bursts of n runs at once,
// cold (after an idle pause past codemode's one-second trim, as a
// service sees a burst after a lull) and hot (right after another).
type burstFigure struct {
	cold, hot float64
	note      string
}

// burstPause is the idle time before a cold burst: past codemode's trim
// of sandboxes idle for a second (idleRelease), which reaches a sandbox
// between one and two seconds after its run, by the trim timer's pass.
const burstPause = 2500 * time.Millisecond

// burstsOf times rounds pairs of bursts of n runs per engine, interleaved
// (a cold one after burstPause idle, then a hot one at once), and returns
// each engine's median runs/s of each kind.
func burstsOf(engines []*engine, n, rounds int) []burstFigure {
	figs := make([]burstFigure, len(engines))
	cold := make([][]time.Duration, len(engines))
	hot := make([][]time.Duration, len(engines))
	for i, e := range engines {
		if e.burst == nil {
			figs[i].note = "n/a: " + e.skip["W8"]
		}
	}
	for r := range rounds {
		fmt.Fprintf(os.Stderr, "W8: round %d/%d\n", r+1, rounds)
		for i, e := range engines {
			if figs[i].note != "" {
				continue
			}
			time.Sleep(burstPause)
			for _, into := range []*[]time.Duration{&cold[i], &hot[i]} {
				t0 := time.Now()
				failed, err := e.burst(n)
				if err != nil {
					figs[i].note = fmt.Sprintf("fails: %d of %d runs (%s)", failed, n, oneLine(err.Error()))
					break
				}
				*into = append(*into, time.Since(t0))
			}
		}
	}
	for i := range engines {
		if figs[i].note == "" && len(cold[i]) > 0 && len(hot[i]) > 0 {
			figs[i].cold = float64(n) / median(cold[i]).Seconds()
			figs[i].hot = float64(n) / median(hot[i]).Seconds()
		}
	}
	return figs
}

// tailMarkdown renders the tail, overshoot and W8 figures.
func (r *report) tailMarkdown(b *strings.Builder) {
	if len(r.tail) > 0 {
		fmt.Fprintf(b, "\nTail latency: W1 from 2 goroutines, %s calls per engine interleaved in blocks (or what the time cap allowed); "+
			"each call's time.\n\n| engine | calls | p50 | p99 | p99.9 | max |\n|---|---|---|---|---|---|\n", count(float64(r.tailCalls)))
		for i, f := range r.tail {
			if f.calls == 0 {
				fmt.Fprintf(b, "| %s | %s | | | | |\n", r.engines[i], f.note)
				continue
			}
			calls := count(float64(f.calls))
			if f.note != "" {
				calls = f.note
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r.engines[i], calls, dur(f.p50), dur(f.p99), dur(f.p999), dur(f.max))
		}
	}
	if len(r.overshoot) > 0 {
		fmt.Fprintf(b, "\nDeadline overshoot: `for (;;) {}` under a %v deadline, %s runs per engine; a call's time past the deadline "+
			"(making and freeing the sandbox included).\n\n| engine | p50 | p99 | max |\n|---|---|---|---|\n", spinDeadline, count(float64(r.overRuns)))
		for i, f := range r.overshoot {
			if f.note != "" {
				fmt.Fprintf(b, "| %s | %s | | |\n", r.engines[i], f.note)
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", r.engines[i], dur(f.p50), dur(f.p99), dur(f.max))
		}
	}
}

// burstRow renders W8 as two rows of the main table: cold and hot.
func (r *report) burstRow(b *strings.Builder) {
	if len(r.bursts) == 0 {
		return
	}
	for _, kind := range []struct {
		name string
		of   func(burstFigure) float64
	}{
		{fmt.Sprintf("cold (after %v idle)", burstPause), func(f burstFigure) float64 { return f.cold }},
		{"hot (right after another)", func(f burstFigure) float64 { return f.hot }},
	} {
		fmt.Fprintf(b, "| W8 %s runs at once, each awaiting a %v host call, %s |", count(float64(r.burstRuns)), burstLatency, kind.name)
		base := 0.0
		for i, f := range r.bursts {
			if r.engines[i] == "codemode" {
				base = kind.of(f)
			}
		}
		for i, f := range r.bursts {
			switch {
			case f.note != "":
				fmt.Fprintf(b, " %s |", f.note)
			case r.engines[i] == "codemode" || base == 0:
				fmt.Fprintf(b, " **%s runs/s** |", count(kind.of(f)))
			default:
				fmt.Fprintf(b, " %s runs/s (%.2f×) |", count(kind.of(f)), base/kind.of(f))
			}
		}
		b.WriteString("\n")
	}
}
