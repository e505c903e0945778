package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/codemode-go/codemode/batch"
)

// TestInterleave: --repeat's runs of a job are never adjacent (unless it
// is the only job), every job runs n times, and a batch that fits a chunk
// runs in full passes.
func TestInterleave(t *testing.T) {
	for _, c := range []struct {
		jobs, n, size int
		want          string // for small cases
	}{
		{3, 3, 256, "a0 b0 c0 a1 b1 c1 a2 b2 c2"},
		{1, 3, 256, "a0 a1 a2"},
		{2, 2, 2, "a0 b0 a1 b1"},
		{3, 2, 2, "a0 b0 c0 a1 b1 c1"},
		{4, 2, 2, "a0 b0 a1 b1 c0 d0 c1 d1"},
		{5, 3, 2, "a0 b0 a1 b1 a2 b2 c0 d0 e0 c1 d1 e1 c2 d2 e2"},
		{1000, 3, 7, ""},
		{999, 5, 256, ""},
		{257, 2, 256, ""},
	} {
		t.Run(fmt.Sprint(c.jobs, c.n, c.size), func(t *testing.T) {
			jobs := func(yield func(batch.Job) bool) {
				for i := range c.jobs {
					if !yield(batch.Job{ID: name(i), Line: i + 1}) {
						return
					}
				}
			}
			var got []string
			runs := map[string]int{}
			for j, rep := range interleave(jobs, c.n, c.size) {
				got = append(got, fmt.Sprintf("%s%d", j.ID, rep))
				assert.Equal(t, runs[j.ID], rep, "%s's runs in order", j.ID)
				runs[j.ID]++
			}
			if c.want != "" {
				assert.Equal(t, c.want, strings.Join(got, " "))
			}
			assert.Len(t, runs, c.jobs)
			for id, k := range runs {
				assert.Equal(t, c.n, k, id)
			}
			if c.jobs > 1 {
				for i := 1; i < len(got); i++ {
					assert.NotEqual(t, strings.TrimRight(got[i-1], "0123456789"), strings.TrimRight(got[i], "0123456789"), "runs %d and %d adjacent", i-1, i)
				}
			}
			// Stopping early stops.
			n := 0
			for range interleave(jobs, c.n, c.size) {
				if n++; n == 2 {
					break
				}
			}
			assert.Equal(t, 2, n)
		})
	}
	assert.True(t, slices.Equal([]int{3, 4, 5}, []int{runKey(1, 0, 3), runKey(1, 1, 3), runKey(1, 2, 3)}))
}

// name is the i-th id in letters only (a..z, aa, ab...): the test appends
// the run's number to it, and strips digits to compare jobs.
func name(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		if i /= 26; i == 0 {
			return s
		}
		i--
	}
}
