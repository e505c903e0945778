package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDispatchCmdRestarts: a tool server that dies every 5 calls and takes
// a second to start again, under a 500 ms deadline: the jobs whose calls
// it lost say it went down (capability), none is a timeout (no job waits
// for a restart under its deadline), and the jobs after a death succeed
// on the restarted server.
func TestDispatchCmdRestarts(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	var b strings.Builder
	const n = 24
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d, "code": "return await calc.add(%d, 1)"}`+"\n", i, i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	t.Setenv("FAKEDISPATCH_DIE_AFTER", "5")
	t.Setenv("FAKEDISPATCH_START_DELAY", "1s")
	code, _, stderr := runMain(t, "batch", "-j", "4", "--deadline", "500ms", "--dispatch-cmd", selfAs(t, "fakedispatch"), "--providers", "calc", "-o", out, in)
	require.Equal(t, exitOK, code, stderr)
	got := readLines(t, out)
	require.Len(t, got, n)
	firstLost, okAfter := -1, 0
	for i := range n {
		ls := got[fmt.Sprint(i)]
		require.Len(t, ls, 1)
		switch l := ls[0]; kindOf(l) {
		case "ok":
			assert.Equal(t, fmt.Sprint(i+1), string(l.Result))
			if firstLost >= 0 {
				okAfter++
			}
		case "capability":
			if firstLost < 0 {
				firstLost = i
			}
			assert.Regexp(t, `^the tool server went down: the dispatch command (died \(exit status 3\)|is restarting)`, l.Error.Message, "id %d", i)
		default:
			t.Errorf("id %d: %s: %+v", i, kindOf(l), l.Error)
		}
	}
	require.GreaterOrEqual(t, firstLost, 0, "the server died")
	assert.Positive(t, okAfter, "jobs after a death ran on the restarted server")
}

// TestDispatchStartStatus: a --dispatch-cmd that does not start (past
// --dispatch-start-timeout, or dead before it answered its ping) fails
// the command with status 4 before any job runs.
func TestDispatchStartStatus(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"id": 1, "code": "return await calc.add(1, 1)"}`+"\n"), 0o644))
	script := filepath.Join(dir, "s.js")
	require.NoError(t, os.WriteFile(script, []byte(`return await calc.add(1, 1)`), 0o644))
	fd := selfAs(t, "fakedispatch")
	for _, c := range []struct {
		name, cmd, delay, timeout, want string
	}{
		{"late", fd, "1m", "300ms", "did not answer its ping within 300ms (--dispatch-start-timeout)"},
		{"dies", "exit 7", "", "1m", "died (exit status 7) before it was ready"},
		{"missing", "/nonexistent/tools", "", "1m", "died (exit status 127) before it was ready"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FAKEDISPATCH_START_DELAY", c.delay)
			for _, cmd := range []string{"batch", "run"} {
				code, stdout, stderr := runMain(t, cmd, "--dispatch-start-timeout", c.timeout, "--dispatch-cmd", c.cmd, "--providers", "calc", map[string]string{"batch": in, "run": script}[cmd])
				assert.Equal(t, exitInternal, code, "%s: %s", cmd, stderr)
				assert.Empty(t, stdout, cmd)
				assert.Contains(t, stderr, "codemode: --dispatch-cmd: the dispatch command "+c.want, cmd)
			}
		})
	}
}

// TestDispatchGrandchild: a --dispatch-cmd that leaves a process holding
// its pipes — a grandchild started in the background, a shell that goes
// on after the server exits, a grandchild that left the process group —
// does not keep codemode batch from exiting; the process group is killed
// at the end, so what stayed in it is gone too.
func TestDispatchGrandchild(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, `{"id": %d, "code": "return await calc.add(%d, 1)"}`+"\n", i, i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	fd, self := selfAs(t, "fakedispatch"), selfAs(t, "codemode")
	for _, c := range []struct {
		name    string
		cmd     string // %[1]s the pid file, %[2]s fakedispatch
		inGroup bool
	}{
		{"background", `sleep 1000 & echo $! > %[1]s; %[2]s`, true},
		{"exec", `sleep 1000 & echo $! > %[1]s; exec %[2]s`, true},
		{"hangs", `sleep 1000 & echo $! > %[1]s; %[2]s; wait`, true}, // the shell outlives the server
		{"escaped", `setsid sleep 1000 & echo $! > %[1]s; %[2]s`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			var stderr bytes.Buffer
			cmd := exec.Command(self, "batch", "--stable", "--dispatch-cmd", fmt.Sprintf(c.cmd, pidFile, fd), "--providers", "calc", "-o", filepath.Join(t.TempDir(), "out.jsonl"), in)
			cmd.Stderr = &stderr
			ownGroup(t, cmd)
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { // whatever the outcome, no sleep outlives the test
				if pid := readPid(pidFile); pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			select {
			case err := <-exited:
				require.NoError(t, err, stderr.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("codemode batch did not exit within 30 s; stderr: %s", stderr.String())
			}
			assert.Contains(t, stderr.String(), "8 jobs, 0 failed")
			pid := readPid(pidFile)
			require.Positive(t, pid, "the grandchild wrote its pid")
			if c.inGroup {
				assert.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 20*time.Millisecond, "the grandchild was killed with the group")
			}
		})
	}
}

func readPid(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive reports a process that exists and is no zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
