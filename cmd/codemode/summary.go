package main

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/codemode-go/codemode/batch"
)

// replaySet holds the toolbox's view of each job in flight, by id and line.
type replaySet struct {
	mu sync.Mutex
	m  map[replayKey]*job
}

type replayKey struct {
	id   string
	line int
}

func newReplaySet() *replaySet { return &replaySet{m: map[replayKey]*job{}} }

func (r *replaySet) put(id string, line int, j *job) {
	r.mu.Lock()
	r.m[replayKey{id, line}] = j
	r.mu.Unlock()
}

func (r *replaySet) get(id string, line int) *job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[replayKey{id, line}]
}

func (r *replaySet) take(id string, line int) *job {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.m[replayKey{id, line}]
	delete(r.m, replayKey{id, line})
	return j
}

// summary counts outcomes by kind and keeps a latency histogram: memory
// stays flat however many jobs pass.
type summary struct {
	kinds map[string]int
	hist  latencies
	n     int // runs (jobs, unless --repeat)
	// wrote counts the failed runs that may have left writes behind (a
	// write tool's call completed, failed or did not return); wroteIDs
	// names the first maxDiffered of them.
	wrote    int
	wroteIDs []string

	// --repeat
	repeat   int         // runs per job
	jobs     int         // jobs whose runs are all done
	differed []*repeated // the first maxDiffered jobs whose runs differed
	ndiffer  int
}

// maxDiffered bounds the differing jobs the summary names.
const maxDiffered = 20

func newSummary() *summary { return &summary{kinds: map[string]int{}} }

func (s *summary) add(id string, o batch.Outcome) {
	s.n++
	s.kinds[o.Kind]++
	if o.Kind != batch.KindOK && o.Kind != batch.KindPaused && o.Effects.Wrote() {
		s.wrote++
		if len(s.wroteIDs) < maxDiffered {
			s.wroteIDs = append(s.wroteIDs, id)
		}
	}
	if o.Stats.Elapsed > 0 {
		s.hist.add(o.Stats.Elapsed)
	}
}

// addRepeated counts a job whose runs are all done (--repeat).
func (s *summary) addRepeated(r *repeated) {
	s.jobs++
	if !r.differed() {
		return
	}
	s.ndiffer++
	if len(s.differed) < maxDiffered {
		s.differed = append(s.differed, &repeated{job: r.job, kinds: r.kinds, outcomes: r.outcomes})
	}
}

// failed is how many runs failed (a paused job waits for a decision).
func (s *summary) failed() int { return s.n - s.kinds[batch.KindOK] - s.kinds[batch.KindPaused] }

// line is the one-line summary for a stderr that is no terminal.
func (s *summary) line(elapsed time.Duration, interrupted bool) string {
	failed := s.failed()
	msg := fmt.Sprintf("codemode batch: %d jobs, %d failed, %.0f scripts/s in %v", s.n, failed, rate(s.n, elapsed), elapsed.Round(time.Millisecond))
	if p := s.kinds[batch.KindPaused]; p > 0 {
		msg += fmt.Sprintf(" (%d paused for approval: codemode resume)", p)
	}
	if s.wrote > 0 {
		msg += fmt.Sprintf(", %d of the failed left writes behind (their lines' \"effects\" say which)", s.wrote)
	}
	if s.repeat > 1 {
		msg = fmt.Sprintf("codemode batch: %s × %d runs, %d of %d runs failed, %s differed, %.0f scripts/s in %v",
			plural(s.jobs, "job"), s.repeat, failed, s.n, plural(s.ndiffer, "job"), rate(s.n, elapsed), elapsed.Round(time.Millisecond))
	}
	if interrupted {
		msg += " (interrupted: the runs in flight finished)"
	}
	return msg
}

// table is the summary table printed at the end.
func (s *summary) table(elapsed time.Duration) string {
	var b strings.Builder
	kinds := make([]string, 0, len(s.kinds))
	for k := range s.kinds {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if a == batch.KindOK || b == batch.KindOK {
			return boolInt(b == batch.KindOK) - boolInt(a == batch.KindOK)
		}
		return strings.Compare(a, b)
	})
	unit := "jobs"
	if s.repeat > 1 {
		unit = "runs"
	}
	fmt.Fprintf(&b, "%-18s %10s\n", "outcome", unit)
	for _, k := range kinds {
		fmt.Fprintf(&b, "%-18s %10d\n", k, s.kinds[k])
	}
	fmt.Fprintf(&b, "%-18s %10d\n", "total", s.n)
	if s.hist.n > 0 {
		fmt.Fprintf(&b, "latency            p50 %s  p95 %s  p99 %s  max %s\n",
			ms(s.hist.quantile(0.50)), ms(s.hist.quantile(0.95)), ms(s.hist.quantile(0.99)), ms(s.hist.max))
	}
	fmt.Fprintf(&b, "throughput         %.0f scripts/s (%d in %v)\n", rate(s.n, elapsed), s.n, elapsed.Round(time.Millisecond))
	if s.wrote > 0 {
		more := ""
		if s.wrote > len(s.wroteIDs) {
			more = fmt.Sprintf(" and %d more", s.wrote-len(s.wroteIDs))
		}
		fmt.Fprintf(&b, "left writes        %d failed %s left writes behind: %s%s\n", s.wrote, map[bool]string{true: "job", false: "jobs"}[s.wrote == 1],
			strings.Join(s.wroteIDs, ", "), more)
	}
	if s.repeat > 1 {
		fmt.Fprintf(&b, "repeats            %d runs of each job; %d of %d jobs differed\n", s.repeat, s.ndiffer, s.jobs)
		for _, r := range s.differed {
			fmt.Fprintf(&b, "differed           %s: %d outcomes (%s)\n", r.job.ID, len(r.outcomes), r.kindCounts())
		}
		if more := s.ndiffer - len(s.differed); more > 0 {
			fmt.Fprintf(&b, "differed           and %d more (their lines' \"repeats\" say \"differed\": true)\n", more)
		}
	}
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// latencies is a log-linear histogram of durations: 16 buckets per power
// of two of nanoseconds, so a quantile is within 1/16 of the truth.
type latencies struct {
	counts [64 * 16]uint64
	n      uint64
	max    time.Duration
}

func bucketOf(d time.Duration) int {
	v := uint64(max(d, 1))
	e := bits.Len64(v) - 1 // 2^e <= v < 2^(e+1)
	var sub uint64
	if e >= 4 {
		sub = (v >> (e - 4)) & 15
	} else {
		sub = (v << (4 - e)) & 15
	}
	return e*16 + int(sub)
}

func (h *latencies) add(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

// quantile is the upper edge of the bucket holding the q-th duration.
func (h *latencies) quantile(q float64) time.Duration {
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank && c > 0 {
			e, sub := i/16, uint64(i%16)
			upper := (uint64(16) + sub + 1) << e >> 4
			return min(time.Duration(upper), h.max)
		}
	}
	return h.max
}

// progress is the bar on a terminal (or with --progress always).
type progress struct {
	bar *progressbar.ProgressBar
	out io.Writer
}

func newProgress(w io.Writer, mode progressMode, total int) *progress {
	on := mode == "always" || (mode == "auto" && isTerminal(w))
	if !on {
		return &progress{}
	}
	if total < 0 {
		total = -1 // unknown: a spinner
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("jobs"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("scripts"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionUseANSICodes(true),
	)
	return &progress{bar: bar, out: w}
}

func (p *progress) active() bool { return p.bar != nil }

func (p *progress) update(pr batch.Progress) {
	if p.bar == nil {
		return
	}
	if pr.Failed > 0 {
		p.bar.Describe(fmt.Sprintf("jobs (%d failed)", pr.Failed))
	}
	p.bar.Set(pr.Done)
}

func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	p.bar.Finish()
	fmt.Fprintln(p.out)
}
