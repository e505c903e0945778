//go:build cgo

package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
)

func jobsOf(codes ...string) func(func(batch.Job) bool) {
	return func(yield func(batch.Job) bool) {
		for i, c := range codes {
			if !yield(batch.Job{ID: fmt.Sprint(i), Code: c}) {
				return
			}
		}
	}
}

// TestRunOrdered: outcomes in input order, each of its kind, with stats
// and logs; progress after each.
func TestRunOrdered(t *testing.T) {
	var codes []string
	for i := range 40 {
		switch i % 4 {
		case 0:
			codes = append(codes, fmt.Sprintf("console.log('n', %d); return %d", i, i))
		case 1:
			codes = append(codes, "throw new Error('x')")
		case 2:
			codes = append(codes, fmt.Sprintf("await new Promise((r) => setTimeout(r, %d)); return %d", 40-i, i))
		case 3:
			codes = append(codes, "return await store.get(1)")
		}
	}
	var seen []batch.Progress
	opts := batch.Options{Concurrency: 8, Providers: []codemode.Provider{{Name: "store"}},
		Dispatch: func(context.Context, string, string, string) (string, error) { return `{"result":"got"}`, nil },
		Progress: func(p batch.Progress) { seen = append(seen, p) }}
	i := 0
	for j, o := range batch.Run(context.Background(), jobsOf(codes...), opts) {
		require.Equal(t, fmt.Sprint(i), j.ID)
		switch i % 4 {
		case 0:
			assert.Equal(t, batch.KindOK, o.Kind)
			assert.Equal(t, fmt.Sprint(i), string(o.Result))
			assert.Equal(t, []string{fmt.Sprintf("n %d", i)}, o.Logs)
		case 1:
			assert.Equal(t, "js", o.Kind)
			require.NotNil(t, o.Err)
			assert.Contains(t, o.Err.Message, "Error: x")
		case 2:
			assert.Equal(t, batch.KindOK, o.Kind)
		case 3:
			assert.Equal(t, batch.KindOK, o.Kind)
			assert.Equal(t, `"got"`, string(o.Result))
			assert.Equal(t, 1, o.Stats.HostCalls)
		}
		assert.Positive(t, o.Stats.Elapsed)
		i++
	}
	assert.Equal(t, 40, i)
	require.Len(t, seen, 40)
	assert.Equal(t, 40, seen[39].Done)
	assert.Equal(t, 10, seen[39].Failed)
}

// TestRunUnordered: every job once; a slow first job does not hold the
// others back.
func TestRunUnordered(t *testing.T) {
	codes := []string{"await new Promise((r) => setTimeout(r, 300)); return 'slow'"}
	for range 20 {
		codes = append(codes, "return 'fast'")
	}
	var order []string
	for j, o := range batch.Run(context.Background(), jobsOf(codes...), batch.Options{Concurrency: 4, Unordered: true}) {
		require.Equal(t, batch.KindOK, o.Kind)
		order = append(order, j.ID)
	}
	require.Len(t, order, 21)
	assert.NotEqual(t, "0", order[0], "the slow job came first though others finished")
	slices.Sort(order)
	assert.Equal(t, 21, len(slices.Compact(order)))
}

// TestRunJobs: per-job limits (an executor per set), bad input, unknown
// providers, and a determinism per job.
func TestRunJobs(t *testing.T) {
	tight := codemode.Limits{Deadline: 30 * time.Millisecond}
	roomy := codemode.Limits{Deadline: 5 * time.Second}
	jobs := func(yield func(batch.Job) bool) {
		_ = yield(batch.Job{ID: "tight", Code: "while (true) {}", Limits: &tight}) &&
			yield(batch.Job{ID: "roomy", Code: "return 1", Limits: &roomy}) &&
			yield(batch.Job{ID: "bad", Line: 3, Err: errors.New("line 3: not a job")}) &&
			yield(batch.Job{ID: "who", Code: "return 1", Providers: []string{"nobody"}}) &&
			yield(batch.Job{ID: "name", Code: "return 1", Providers: []string{"store"}}) &&
			yield(batch.Job{ID: "det", Code: "return [Math.random(), Date.now()]", Determinism: &codemode.Determinism{Seed: 1, Clock: time.Unix(1, 0)}}) &&
			yield(batch.Job{ID: "det2", Code: "return [Math.random(), Date.now()]", Determinism: &codemode.Determinism{Seed: 1, Clock: time.Unix(1, 0)}}) &&
			yield(batch.Job{ID: "badlimits", Code: "return 1", Limits: &codemode.Limits{Memory: -1}})
	}
	got := map[string]batch.Outcome{}
	for j, o := range batch.Run(context.Background(), jobs, batch.Options{Providers: []codemode.Provider{{Name: "store"}}}) {
		got[j.ID] = o
	}
	require.Len(t, got, 8)
	assert.Equal(t, "timeout", got["tight"].Kind)
	assert.Equal(t, int64(30), got["tight"].Err.DeadlineMS)
	assert.Equal(t, batch.KindOK, got["roomy"].Kind)
	assert.Equal(t, batch.KindBadInput, got["bad"].Kind)
	assert.Equal(t, "line 3: not a job", got["bad"].Problem)
	assert.Equal(t, batch.KindBadInput, got["who"].Kind)
	assert.Equal(t, `unknown provider "nobody"`, got["who"].Problem)
	assert.Equal(t, batch.KindOK, got["name"].Kind)
	assert.Equal(t, string(got["det"].Result), string(got["det2"].Result))
	assert.True(t, strings.HasSuffix(string(got["det"].Result), ",1000]"), string(got["det"].Result))
	assert.Equal(t, batch.KindBadInput, got["badlimits"].Kind)
	assert.Contains(t, got["badlimits"].Problem, "the job's limits")
}

// TestRunStop: closing Stop lets the jobs in flight finish and starts no
// more; stopping the iteration early ends the batch.
func TestRunStop(t *testing.T) {
	stop := make(chan struct{})
	release := make(chan struct{})
	n := 0
	jobs := func(yield func(batch.Job) bool) {
		for i := 0; ; i++ {
			if !yield(batch.Job{ID: fmt.Sprint(i), Code: "return await store.wait()"}) {
				return
			}
		}
	}
	dispatch := func(ctx context.Context, _, _, _ string) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return `{"result":1}`, nil
	}
	opts := batch.Options{Concurrency: 3, Stop: stop, Providers: []codemode.Provider{{Name: "store"}}, Dispatch: dispatch,
		Limits: codemode.Limits{Deadline: 10 * time.Second}}
	go func() {
		time.Sleep(50 * time.Millisecond) // let three jobs start
		close(stop)
		close(release)
	}()
	for _, o := range batch.Run(context.Background(), jobs, opts) {
		assert.Equal(t, batch.KindOK, o.Kind)
		n++
	}
	assert.LessOrEqual(t, n, 6, "no job started after Stop beyond those in flight")
	assert.Positive(t, n)

	// Breaking out early.
	count := 0
	for range batch.Run(context.Background(), jobsOf("return 1", "return 2", "return 3", "return 4"), batch.Options{}) {
		count++
		if count == 2 {
			break
		}
	}
	assert.Equal(t, 2, count)
}

// ExampleRun runs three programs and prints their outcomes in input order.
func ExampleRun() {
	jobs := func(yield func(batch.Job) bool) {
		_ = yield(batch.Job{ID: "a", Code: "return 6 * 7"}) &&
			yield(batch.Job{ID: "b", Code: "throw new RangeError('no')"}) &&
			yield(batch.Job{ID: "c", Code: "async () => (await tools.double(21))"})
	}
	opts := batch.Options{
		Providers: []codemode.Provider{{Name: "tools"}},
		Dispatch: codemode.EnvelopeDispatch(nil, func(_ context.Context, _, tool, argsJSON string) (any, error) {
			var args []float64
			if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
				return nil, err
			}
			return args[0] * 2, nil
		}),
	}
	for job, o := range batch.Run(context.Background(), jobs, opts) {
		if o.Kind == batch.KindOK {
			fmt.Println(job.ID, o.Kind, string(o.Result))
		} else {
			fmt.Println(job.ID, o.Kind)
		}
	}
	// Output:
	// a ok 42
	// b js
	// c ok 42
}
