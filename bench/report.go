package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// report gathers one run of the suite.
type report struct {
	started    time.Time
	rounds     int
	engines    []string
	limits     [][3]string
	latency    []*cell
	throughput []float64   // W6, per engine
	memory     []memFigure // W7, per engine
	bursts     []burstFigure
	burstRuns  int
	tail       []tailFigure
	tailCalls  int
	overshoot  []overFigure
	overRuns   int
}

// memFigure is W7 for one engine, measured in a process of its own.
type memFigure struct {
	Runs        int     `json:"runs"`
	HeapPerCall float64 `json:"heap_per_call"` // Go heap bytes allocated per W1 call
	PeakRSS     float64 `json:"peak_rss"`      // MiB, the process's high-water mark
	RSS10       float64 `json:"rss_10"`        // MiB after 10 % of the runs
	RSSEnd      float64 `json:"rss_end"`       // MiB after all of them
	Err         string  `json:"err,omitempty"`
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## codemode against peers\n\n")
	fmt.Fprintf(&b, "%s, %d CPUs (GOMAXPROCS %d), %s, %s. Every call gets a fresh sandbox; %d interleaved rounds; "+
		"each time is the median of the rounds' medians, and (×) is that time relative to codemode's "+
		"(above 1 is slower than codemode). Limits: %d MiB memory, %d KiB stack, %v deadline where the engine "+
		"supports them (see the last table).\n\n",
		r.started.UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuName(), runtime.Version(),
		r.rounds, memoryLimit>>20, stackLimit>>10, deadline)
	r.tableHead(&b)
	for _, w := range workloads {
		row := r.row(w.id)
		if row == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s %s |", w.id, w.title)
		base := row[0].median()
		for _, c := range row {
			if c.engine == "codemode" {
				base = c.median()
			}
		}
		for _, c := range row {
			switch {
			case c.note != "":
				fmt.Fprintf(&b, " %s |", c.note)
			case c.engine == "codemode" || base == 0:
				fmt.Fprintf(&b, " **%s** |", dur(c.median()))
			default:
				fmt.Fprintf(&b, " %s (%.2f×) |", dur(c.median()), float64(c.median())/float64(base))
			}
		}
		b.WriteString("\n")
	}
	if len(r.throughput) > 0 {
		fmt.Fprintf(&b, "| W6 throughput of W1 on %d cores |", runtime.GOMAXPROCS(0))
		base := r.throughput[0]
		for i, t := range r.throughput {
			if r.engines[i] == "codemode" {
				base = t
			}
		}
		for i, t := range r.throughput {
			switch {
			case t == 0:
				b.WriteString(" n/a |")
			case r.engines[i] == "codemode":
				fmt.Fprintf(&b, " **%s/s** |", count(t))
			default:
				fmt.Fprintf(&b, " %s/s (%.2f×) |", count(t), base/t)
			}
		}
		b.WriteString("\n")
	}
	if len(r.memory) > 0 {
		rows := []struct {
			title string
			cell  func(m memFigure) string
		}{
			{"W7 Go heap allocated per W1 call", func(m memFigure) string { return bytes(m.HeapPerCall) }},
			{"W7 peak RSS of a process running W1", func(m memFigure) string { return fmt.Sprintf("%.1f MiB", m.PeakRSS) }},
			{"W7 RSS from 10 % to 100 % of the W1 runs", func(m memFigure) string {
				return fmt.Sprintf("%.1f → %.1f MiB (%s runs)", m.RSS10, m.RSSEnd, count(float64(m.Runs)))
			}},
		}
		for _, row := range rows {
			fmt.Fprintf(&b, "| %s |", row.title)
			for _, m := range r.memory {
				if m.Err != "" {
					fmt.Fprintf(&b, " fails: %s |", oneLine(m.Err))
					continue
				}
				fmt.Fprintf(&b, " %s |", row.cell(m))
			}
			b.WriteString("\n")
		}
	}
	r.burstRow(&b)
	r.meanMarkdown(&b)
	r.tailMarkdown(&b)
	b.WriteString("\nLimits each engine enforces:\n\n| engine | memory | stack | deadline |\n|---|---|---|---|\n")
	for i, e := range r.engines {
		l := r.limits[i]
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", e, l[0], l[1], l[2])
	}
	return b.String()
}

// row returns the cells of one workload, in engine order, or nil.
func (r *report) row(id string) []*cell {
	var row []*cell
	for _, c := range r.latency {
		if c.w.id == id {
			row = append(row, c)
		}
	}
	return row
}

func dur(d time.Duration) string {
	us := float64(d) / 1e3
	switch {
	case us >= 1000:
		return fmt.Sprintf("%.2f ms", us/1000)
	case us >= 100:
		return fmt.Sprintf("%.0f µs", us)
	default:
		return fmt.Sprintf("%.1f µs", us)
	}
}

func count(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func bytes(x float64) string {
	switch {
	case x >= 1<<20:
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	case x >= 1<<10:
		return fmt.Sprintf("%.1f KiB", x/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", x)
	}
}

func cpuName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// chart draws the latency workloads as grouped bars on a log scale.
func (r *report) chart(path string) error {
	p := plot.New()
	p.Title.Text = "Time per call, fresh sandbox each (lower is better)"
	p.Y.Label.Text = "time per call (log scale)"
	var names []string
	for _, w := range workloads {
		if r.row(w.id) != nil {
			names = append(names, w.id)
		}
	}
	if len(names) == 0 {
		return nil
	}
	const chartW, chartH = 10 * vg.Inch, 5 * vg.Inch
	width := chartW * 0.8 / vg.Length(len(names)*(len(r.engines)+1))
	top := 0.0
	for i, e := range r.engines {
		vals := make(plotter.Values, len(names))
		for j, id := range names {
			if c := r.row(id)[i]; c.note == "" && c.median() > 0 {
				// Heights are log10 of µs, so bars start at 1 µs.
				vals[j] = math.Max(math.Log10(float64(c.median())/1e3), 0)
				top = math.Max(top, vals[j])
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = width * vg.Length(float64(i)-float64(len(r.engines)-1)/2)
		p.Add(bars)
		p.Legend.Add(e, bars)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(40)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min, p.Y.Max = 0, math.Ceil(top)+1.2 // headroom for the legend
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{
		{Value: 0, Label: "1 µs"}, {Value: 1, Label: "10 µs"}, {Value: 2, Label: "100 µs"},
		{Value: 3, Label: "1 ms"}, {Value: 4, Label: "10 ms"}, {Value: 5, Label: "100 ms"},
	})
	return p.Save(chartW, chartH, path)
}

// memoryOf2 runs W7 for one engine in a child process, so each engine's
// RSS is its own.
func memoryOf2(name string, runs int, budget time.Duration, root string) memFigure {
	cmd := exec.Command(os.Args[0], "-memory-child", name, "-memory-runs", strconv.Itoa(runs),
		"-memory-budget", budget.String(), "-root", root)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return memFigure{Err: err.Error()}
	}
	var m memFigure
	if err := json.Unmarshal(out, &m); err != nil {
		return memFigure{Err: err.Error()}
	}
	return m
}

// memoryChild is W7 inside the child: up to runs W1 calls within budget.
func memoryChild(sc *scripts, name string, runs int, budget time.Duration) {
	emit := func(m memFigure) {
		b, _ := json.Marshal(m)
		fmt.Println(string(b))
	}
	e, err := newEngine(name, sc)
	if err != nil {
		emit(memFigure{Err: err.Error()})
		return
	}
	run := e.runs["W1"]
	if _, err := run(); err != nil {
		emit(memFigure{Err: err.Error()})
		return
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	stop := time.Now().Add(budget)
	var samples []float64 // RSS every 1,000 runs
	n := 0
	for n < runs && time.Now().Before(stop) {
		if _, err := run(); err != nil {
			emit(memFigure{Err: err.Error()})
			return
		}
		if n++; n%1000 == 0 {
			samples = append(samples, procStatus("VmRSS"))
		}
	}
	runtime.ReadMemStats(&m1)
	fig := memFigure{Runs: n, HeapPerCall: float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n),
		PeakRSS: procStatus("VmHWM"), RSSEnd: procStatus("VmRSS")}
	fig.RSS10 = fig.RSSEnd
	if len(samples) > 0 {
		fig.RSS10 = samples[len(samples)/10]
	}
	e.close()
	emit(fig)
}

// procStatus reads a kB field of /proc/self/status, in MiB.
func procStatus(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return kb / 1024
		}
	}
	return 0
}

// callgrindChild runs W1 n times on one engine, for instruction counts.
func callgrindChild(sc *scripts, name, workload string, n int) {
	deadline = time.Minute // counts, not times: the deadline must never decide
	e, err := newEngine(name, sc)
	if err != nil {
		fail(err)
	}
	run, _ := e.runOf(workload)
	if run == nil {
		fail(fmt.Errorf("engine %s has no workload %s", name, workload))
	}
	for i := 0; i < n; i++ {
		if _, err := run(); err != nil {
			fail(err)
		}
	}
	e.close()
}

// meanMarkdown renders what a service sees of each latency workload: the
// mean wall time per run over all rounds (the collector's pauses and the
// timers' wake-ups included, which a median leaves out), and the process's
// CPU time per run (every thread's).
func (r *report) meanMarkdown(b *strings.Builder) {
	if len(r.latency) == 0 {
		return
	}
	b.WriteString("\nMean and CPU per run: the latency workloads' wall time per run over all rounds (a mean, so " +
		"collections and timer wake-ups count), then the process's CPU time per run while the cell ran (every " +
		"thread's: a collection another engine's garbage started is charged to whichever cell it runs beside).\n\n")
	r.tableHead(b)
	for _, w := range workloads {
		row := r.row(w.id)
		if row == nil {
			continue
		}
		fmt.Fprintf(b, "| %s |", w.id)
		for _, c := range row {
			if c.note != "" || c.runs == 0 {
				b.WriteString(" |")
				continue
			}
			fmt.Fprintf(b, " %s mean, %s CPU |", dur(c.mean()), dur(c.cpuPerRun()))
		}
		b.WriteString("\n")
	}
}

// tableHead writes the head of a table with a column per engine.
func (r *report) tableHead(b *strings.Builder) {
	b.WriteString("| workload | " + strings.Join(r.engines, " | ") + " |\n")
	b.WriteString("|---" + strings.Repeat("|---", len(r.engines)) + "|\n")
}
