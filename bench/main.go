// Command bench runs codemode's workloads side by side with the raw
// QuickJS-ng floor and the other Go JavaScript engines, interleaved in
// rounds on this machine, and prints one markdown table. It also writes
// results/latest.md and a bar chart, results/latest.svg.
//
//	go run . -rounds 10            # what make bench runs
//	go run . -engines codemode,goja -workloads W1,W3 -rounds 3
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		rounds     = flag.Int("rounds", 10, "interleaved rounds")
		cellTime   = flag.Duration("cell", 20*time.Millisecond, "work per cell per round")
		engineList = flag.String("engines", strings.Join(engineNames, ","), "engines to run")
		workList   = flag.String("workloads", "W1,W2,W3,W3r,W4,W5,W6,W7,W8,tail,overshoot", "workloads to run")
		throughput = flag.Duration("throughput", 3*time.Second, "W6: time per engine")
		memRuns    = flag.Int("memory-runs", 100000, "W7: W1 runs per engine")
		memBudget  = flag.Duration("memory-budget", 20*time.Second, "W7: time cap per engine")
		burstRuns  = flag.Int("w8-runs", 1000, "W8: runs at once")
		burstRnds  = flag.Int("w8-rounds", 5, "W8: bursts per engine")
		tailCalls  = flag.Int("tail-calls", 200000, "tail: W1 calls per engine")
		tailBudget = flag.Duration("tail-budget", 30*time.Second, "tail: time cap per engine")
		overRuns   = flag.Int("overshoot-runs", 2000, "overshoot: runs per engine")
		out        = flag.String("out", "results", "directory for latest.md and latest.svg")
		root       = flag.String("root", "..", "the codemode module (for testdata)")
		memoryOf   = flag.String("memory-child", "", "internal: run W7 for one engine and print its figures")
		cgEngine   = flag.String("callgrind", "", "internal: run W1 -n times on one engine (under valgrind)")
		cgRuns     = flag.Int("n", 100, "internal: runs for -callgrind")
		cgWorkload = flag.String("callgrind-workload", "W1", "internal: the workload -callgrind runs")
	)
	flag.Parse()
	sc, err := loadScripts(*root)
	if err != nil {
		fail(err)
	}
	switch {
	case *memoryOf != "":
		memoryChild(sc, *memoryOf, *memRuns, *memBudget)
		return
	case *cgEngine != "":
		callgrindChild(sc, *cgEngine, *cgWorkload, *cgRuns)
		return
	}
	names := strings.Split(*engineList, ",")
	want := strings.Split(*workList, ",")
	rep := &report{started: time.Now(), rounds: *rounds, engines: names}
	var engines []*engine
	for _, n := range names {
		e, err := newEngine(n, sc)
		if err != nil {
			fail(fmt.Errorf("%s: %w", n, err))
		}
		engines = append(engines, e)
		rep.limits = append(rep.limits, e.limits)
	}
	rep.latency = measure(engines, want, *rounds, *cellTime)
	if slices.Contains(want, "W6") {
		for _, e := range engines {
			rep.throughput = append(rep.throughput, throughputOf(e, *throughput))
		}
	}
	if slices.Contains(want, "W8") {
		rep.bursts, rep.burstRuns = burstsOf(engines, *burstRuns, *burstRnds), *burstRuns
	}
	if slices.Contains(want, "tail") {
		rep.tail, rep.tailCalls = tailOf(engines, *tailCalls, 2000, *tailBudget), *tailCalls
	}
	if slices.Contains(want, "overshoot") {
		rep.overshoot, rep.overRuns = overshootOf(engines, *overRuns), *overRuns
	}
	if slices.Contains(want, "W7") {
		for _, n := range names {
			rep.memory = append(rep.memory, memoryOf2(n, *memRuns, *memBudget, *root))
		}
	}
	for _, e := range engines {
		e.close()
	}
	md := rep.markdown()
	fmt.Print(md)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "latest.md"), []byte(md), 0o644); err != nil {
		fail(err)
	}
	if err := rep.chart(filepath.Join(*out, "latest.svg")); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// cell is one engine on one latency workload.
type cell struct {
	engine string
	w      workload
	run    func() (string, error)
	n      int             // runs per round
	meds   []time.Duration // each round's median
	note   string          // why there is no figure
	// All rounds together: the runs, their wall time, and the process's
	// CPU time meanwhile (every thread's: the collector's and the
	// timers' too, what a service pays).
	runs      int
	wall, cpu time.Duration
}

// mean is the cell's wall time per run over all its rounds.
func (c *cell) mean() time.Duration {
	if c.runs == 0 {
		return 0
	}
	return c.wall / time.Duration(c.runs)
}

// cpuPerRun is the process's CPU time per run over all the cell's rounds.
func (c *cell) cpuPerRun() time.Duration {
	if c.runs == 0 {
		return 0
	}
	return c.cpu / time.Duration(c.runs)
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *cell) median() time.Duration {
	if len(c.meds) == 0 {
		return 0
	}
	return median(c.meds)
}

func median(xs []time.Duration) time.Duration {
	s := slices.Clone(xs)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// measure checks every engine's answer to every latency workload, then
// times them interleaved: each round runs every cell once, and a cell's
// figure is the median of its round medians.
func measure(engines []*engine, want []string, rounds int, budget time.Duration) []*cell {
	var cells []*cell
	for _, w := range workloads {
		if !slices.Contains(want, w.id) {
			continue
		}
		for _, e := range engines {
			run, id := e.runOf(w.id)
			c := &cell{engine: e.name, w: w, run: run}
			cells = append(cells, c)
			if c.run == nil {
				c.note = "n/a: " + e.skip[id]
				continue
			}
			if err := check(c.run, w); err != nil {
				c.note, c.run = "fails: "+oneLine(err.Error()), nil
				continue
			}
			t0 := time.Now()
			if _, err := c.run(); err != nil {
				c.note, c.run = "fails: "+oneLine(err.Error()), nil
				continue
			}
			c.n = min(max(int(budget/(time.Since(t0)+1)), 3), 500)
		}
	}
	for r := 0; r < rounds; r++ {
		fmt.Fprintf(os.Stderr, "round %d/%d\n", r+1, rounds)
		for _, c := range cells {
			if c.run == nil {
				continue
			}
			times := make([]time.Duration, c.n)
			cpu0, wall0 := cpuTime(), time.Now()
			for i := range times {
				t0 := time.Now()
				if _, err := c.run(); err != nil {
					c.note, c.run = "fails: "+oneLine(err.Error()), nil
					break
				}
				times[i] = time.Since(t0)
			}
			if c.run != nil {
				c.wall += time.Since(wall0)
				c.cpu += cpuTime() - cpu0
				c.runs += c.n
				c.meds = append(c.meds, median(times))
			}
		}
	}
	return cells
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// throughputOf runs W1 on every processor for d and returns runs/s.
func throughputOf(e *engine, d time.Duration) float64 {
	run := e.runs["W1"]
	if run == nil {
		return 0
	}
	procs := runtime.GOMAXPROCS(0)
	counts := make([]int, procs)
	stop := time.Now().Add(d)
	done := make(chan struct{})
	for p := range procs {
		go func() {
			defer func() { done <- struct{}{} }()
			for time.Now().Before(stop) {
				if _, err := run(); err != nil {
					return
				}
				counts[p]++
			}
		}()
	}
	for range procs {
		<-done
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	return float64(total) / d.Seconds()
}
