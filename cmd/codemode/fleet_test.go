package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleetMix writes the 10,000-job mix of every outcome (ok, js, timeout,
// memory_exceeded, pending_promise, bad_input, a tool call answered from
// fixtures) and returns its file and the fixtures'.
func fleetMix(t *testing.T, dir string) (in, fixtures string) {
	var b strings.Builder
	for i := range 10000 {
		switch {
		case i%1000 == 999:
			b.WriteString("{\"id\": " + fmt.Sprint(i) + ", \"code\": \n")
			continue
		case i%250 == 7:
			fmt.Fprintf(&b, `{"id": %d, "code": "while (true) {}", "limits": {"deadline": 20}}`, i)
		case i%50 == 3:
			fmt.Fprintf(&b, `{"id": %d, "code": "const a = []; while (true) a.push(new Array(1000).fill(1))", "limits": {"memory": "2MiB"}}`, i)
		case i%10 == 1:
			fmt.Fprintf(&b, `{"id": %d, "code": "throw new Error('no %d')"}`, i, i)
		case i%10 == 2:
			fmt.Fprintf(&b, `{"id": %d, "code": "await new Promise(() => {})"}`, i)
		case i%10 == 5:
			fmt.Fprintf(&b, `{"id": %d, "code": "const r = await svc.echo(%d); console.log('got', r); return [r, Math.random() < 2]"}`, i, i%3)
		default:
			fmt.Fprintf(&b, `{"id": %d, "code": "return %d * 2"}`, i, i)
		}
		b.WriteByte('\n')
	}
	in, fixtures = filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "fixtures.json")
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(fixtures, []byte(`{"svc": {"echo": [
		{"args": [0], "result": "zero"}, {"args": [1], "result": "one"}, {"args": [2], "error": "two is refused"}]}}`), 0o644))
	return in, fixtures
}

// outcomeLines reads a batch's output with its measurements dropped: the
// time it took, and its peak memory, which moves by a few hundred bytes
// with the warm sandbox a run gets (a clone of the template, the slot's own
// image: scheduling, here as in process). What is left is the job's
// outcome, byte for byte.
func outcomeLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		delete(m, "elapsed_ms")
		delete(m, "peak_memory_bytes")
		norm, err := json.Marshal(m)
		require.NoError(t, err)
		out = append(out, string(norm))
	}
	return out
}

// TestBatchOnFleet: the 10,000-job mix run on three `codemode serve`
// processes (--remote, a comma-separated list) gives the outcome lines it
// gives in process, at -j 1 and -j 64; the tools stay here.
func TestBatchOnFleet(t *testing.T) {
	dir := t.TempDir()
	in, fx := fleetMix(t, dir)
	var addrs []string
	for range 3 {
		_, a := startServe(t)
		addrs = append(addrs, a)
	}
	local := filepath.Join(dir, "local.jsonl")
	code, _, stderr := runMain(t, "batch", "-j", "4", "--tools", fx, "-o", local, in)
	require.Equal(t, exitOK, code, stderr)
	want := outcomeLines(t, local)
	require.Len(t, want, 10000)
	for _, j := range []string{"1", "64"} {
		out := filepath.Join(dir, "fleet-"+j+".jsonl")
		code, _, stderr := runMain(t, "batch", "-j", j, "--tools", fx, "--remote", strings.Join(addrs, ","), "-o", out, in)
		require.Equal(t, exitOK, code, stderr)
		got := outcomeLines(t, out)
		require.Len(t, got, len(want))
		for i := range want {
			if !assert.Equal(t, want[i], got[i], "-j %s, line %d", j, i) {
				break
			}
		}
	}
}
