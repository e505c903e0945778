package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repl runs codemode repl with args over the lines of input and returns
// its exit status, its output lines and its stderr.
func replRun(t *testing.T, input string, args ...string) (int, []string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"repl"}, args...), strings.NewReader(input), &stdout, &stderr)
	return code, strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n"), stderr.String()
}

// TestREPL: each program sees what the ones before it declared, a
// program may span lines, a failing one changes nothing, .reset starts
// afresh.
func TestREPL(t *testing.T) {
	code, out, stderr := replRun(t, strings.Join([]string{
		"const a = [1, 2]",
		"function sum(xs) {",
		"  return xs.reduce((x, y) => x + y, 0)",
		"}",
		"sum(a)",
		"a.push(3); throw new Error('not kept')",
		"a.length",
		"let a = 1",
		"const t = `two",
		"lines`; t.length",
		".reset",
		"typeof a",
	}, "\n"))
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, out, 8, strings.Join(out, "\n"))
	assert.JSONEq(t, `{"result":null,"logs":[]}`, out[0])
	assert.JSONEq(t, `{"result":null,"logs":[]}`, out[1])
	assert.JSONEq(t, `{"result":3,"logs":[]}`, out[2])
	assert.Contains(t, out[3], "not kept")
	assert.JSONEq(t, `{"result":2,"logs":[]}`, out[4])
	assert.Contains(t, out[5], "SyntaxError")
	assert.JSONEq(t, `{"result":9,"logs":[]}`, out[6])
	assert.JSONEq(t, `{"result":"undefined","logs":[]}`, out[7])
}

// TestREPLSessionFile: a session written to --session is continued by
// another process; its tool calls were made once (a --dispatch-cmd that
// logs each call).
func TestREPLSessionFile(t *testing.T) {
	dir := t.TempDir()
	file, key, log := filepath.Join(dir, "work.session"), filepath.Join(dir, "key"), filepath.Join(dir, "calls.log")
	require.NoError(t, os.WriteFile(key, []byte(strings.Repeat("k", 32)+"\n"), 0o600))
	t.Setenv("FAKEDISPATCH_LOG", log)
	args := []string{"--session", file, "--key-file", key, "--dispatch-cmd", selfAs(t, "fakedispatch"), "--providers", "calc"}
	code, out, stderr := replRun(t, "const s = await calc.add(2, 3)\nlet n = s * 2\nn", args...)
	require.Equal(t, exitOK, code, stderr)
	assert.JSONEq(t, `{"result":10,"logs":[]}`, out[2])
	sealed, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(sealed), "calc.add", "the session file is sealed")

	code, out, stderr = replRun(t, "n += await calc.add(1, 1); [s, n]", args...)
	require.Equal(t, exitOK, code, stderr)
	assert.JSONEq(t, `{"result":[5,12],"logs":[]}`, out[0])
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "calc.add [2,3]\ncalc.add [1,1]\n", string(calls), "each call made once")

	// Without its key, the file is refused; without --key-file, --session is.
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte(strings.Repeat("o", 32)), 0o600))
	code, _, stderr = replRun(t, "", "--session", file, "--key-file", other)
	assert.Equal(t, exitInternal, code)
	assert.Contains(t, stderr, "refused")
	code, _, stderr = replRun(t, "", "--session", file)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--key-file")
}
