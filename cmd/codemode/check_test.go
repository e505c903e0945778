package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheck: codemode check prints the problems that would fail the
// program, at their positions, against the declarations of run's tools;
// a correct program passes; without a checker it fails clearly.
func TestCheck(t *testing.T) {
	if os.Getenv("CODEMODE_TSC") == "" && os.Getenv("CODEMODE_TSC_REQUIRED") == "" {
		t.Skip("no TypeScript 7 checker (CODEMODE_TSC)")
	}
	dir := t.TempDir()
	fx, bad, good := filepath.Join(dir, "fx.json"), filepath.Join(dir, "bad.js"), filepath.Join(dir, "good.js")
	require.NoError(t, os.WriteFile(fx, []byte(`{"store": {"get": [{"result": 1}], "put": [{"result": true}]}}`), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte("const v = await store.gett(1);\nreturn document.title;\n"), 0o644))
	require.NoError(t, os.WriteFile(good, []byte("const v = await store.get(1);\nreturn v?.name ?? null;\n"), 0o644))
	code, out, stderr := runMain(t, "check", "--tools", fx, bad)
	assert.Equal(t, exitScript, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Contains(t, lines[0], `"line":1,"column":23,"code":2551`)
	assert.Contains(t, lines[1], `"line":2,"column":8,"code":2584`)
	code, out, stderr = runMain(t, "check", "--tools", fx, good)
	assert.Equal(t, exitOK, code, stderr)
	assert.Empty(t, out)
	code, _, stderr = runMain(t, "check", "--tsc", filepath.Join(dir, "none"), good)
	assert.Equal(t, exitInternal, code)
	assert.Contains(t, stderr, "npm install typescript@7")
}

// TestRunTypecheck: run --typecheck=enforce refuses a program with a
// problem before it runs (kind type_error, exit 1); warn runs it and
// reports; batch the same per job.
func TestRunTypecheck(t *testing.T) {
	if os.Getenv("CODEMODE_TSC") == "" && os.Getenv("CODEMODE_TSC_REQUIRED") == "" {
		t.Skip("no TypeScript 7 checker (CODEMODE_TSC)")
	}
	dir := t.TempDir()
	fx, prog := filepath.Join(dir, "fx.json"), filepath.Join(dir, "p.js")
	require.NoError(t, os.WriteFile(fx, []byte(`{"store": {"get": [{"result": 1}]}}`), 0o644))
	require.NoError(t, os.WriteFile(prog, []byte("const v = await store.get(1);\nconsole.log(document.title);\nreturn v;\n"), 0o644))
	code, out, stderr := runMain(t, "run", "--typecheck", "enforce", "--tools", fx, prog)
	assert.Equal(t, exitScript, code, stderr)
	assert.Contains(t, out, `"kind":"type_error"`)
	assert.Contains(t, out, `"line":2,"column":13,"code":2584`)
	// Warn: it runs (and here fails as it runs), the check's findings beside.
	code, out, stderr = runMain(t, "run", "--typecheck", "warn", "--tools", fx, prog)
	assert.Equal(t, exitScript, code, stderr)
	assert.Contains(t, out, `ReferenceError: document is not defined`)
	assert.Contains(t, out, `"diagnostics":[{"line":2,"column":13,"code":2584`)
	jobs, res := filepath.Join(dir, "jobs.jsonl"), filepath.Join(dir, "out.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"id": 1, "code": "return await store.gett(1)"}`+"\n"+`{"id": 2, "code": "return await store.get(1)"}`+"\n"), 0o644))
	code, _, stderr = runMain(t, "batch", "--typecheck", "enforce", "--tools", fx, "-o", res, jobs)
	assert.Equal(t, exitOK, code, stderr)
	b, _ := os.ReadFile(res)
	assert.Contains(t, string(b), `{"id":1,"error":{"kind":"type_error"`)
	assert.Contains(t, string(b), `{"id":2,"result":1`)
	code, _, stderr = runMain(t, "run", "--typecheck", "sometimes", prog)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "off, warn or enforce")
}
