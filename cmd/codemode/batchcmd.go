package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
)

const batchHelp = `Runs one job per line of IN.jsonl (- for stdin):

  {"id": "a1", "code": "return 1 + 1", "limits": {"deadline": "2s", "memory": "64MiB"}, "providers": ["store"]}

(limits and providers are optional; limits take bytes or sizes like "64MiB",
milliseconds or durations like "2s") and writes one line per job:

  {"id": "a1", "result": 2, "logs": [], "elapsed_ms": 0.21, "host_calls": 0, "peak_memory_bytes": 118272}

or with "error" (the reference's kind-tagged error JSON) instead of "result",
or, with --policy and --key-file, "paused" for a run that stopped at a tool
call needing approval (its continuation: codemode resume -h).
Lines come in input order unless --unordered. A line that is not a job becomes
an error line of kind bad_input naming its line number; nothing is skipped.
--resume skips the ids OUT already holds and appends the rest (ids should be
unique: a repeated one is warned about). A batch that ran exits 0 whatever its
jobs did; --fail-on-error exits 1 when any job failed (for CI). On a terminal
stderr shows a progress bar; at the end a summary table (counts by outcome,
latency percentiles, scripts/s). SIGINT lets the runs in flight finish, writes
them, prints the summary and exits 130; a second SIGINT stops them too.

The tools are ready before the first job starts. A --dispatch-cmd (its
protocol: codemode run -h) is started at once and is ready when it has
answered the first line it reads, a ping:

  {"id": 0, "provider": "codemode", "tool": "ping", "args": []}

(any answer: a program that answers a tool it does not have with an error
needs no change), within --dispatch-start-timeout, or the batch fails (exit 4)
and no job runs. When it dies, the calls it had in flight fail (a capability
error saying it died), so does any call until it is back, and it is
restarted before the next job starts: no job's deadline pays for the wait.
It runs in a process group of its own, killed at the end. --mcp servers
start, and list their tools, before the first job too.

--repeat N, a flakiness check: every job runs N times, interleaved across
the batch (jobs 1..k, then 1..k again, N times; k is 256, or 4 per -j),
and its line, written once its runs are done, is its first run's with

  "repeats": {"runs": 3, "differed": true, "distinct": 2, "kinds": {"js": 1, "ok": 2}}

(runs are compared by kind and value, the result or the error's JSON, not by
logs or stats); the summary names the jobs whose runs differed. A run draws
Math.random, crypto and the clock from the machine, unless --record (every
run of a job gets the job's seed and clock; the tape keeps them and the first
run's calls) or --replay (the tape's seed, clock and answers): then what
still differs is the program's own (with --record, or its live tools'). --resume
takes an output of the same --repeat.

Examples:
  codemode batch -j 8 -o out.jsonl jobs.jsonl
  codemode batch --tools fixtures.json --record tape.jsonl -o out.jsonl jobs.jsonl
  codemode batch --replay tape.jsonl -o again.jsonl jobs.jsonl
  codemode batch --resume -o out.jsonl jobs.jsonl
  codemode batch --repeat 5 --replay tape.jsonl --stable jobs.jsonl
  codemode batch --dispatch-cmd 'python3 tools.py' --providers store --dispatch-start-timeout 1m jobs.jsonl

Exit status: 0 every job has its line (whatever its outcome), 2 bad usage,
4 an output error or a --dispatch-cmd that does not start, 130 interrupted.
`

// progressMode is --progress.
type progressMode string

func cmdBatch(ctx context.Context, stop <-chan struct{}, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("batch", "[flags] IN.jsonl|-", batchHelp, stderr)
	lf, tf, gf := newProgramFlags(fs)
	var wf whereFlags
	wf.register(fs)
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "jobs in flight (raise it when jobs mostly wait on tools)")
	outPath := fs.String("o", "", "write the result lines to this file (default stdout)")
	unordered := fs.Bool("unordered", false, "write lines as jobs finish, not in input order")
	resume := fs.Bool("resume", false, "skip the ids already in -o's file and append the rest")
	stable := fs.Bool("stable", false, "leave out elapsed_ms and peak_memory_bytes (which vary between identical runs)")
	progress := fs.String("progress", "auto", "the progress bar: auto (when stderr is a terminal), always or never")
	repeat := fs.Int("repeat", 1, "run every job N times, interleaved across the batch, and report the jobs whose outcomes differed")
	failOnError := fs.Bool("fail-on-error", false, "exit 1 when any job failed (a CI gate); by default a batch that ran exits 0 whatever its jobs did")
	var tl telemetryFlags
	tl.register(fs, telemetryTimeoutOneShot)
	if code, ok := parseOne(fs, args, "one input file"); !ok {
		return code
	}
	lf.forTools(tf)
	if *jobs < 1 {
		return exitFor(stderr, usagef("-j must be at least 1"))
	}
	if *repeat < 1 {
		return exitFor(stderr, usagef("--repeat must be at least 1"))
	}
	n := *repeat
	if *resume && *outPath == "" {
		return exitFor(stderr, usagef("--resume needs -o: the file whose ids are done"))
	}
	gov, closeTel, err := executorOptions(ctx, gf, &tl, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer closeTel()
	fl, checkOpts, closeWhere, err := wf.open(ctx, gf)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer closeWhere()
	gov = append(gov, checkOpts...)
	pm := progressMode(*progress)
	if pm != "auto" && pm != "always" && pm != "never" {
		return exitFor(stderr, usagef("--progress is auto, always or never"))
	}

	in, total, err := openInput(fs.Arg(0), stdin)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer in.Close()
	done := map[string]bool{}
	var out io.Writer = stdout
	var outFile *os.File
	if *outPath != "" {
		if *resume {
			if done, err = doneIDs(*outPath, n); err != nil {
				return exitFor(stderr, err)
			}
			outFile, err = os.OpenFile(*outPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		} else {
			outFile, err = os.Create(*outPath)
		}
		if err != nil {
			return exitFor(stderr, usagef("-o: %v", err))
		}
		defer outFile.Close()
		out = outFile
	}
	tb, err := tf.open(ctx, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}

	w := newLineWriter(out)
	sum := newSummary()
	sum.repeat = n
	if total >= 0 {
		total = (total - len(done)) * n
	}
	bar := newProgress(stderr, pm, total)
	replays := newReplaySet()
	// prepare gives a run of a job (rep 0 to n-1, its key in Line) its
	// view of the toolbox.
	prepare := func(j batch.Job, rep int) batch.Job {
		real := j.Line
		j.Line = runKey(real, rep, n)
		if j.Err != nil || !tb.taped() {
			return j
		}
		tj, err := tb.forRun(j.ID, j.Providers, rep, j.Determinism)
		if err != nil {
			j.Err = fmt.Errorf("line %d: %v", real, err)
			return j
		}
		j.Determinism = tj.det
		replays.put(j.ID, j.Line, tj)
		return j
	}
	seen := newIDSet()
	read := func(yield func(batch.Job) bool) {
		lr := newLineReader(in, maxLine)
		for ln := 1; ; ln++ {
			raw, err := lr.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !yield(batch.Job{Line: ln, ID: "null", Err: fmt.Errorf("line %d: %v", ln, err)}) || !errors.Is(err, errLineTooLong) {
					return
				}
				continue
			}
			line := bytes.TrimSpace(raw)
			if len(line) == 0 {
				continue
			}
			j := parseJob(line, ln, lf.l)
			if j.Err == nil {
				if first := seen.add(j.ID, ln); first > 0 {
					// Kept (the outcomes are the jobs'), but --resume keys
					// jobs by id: it would take the first for both.
					fmt.Fprintf(stderr, "codemode batch: warning: line %d repeats the id %s of line %d (--resume would skip both once either is done)\n", ln, j.ID, first)
				}
			}
			if j.Err == nil && done[canonicalID(json.RawMessage(j.ID))] {
				continue
			}
			if j.Err == nil && tb.rec != nil && n > 1 {
				det := freshDeterminism() // every run of the job gets it
				j.Determinism = &det
			}
			if !yield(j) {
				return
			}
		}
	}
	seq := func(yield func(batch.Job) bool) {
		for j, rep := range interleave(read, n, max(256, 4**jobs)) {
			if !yield(prepare(j, rep)) {
				return
			}
		}
	}
	opts := batch.Options{
		Concurrency: *jobs, Unordered: *unordered, Limits: lf.l, Providers: tb.providers, Stop: stop,
		Dispatch: tb.serve, Executor: gov, Remote: fl.engines(),
	}
	if tb.taped() || tb.proc != nil || len(tb.ups) > 0 {
		// Called as a job starts, before its deadline runs: the hold for
		// a restarting tool server is charged to no job.
		opts.DispatchFor = func(j batch.Job) codemode.DispatchFunc {
			tb.hold(ctx, j.Providers)
			if tj := replays.get(j.ID, j.Line); tj != nil {
				return tj.dispatch
			}
			return nil
		}
	}
	reps := newRepeatSet(n)
	if bar.active() {
		opts.Progress = bar.update
	}
	start := time.Now()
	status := exitOK
	var line []byte
	for j, o := range batch.Run(ctx, seq, opts) {
		if tj := replays.take(j.ID, j.Line); tj != nil && tj.replay != nil {
			if msg := tj.replay.divergence(); msg != "" {
				o = diverged(o, msg)
			}
		}
		sum.add(string(j.ID), o)
		if n > 1 {
			r := reps.add(j, o)
			if r == nil {
				continue // more runs to come
			}
			sum.addRepeated(r)
			line = resultLine(line[:0], r.job, r.first, *stable)
			line = r.appendTo(line)
		} else {
			line = resultLine(line[:0], j, o, *stable)
		}
		if err := w.write(line); err != nil {
			fmt.Fprintf(stderr, "codemode: writing results: %v\n", err)
			status = exitInternal
			break
		}
	}
	if err := w.flush(); err != nil && status == exitOK {
		fmt.Fprintf(stderr, "codemode: writing results: %v\n", err)
		status = exitInternal
	}
	if err := tb.close(); err != nil && status == exitOK {
		fmt.Fprintf(stderr, "codemode: %v\n", err)
		status = exitInternal
	}
	bar.finish()
	interrupted := ctx.Err() != nil || isClosed(stop)
	if !bar.active() {
		fmt.Fprintln(stderr, sum.line(time.Since(start), interrupted))
	}
	fmt.Fprint(stderr, sum.table(time.Since(start)))
	if interrupted && status == exitOK {
		return exitInterrupted
	}
	if *failOnError && status == exitOK && sum.failed() > 0 {
		return exitScript
	}
	return status
}

// plural is "1 run", "3 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// times is "once", "3 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

// maxLine bounds one input line (a var for the tests).
var maxLine = 64 << 20

func isClosed(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// openInput opens the jobs; for a regular file it also counts its lines
// (the progress bar's total; -1 when unknown).
func openInput(path string, stdin io.Reader) (io.ReadCloser, int, error) {
	if path == "-" {
		return io.NopCloser(stdin), -1, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, usagef("%v", err)
	}
	n, err := countLines(f)
	if err != nil {
		f.Close()
		return nil, 0, usagef("%v", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, 0, usagef("%v", err)
	}
	return f, n, nil
}

// countLines counts the non-blank lines of r (an overlong one too).
func countLines(r io.Reader) (int, error) {
	lr := newLineReader(r, maxLine)
	n := 0
	for {
		line, err := lr.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			return n, err
		}
		if err != nil || len(bytes.TrimSpace(line)) > 0 {
			n++
		}
	}
}

// jobLine is one input line.
type jobLine struct {
	ID        json.RawMessage `json:"id"` // jsonv2 fills a RawMessage as it is in the line
	Code      *string         `json:"code"`
	Limits    *jobLimits      `json:"limits"`
	Providers []string        `json:"providers"`
}

// parseJob reads one line; a line that is no job becomes a job with Err
// (its id kept when it had one).
func parseJob(line []byte, n int, base codemode.Limits) batch.Job {
	j := batch.Job{Line: n, ID: "null"}
	var l jobLine
	if err := jsonv2.Unmarshal(line, &l, jsonv2.RejectUnknownMembers(true)); err != nil {
		var loose struct {
			ID jsontext.Value `json:"id"`
		}
		if jsonv2.Unmarshal(line, &loose) == nil && validID(json.RawMessage(loose.ID)) {
			j.ID = canonicalID(json.RawMessage(loose.ID))
		}
		j.Err = fmt.Errorf("line %d: not a job: %v", n, err)
		return j
	}
	if !validID(l.ID) {
		j.Err = fmt.Errorf("line %d: the job has no \"id\" (a string or a number)", n)
		return j
	}
	j.ID = canonicalID(l.ID)
	if l.Code == nil {
		j.Err = fmt.Errorf("line %d: the job has no \"code\"", n)
		return j
	}
	j.Code = *l.Code
	j.Providers = l.Providers
	if l.Limits != nil {
		lim, err := l.Limits.apply(base)
		if err != nil {
			j.Err = fmt.Errorf("line %d: %v", n, err)
			return j
		}
		j.Limits = &lim
	}
	return j
}

// validID is a string or number id.
func validID(raw json.RawMessage) bool {
	if plainID(raw) {
		return true
	}
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// doneIDs reads the ids of an earlier run's output, cutting a last line
// the killed run left unfinished; the output must be of the same --repeat
// (its lines' "repeats" say).
func doneIDs(path string, repeat int) (map[string]bool, error) {
	done := map[string]bool{}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, usagef("--resume: %v", err)
	}
	defer f.Close()
	// Keep every complete line; the last one only if it is a result (a
	// kill mid-write leaves a partial line, with or without its end).
	var good, lastStart int64
	lastOK := true
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a partial line: cut below
		}
		if err != nil {
			return nil, usagef("--resume: %v", err)
		}
		var l struct {
			ID      json.RawMessage `json:"id"`
			Repeats *struct {
				Runs int `json:"runs"`
			} `json:"repeats"`
		}
		lastOK = json.Unmarshal(line, &l) == nil
		if lastOK && validID(l.ID) {
			runs := 1
			if l.Repeats != nil {
				runs = l.Repeats.Runs
			}
			if runs != repeat {
				return nil, usagef("--resume: %s:%d holds the outcome of %s of its job and this batch runs each job %s (--repeat): resume with --repeat %d, or write to another -o",
					path, n, plural(runs, "run"), times(repeat), runs)
			}
			done[canonicalID(l.ID)] = true
		}
		lastStart = good
		good += int64(len(line))
	}
	if !lastOK {
		good = lastStart
	}
	if err := f.Truncate(good); err != nil {
		return nil, usagef("--resume: %v", err)
	}
	return done, nil
}

// appendEffects appends `,"effects":` and the outcome's ledger to dst
// when the program failed (whether a retry can repeat a write: "no tool
// ran" too), as every surface shows it; stable drops the ledger's times.
func appendEffects(dst []byte, o batch.Outcome, stable bool) []byte {
	eff := o.Effects
	if o.Kind == batch.KindOK || o.Kind == batch.KindPaused || o.Kind == batch.KindBadInput {
		return dst
	}
	if stable && eff != nil {
		c := *eff
		c.Calls = slices.Clone(c.Calls)
		for i := range c.Calls {
			c.Calls[i].Elapsed = 0
		}
		eff = &c
	}
	j, _ := eff.MarshalJSON()
	return append(append(dst, `,"effects":`...), j...)
}

// appendTail appends what follows an outcome's result, pause or error, in
// a batch line and in codemode run's failure: its logs, the diagnostics a
// warn-mode check saw, and its effects.
func appendTail(dst []byte, o batch.Outcome, stable bool) []byte {
	dst = append(dst, `,"logs":`...)
	if len(o.Logs) == 0 {
		dst = append(dst, "[]"...)
	} else {
		l, _ := json.Marshal(o.Logs)
		dst = append(dst, l...)
	}
	if len(o.Diagnostics) > 0 {
		d, _ := json.Marshal(o.Diagnostics)
		dst = append(dst, `,"diagnostics":`...)
		dst = append(dst, d...)
	}
	return appendEffects(dst, o, stable)
}

// resultLine appends one output line to dst.
func resultLine(dst []byte, j batch.Job, o batch.Outcome, stable bool) []byte {
	dst = append(dst, `{"id":`...)
	dst = append(dst, j.ID...)
	if o.Kind == batch.KindBadInput && j.Line > 0 {
		dst = append(dst, `,"line":`...)
		dst = strconv.AppendInt(dst, int64(j.Line), 10)
	}
	switch {
	case o.Kind == batch.KindOK:
		dst = append(dst, `,"result":`...)
		dst = append(dst, o.Result...)
	case o.Paused != nil:
		dst = append(dst, `,"paused":`...)
		dst = append(dst, pausedObject(o.Paused)...)
	default:
		dst = append(dst, `,"error":`...)
		dst = append(dst, errorJSON(o)...)
	}
	dst = appendTail(dst, o, stable)
	if !stable {
		dst = append(dst, `,"elapsed_ms":`...)
		dst = strconv.AppendFloat(dst, float64(o.Stats.Elapsed.Microseconds())/1000, 'f', 3, 64)
	}
	dst = append(dst, `,"host_calls":`...)
	dst = strconv.AppendInt(dst, int64(o.Stats.HostCalls), 10)
	if !stable {
		dst = append(dst, `,"peak_memory_bytes":`...)
		dst = strconv.AppendInt(dst, o.Stats.PeakMemory, 10)
	}
	return append(dst, "}\n"...)
}

// lineWriter buffers result lines and flushes them at least every 100 ms
// (a killed batch loses at most that much, and --resume reruns it).
type lineWriter struct {
	w    *bufio.Writer
	last time.Time
}

func newLineWriter(w io.Writer) *lineWriter {
	return &lineWriter{w: bufio.NewWriterSize(w, 64<<10), last: time.Now()}
}

func (lw *lineWriter) write(line []byte) error {
	if _, err := lw.w.Write(line); err != nil {
		return err
	}
	if time.Since(lw.last) > 100*time.Millisecond {
		return lw.flush()
	}
	return nil
}

func (lw *lineWriter) flush() error {
	lw.last = time.Now()
	return lw.w.Flush()
}

// idSet remembers the jobs' ids to warn about a repeated one: a 64-bit
// hash of each (a batch streams its jobs; twelve bytes a job, not the ids
// themselves), for the first maxIDs jobs. Two ids of a batch share a hash
// with odds of about n²/2⁶⁵ (2.7e-8 for a million jobs).
type idSet struct {
	seed  maphash.Seed
	first map[uint64]int32
}

// maxIDs bounds the ids an idSet remembers (some 16 MiB).
const maxIDs = 1 << 20

func newIDSet() *idSet { return &idSet{seed: maphash.MakeSeed(), first: map[uint64]int32{}} }

// add records id first seen on line ln, and returns the line it was first
// seen on if it was, else 0.
func (s *idSet) add(id string, ln int) int {
	h := maphash.String(s.seed, id)
	if first, ok := s.first[h]; ok {
		return int(first)
	}
	if len(s.first) < maxIDs && ln <= math.MaxInt32 {
		s.first[h] = int32(ln)
	}
	return 0
}
