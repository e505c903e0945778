package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/codemode-go/codemode/batch"
)

// --repeat runs every job n times. The runs are interleaved: the jobs are
// read in chunks (size jobs, or maxChunkCode bytes of code, and at least
// two jobs), and each chunk runs whole, n times over (jobs 1..k, again
// 1..k, ...), so two runs of a job are never adjacent unless it is the
// batch's only job, and a batch of at most size jobs runs in full passes.
// A job's line is written once its last run is done: the first run's
// outcome with a "repeats" field saying whether the runs differed.

// maxChunkCode bounds the code a chunk of --repeat holds.
const maxChunkCode = 16 << 20

// interleave yields each job n times, chunk by chunk, each chunk n times
// over; the int is the run (0 to n-1). With n = 1 it is jobs as they come.
// A full chunk runs once two more jobs came (the next chunk's first two),
// or the input ended (the one job after it joins it): no chunk but the
// batch's only one holds a single job.
func interleave(jobs iter.Seq[batch.Job], n, size int) iter.Seq2[batch.Job, int] {
	return func(yield func(batch.Job, int) bool) {
		if n == 1 {
			for j := range jobs {
				if !yield(j, 0) {
					return
				}
			}
			return
		}
		var chunk, carry []batch.Job
		code := 0
		flush := func() bool {
			for rep := range n {
				for _, j := range chunk {
					if !yield(j, rep) {
						return false
					}
				}
			}
			return true
		}
		for j := range jobs {
			if len(chunk) < max(size, 2) && (code < maxChunkCode || len(chunk) < 2) {
				chunk = append(chunk, j)
				code += len(j.Code)
				continue
			}
			if carry = append(carry, j); len(carry) < 2 {
				continue
			}
			if !flush() {
				return
			}
			chunk, carry = carry, nil
			code = len(chunk[0].Code) + len(chunk[1].Code)
		}
		chunk = append(chunk, carry...)
		flush()
	}
}

// runKey is the Line a run carries through the batch: the job's line and
// the run in one number, so that every run has its own key (for its
// tape, its outcome). With n = 1 it is the line.
func runKey(line, rep, n int) int { return line*n + rep }

// repeated is a job's runs so far.
type repeated struct {
	job      batch.Job     // the first run's, with its line
	first    batch.Outcome // the first run's outcome: the line's
	runs     int
	kinds    map[string]int
	outcomes map[[32]byte]bool // the distinct outcomes, by digest
}

// repeatSet gathers the runs of the jobs in flight.
type repeatSet struct {
	n    int
	jobs map[replayKey]*repeated
}

func newRepeatSet(n int) *repeatSet { return &repeatSet{n: n, jobs: map[replayKey]*repeated{}} }

// add counts a run's outcome; it returns the job once its last run is in.
func (s *repeatSet) add(j batch.Job, o batch.Outcome) *repeated {
	line, rep := j.Line/s.n, j.Line%s.n
	key := replayKey{j.ID, line}
	r := s.jobs[key]
	if r == nil {
		r = &repeated{kinds: map[string]int{}, outcomes: map[[32]byte]bool{}}
		s.jobs[key] = r
	}
	if rep == 0 {
		j.Line = line
		r.job, r.first = j, o
	}
	r.runs++
	r.kinds[o.Kind]++
	r.outcomes[outcomeDigest(o)] = true
	if r.runs < s.n {
		return nil
	}
	delete(s.jobs, key)
	return r
}

// outcomeDigest identifies an outcome by its kind and value: the result,
// or the error's JSON (logs and stats are not compared).
func outcomeDigest(o batch.Outcome) [32]byte {
	h := sha256.New()
	h.Write([]byte(o.Kind))
	h.Write([]byte{0})
	if o.Kind == batch.KindOK {
		h.Write(o.Result)
	} else {
		h.Write(errorJSON(o))
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

func (r *repeated) differed() bool { return len(r.outcomes) > 1 }

// appendTo adds the "repeats" field to a result line:
//
//	"repeats":{"runs":3,"differed":true,"distinct":2,"kinds":{"js":1,"ok":2}}
func (r *repeated) appendTo(line []byte) []byte {
	line = line[:len(line)-2] // "}\n"
	line = append(line, `,"repeats":{"runs":`...)
	line = strconv.AppendInt(line, int64(r.runs), 10)
	line = append(line, `,"differed":`...)
	line = strconv.AppendBool(line, r.differed())
	line = append(line, `,"distinct":`...)
	line = strconv.AppendInt(line, int64(len(r.outcomes)), 10)
	kinds, _ := json.Marshal(r.kinds) // keys sorted
	line = append(line, `,"kinds":`...)
	line = append(line, kinds...)
	return append(line, "}}\n"...)
}

// kindCounts is "js 1, ok 2".
func (r *repeated) kindCounts() string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(r.kinds)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.kinds[k])
	}
	return b.String()
}
