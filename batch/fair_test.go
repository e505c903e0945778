//go:build cgo

package batch_test

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
)

// verdict is what a harness scores: the kind and the value (or the
// error's text).
type verdict struct{ kind, value string }

func verdictOf(o batch.Outcome) verdict {
	switch {
	case o.Err != nil:
		return verdict{o.Kind, o.Err.LLMJSON()}
	case o.Kind == batch.KindOK:
		return verdict{o.Kind, string(o.Result)}
	}
	return verdict{o.Kind, o.Problem}
}

// runAll runs jobs at a concurrency and returns the verdicts by id.
func runAll(t *testing.T, jobs []batch.Job, opts batch.Options) map[string]verdict {
	t.Helper()
	got := map[string]verdict{}
	for j, o := range batch.Run(context.Background(), func(yield func(batch.Job) bool) {
		for _, j := range jobs {
			if !yield(j) {
				return
			}
		}
	}, opts) {
		got[j.ID] = verdictOf(o)
	}
	require.Len(t, got, len(jobs))
	return got
}

// TestNeighboursDoNotDecide: sixty jobs, every sixth an endless loop, the
// rest a value, an await or a 20 ms timer, under a 300 ms deadline, get
// the same outcomes at concurrency 2, 4 and 16: the loops time out and
// every other job gives its value (at 4 and 16, cheap jobs queued behind
// the loops once ended timeout or busy).
func TestNeighboursDoNotDecide(t *testing.T) {
	var jobs []batch.Job
	for i := range 60 {
		code := []string{"for (;;) {}", fmt.Sprintf("return %d", i), fmt.Sprintf("await null; return %d", i),
			fmt.Sprintf("await new Promise(r => setTimeout(r, 20)); return %d", i)}[map[bool]int{true: 0, false: 1 + i%3}[i%6 == 0]]
		jobs = append(jobs, batch.Job{ID: fmt.Sprint(i), Code: code})
	}
	for _, n := range []int{2, 4, 16} {
		got := runAll(t, jobs, batch.Options{Concurrency: n, Limits: codemode.Limits{Deadline: 300 * time.Millisecond}})
		for i := range 60 {
			want := verdict{batch.KindOK, fmt.Sprint(i)}
			if i%6 == 0 {
				want = verdict{"timeout", `{"kind":"timeout","name":"run_js","deadline_ms":300}`}
			}
			assert.Equal(t, want, got[fmt.Sprint(i)], "concurrency %d, job %d", n, i)
		}
	}
}

// mix is a file of jobs of every sort: values, fences, throws, endless
// loops, memory bombs, pending promises, timers, tool calls (each job's
// own deadline long enough for what its own code asks, loops' short).
func mix(n int) []batch.Job {
	long := &codemode.Limits{Deadline: 20 * time.Second}
	short := &codemode.Limits{Deadline: 10 * time.Millisecond}
	small := &codemode.Limits{Deadline: 20 * time.Second, Memory: 4 << 20}
	var jobs []batch.Job
	for i := range n {
		j := batch.Job{ID: fmt.Sprint(i), Limits: long}
		switch {
		case i%200 == 0:
			j.Code, j.Limits = "for (;;) {}", short
		case i%200 == 1:
			j.Code, j.Limits = "const a = []; for (;;) a.push('x'.repeat(1 << 16) + a.length)", small
		case i%10 == 2:
			j.Code = fmt.Sprintf("```js\nconst x = %d;\nreturn x * 2\n```", i)
		case i%10 == 3:
			j.Code = fmt.Sprintf("throw new RangeError('job %d')", i)
		case i%50 == 4:
			j.Code = "await new Promise(() => {})"
		case i%10 == 5:
			j.Code = fmt.Sprintf("await new Promise(r => setTimeout(r, 1)); return %d", i)
		case i%10 == 6:
			j.Code = fmt.Sprintf("async () => (await svc.echo(%d)) + 1", i)
			j.Providers = []string{"svc"}
		case i%10 == 7:
			j.Code = fmt.Sprintf("let s = 0; for (let k = 0; k < 20000; k++) s += k %% 7; return s + %d", i)
		default:
			j.Code = fmt.Sprintf("return {id: %d, ok: true}", i)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// TestOutcomesAreTheJobs: ten thousand jobs of every sort get, job by
// job, the same outcome at -j 1, 2, 8 and 64 while a CPU hog (a process)
// spins on every core. It runs in the plain build only, alone (make test
// runs it so after the sanitizers' passes): its hogs would load every
// other package's tests running beside it.
func TestOutcomesAreTheJobs(t *testing.T) {
	if !plainBuild {
		t.Skip("the plain build runs it, alone: go test -run TestOutcomesAreTheJobs ./batch")
	}
	for range runtime.NumCPU() { // other processes' load, as on a busy machine
		hog := exec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, hog.Start())
		t.Cleanup(func() {
			hog.Process.Kill()
			hog.Wait()
		})
	}
	jobs := mix(10_000)
	opts := batch.Options{Providers: []codemode.Provider{{Name: "svc", Tools: []string{"echo"}}},
		Dispatch: func(_ context.Context, _, _, args string) (string, error) {
			return `{"result":` + args[1:len(args)-1] + `}`, nil
		}}
	var first map[string]verdict
	kinds := map[string]map[int]int{}
	for _, n := range []int{1, 2, 8, 64} {
		opts.Concurrency = n
		got := runAll(t, jobs, opts)
		for _, v := range got {
			if kinds[v.kind] == nil {
				kinds[v.kind] = map[int]int{}
			}
			kinds[v.kind][n]++
		}
		if first == nil {
			first = got
			continue
		}
		differ := 0
		for id, v := range got {
			if v != first[id] {
				if differ++; differ <= 5 {
					t.Errorf("job %s at -j %d: %v; at -j 1: %v", id, n, v, first[id])
				}
			}
		}
		assert.Zero(t, differ, "jobs whose outcome at -j %d differs from -j 1", n)
	}
	t.Logf("outcomes by kind and -j: %v", kinds)
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	assert.ElementsMatch(t, []string{"ok", "js", "timeout", "memory_exceeded", "pending_promise"}, names)
}
