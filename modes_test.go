package codemode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModesAgree runs the same scripts on snapshot slots and on the checked
// lifecycle (libc, freed per run) and requires identical outcomes:
// allocation-heavy scripts exercise the arena against malloc.
func TestModesAgree(t *testing.T) {
	t.Parallel()
	// A deadline no script here meets even under -asan, where checked
	// mode's malloc is slow: every outcome is the script's own.
	limits := WithLimits(Limits{Memory: 8 << 20, Deadline: 10 * time.Second})
	snap := newExecutor(t, limits, WithSlots(1))
	snap.checked = false
	checked := newExecutor(t, limits)
	checked.checked = true
	scripts := modeScripts(t)
	outcome := func(e *Executor, script string) string {
		res, err := e.Run(context.Background(), script)
		if err != nil {
			return err.(*ExecError).LLMJSON()
		}
		return fmt.Sprintf("%s %q", res.Value, res.Logs)
	}
	for round := 0; round < 2; round++ {
		for _, script := range scripts {
			assert.Equal(t, outcome(checked, script), outcome(snap, script), "Run(%.60q), round %d", script, round)
		}
	}
}

// modeScripts are scripts whose outcomes no way of making a sandbox may
// change: allocation patterns, the memory limit, collections, the golden
// files.
func modeScripts(t *testing.T) []string {
	scripts := []string{
		"const a = []; for (let i = 0; i < 20000; i++) a.push({i, s: 'x' + i}); return a.length",
		"let s = ''; for (let i = 0; i < 5000; i++) s += String.fromCharCode(65 + i % 26); return s.length + s.slice(-5)",
		"const m = new Map(); for (let i = 0; i < 5000; i++) m.set('k' + i, [i, i * 2]); for (let i = 0; i < 5000; i += 2) m.delete('k' + i); return m.size",
		"const bufs = []; for (let i = 0; i < 200; i++) bufs.push(new Uint8Array(1000 + i * 37).fill(i)); return bufs.reduce((n, b) => n + b[b.length - 1], 0)",
		"let a = []; for (let r = 0; r < 50; r++) { a = []; for (let i = 0; i < 2000; i++) a.push(new Array(i % 50).fill(r)) } return a.length",
		"const parts = []; for (let i = 0; i < 3000; i++) parts.push(JSON.stringify({i, d: [i, {x: i}]})); return JSON.parse('[' + parts.join(',') + ']').length",
		"const a = []; for (;;) a.push('y'.repeat(1000) + a.length)",
		// Cyclic garbage, which only a collection frees: 40 MiB of it under 8.
		"let n = 0; for (let i = 0; i < 300000; i++) { const a = {i}; const b = {a}; a.b = b; n += b.a.i & 1 } return n",
		"const b = new ArrayBuffer(6 << 20); return b.byteLength",
		"const b = new ArrayBuffer(9 << 20); return b.byteLength",
		"function r(n) { return n === 0 ? 0 : 1 + r(n - 1) } return r(2000)",
	}
	files, err := filepath.Glob("testdata/golden/*.js")
	require.NoError(t, err)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		scripts = append(scripts, string(src))
	}
	return scripts
}
