package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode"
)

// A tape is JSON lines. Each recorded job has a header line
//
//	{"job":"<id>","seed":<uint64>,"clock":"<RFC 3339>","providers":["store"]}
//
// and one line per tool call, in the order the calls reached the dispatch:
//
//	{"job":"<id>","call":<n>,"provider":"store","tool":"get","args":[1],"answer":"{\"result\":...}"}
//	{"job":"<id>","call":<n>,"provider":"store","tool":"get","args":[2],"failure":"text"}
//
// answer is the dispatch's envelope as it came; failure a Go error's text.
// The seed and the clock make the run repeatable (codemode.Determinism),
// so a replay computes what the recording did and makes the same calls.
type tapeLine struct {
	Job       json.RawMessage `json:"job"`
	Seed      *uint64         `json:"seed,omitempty"`
	Clock     string          `json:"clock,omitempty"`
	Providers []string        `json:"providers,omitempty"`
	Call      *int64          `json:"call,omitempty"`
	Provider  string          `json:"provider,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	Answer    *string         `json:"answer,omitempty"`
	Failure   *string         `json:"failure,omitempty"`
}

// recorder writes a tape.
type recorder struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	err error
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usagef("--record: %v", err)
	}
	return &recorder{f: f, w: bufio.NewWriter(f)}, nil
}

func (r *recorder) write(l tapeLine) {
	b, err := json.Marshal(l)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		b = append(b, '\n')
		_, err = r.w.Write(b)
	}
	if err != nil && r.err == nil {
		r.err = err
	}
}

func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	if err := r.f.Close(); err != nil && r.err == nil {
		r.err = err
	}
	if r.err != nil {
		return fmt.Errorf("--record: %v", r.err)
	}
	return nil
}

// freshDeterminism is a recorded run's: a random seed, the current time.
func freshDeterminism() codemode.Determinism {
	var b [8]byte
	rand.Read(b[:])
	return codemode.Determinism{Seed: binary.LittleEndian.Uint64(b[:]), Clock: time.Now().UTC()}
}

// start writes a job's header and returns its recording dispatch.
func (r *recorder) start(id string, det codemode.Determinism, providers []string, serve codemode.DispatchFunc) codemode.DispatchFunc {
	seed := det.Seed
	r.write(tapeLine{Job: json.RawMessage(id), Seed: &seed, Clock: det.Clock.Format(time.RFC3339Nano), Providers: providers})
	var n atomic.Int64
	return func(ctx context.Context, provider, tool, args string) (string, error) {
		answer, err := serve(ctx, provider, tool, args)
		call := n.Add(1)
		l := tapeLine{Job: json.RawMessage(id), Call: &call, Provider: provider, Tool: tool, Args: json.RawMessage(args)}
		if err != nil {
			msg := err.Error()
			l.Failure = &msg
		} else {
			l.Answer = &answer
		}
		r.write(l)
		return answer, err
	}
}

// tape is a recording read back, by job.
type tape struct {
	jobs map[string]*tapeJob
}

type tapeJob struct {
	det       codemode.Determinism
	providers []string
	calls     []tapeLine
}

func readTape(path string) (*tape, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--replay: %v", err)
	}
	defer f.Close()
	t := &tape{jobs: map[string]*tapeJob{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for n := 1; sc.Scan(); n++ {
		var l tapeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || len(l.Job) == 0 {
			return nil, usagef("--replay %s:%d: not a tape line", path, n)
		}
		id := canonicalID(l.Job)
		j := t.jobs[id]
		switch {
		case l.Seed != nil:
			if j != nil {
				return nil, usagef("--replay %s:%d: job %s is recorded twice", path, n, id)
			}
			clock, err := time.Parse(time.RFC3339Nano, l.Clock)
			if err != nil {
				return nil, usagef("--replay %s:%d: clock: %v", path, n, err)
			}
			t.jobs[id] = &tapeJob{det: codemode.Determinism{Seed: *l.Seed, Clock: clock}, providers: l.Providers}
		case l.Call != nil && j != nil && (l.Answer == nil) != (l.Failure == nil):
			l.Args = canonicalJSON(l.Args)
			j.calls = append(j.calls, l)
		default:
			return nil, usagef("--replay %s:%d: a call before its job's header, or neither answer nor failure", path, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usagef("--replay %s: %v", path, err)
	}
	return t, nil
}

// providerNames is every provider a recorded job used.
func (t *tape) providerNames() []string {
	var names []string
	for _, j := range t.jobs {
		for _, p := range j.providers {
			if !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
	}
	slices.Sort(names)
	return names
}

// errNotRecorded is a job the tape does not have.
var errNotRecorded = errors.New("the tape has no such job")

// start begins replaying a job.
func (t *tape) start(id string) (*jobReplay, error) {
	j := t.jobs[canonicalID(json.RawMessage(id))]
	if j == nil {
		return nil, fmt.Errorf("%w %s", errNotRecorded, id)
	}
	r := &jobReplay{job: j, det: j.det, used: make([]bool, len(j.calls))}
	return r, nil
}

// jobReplay serves one run's calls from its recording: each call gets the
// first unused recorded call with the same provider, tool and arguments
// (so calls that overlap may reach the dispatch in any order), and a call
// the tape does not have diverges the run.
type jobReplay struct {
	job      *tapeJob
	det      codemode.Determinism
	mu       sync.Mutex
	used     []bool
	diverged string
}

func (r *jobReplay) dispatch(_ context.Context, provider, tool, args string) (string, error) {
	want := canonicalJSON(json.RawMessage(args))
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.job.calls {
		if r.used[i] || c.Provider != provider || c.Tool != tool || !jsonEqual(c.Args, want) {
			continue
		}
		r.used[i] = true
		if c.Failure != nil {
			return "", errors.New(*c.Failure)
		}
		return *c.Answer, nil
	}
	msg := fmt.Sprintf("the program called %s.%s(%s), which the tape does not have", provider, tool, args)
	if r.diverged == "" {
		r.diverged = msg
	}
	return "", errors.New("replay diverged: " + msg)
}

// divergence is why the run diverged from its tape, or "".
func (r *jobReplay) divergence() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.diverged != "" {
		return r.diverged
	}
	for i, c := range r.job.calls {
		if !r.used[i] {
			return fmt.Sprintf("the program did not make the recorded call %s.%s(%s)", c.Provider, c.Tool, c.Args)
		}
	}
	return ""
}

// canonicalID is a job id as the tape and the resume set compare it:
// its compact JSON (a plain one as it is).
func canonicalID(id json.RawMessage) string {
	if plainID(id) {
		return string(id)
	}
	return string(canonicalJSON(id))
}

// plainID reports an id that is its own compact JSON: a string without
// escapes or control characters, or an integer without a sign or zeros
// in front.
func plainID(id json.RawMessage) bool {
	n := len(id)
	if n >= 2 && id[0] == '"' && id[n-1] == '"' {
		for _, c := range id[1 : n-1] {
			if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				return false
			}
		}
		return true
	}
	if n == 0 || n > 15 || (id[0] == '0' && n > 1) {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// canonicalJSON compacts JSON (unchanged if it is not JSON).
func canonicalJSON(b json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}
