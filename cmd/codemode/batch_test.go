package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outLine is one result line.
type outLine struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

func kindOf(l outLine) string {
	if l.Error != nil {
		return l.Error.Kind
	}
	return "ok"
}

// readLines reads a results file by id.
func readLines(t *testing.T, path string) map[string][]outLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	byID := map[string][]outLine{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var l outLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		byID[string(l.ID)] = append(byID[string(l.ID)], l)
	}
	require.NoError(t, sc.Err())
	return byID
}

func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestBatchMixed: ten thousand jobs of every outcome come back each once,
// with the right kind, in input order.
func TestBatchMixed(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	var b strings.Builder
	want := map[string]string{}
	const n = 10000
	for i := range n {
		id := fmt.Sprint(i)
		switch {
		case i%1000 == 999:
			b.WriteString("{\"id\": " + id + ", \"code\": \n")
			want[id] = "bad_input" // its id cannot be read: checked by line below
			continue
		case i%250 == 7:
			fmt.Fprintf(&b, `{"id": %d, "code": "while (true) {}", "limits": {"deadline": 20}}`, i)
			want[id] = "timeout"
		case i%50 == 3:
			fmt.Fprintf(&b, `{"id": %d, "code": "const a = []; while (true) a.push(new Array(1000).fill(1))", "limits": {"memory": "2MiB"}}`, i)
			want[id] = "memory_exceeded"
		case i%10 == 1:
			fmt.Fprintf(&b, `{"id": %d, "code": "throw new Error('no %d')"}`, i, i)
			want[id] = "js"
		case i%10 == 2:
			fmt.Fprintf(&b, `{"id": %d, "code": "await new Promise(() => {})"}`, i)
			want[id] = "pending_promise"
		default:
			fmt.Fprintf(&b, `{"id": %d, "code": "return %d * 2"}`, i, i)
			want[id] = "ok"
		}
		b.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	code, _, stderr := runMain(t, "batch", "-j", "4", "-o", out, in)
	require.Equal(t, exitOK, code, stderr)
	got := readLines(t, out)
	bad := got["null"]
	assert.Len(t, bad, n/1000)
	for id, kind := range want {
		if kind == "bad_input" {
			continue
		}
		ls := got[id]
		require.Len(t, ls, 1, "id %s", id)
		assert.Equal(t, kind, kindOf(ls[0]), "id %s", id)
		if kind == "ok" {
			var v int
			require.NoError(t, json.Unmarshal(ls[0].Result, &v))
			assert.Equal(t, 2*atoi(t, id), v)
		}
	}
	assert.Len(t, got, n-n/1000+1) // every id, and null for the bad lines
	// In input order.
	f, _ := os.ReadFile(out)
	prev := -1
	for _, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		var l outLine
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		if string(l.ID) == "null" {
			continue
		}
		i := atoi(t, string(l.ID))
		assert.Greater(t, i, prev)
		prev = i
	}
}

func atoi(t *testing.T, s string) int {
	var i int
	_, err := fmt.Sscan(s, &i)
	require.NoError(t, err)
	return i
}

// selfAs makes a command name that runs this test binary as that command
// (testscript.Main dispatches on the program name).
func selfAs(t *testing.T, name string) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.Symlink(exe, p))
	return p
}

// TestDispatchCmdDies: the subprocess dies every 40 calls mid-batch; the
// calls in flight (and those made before it is back) fail with a clear
// message, it is restarted, and the batch goes on: every job has its
// line, the rest succeed.
func TestDispatchCmdDies(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	var b strings.Builder
	const n = 200
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d, "code": "return await calc.add(%d, 1)", "limits": {"deadline": "20s"}}`+"\n", i, i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	t.Setenv("FAKEDISPATCH_DIE_AFTER", "40")
	code, _, stderr := runMain(t, "batch", "-j", "4", "--dispatch-cmd", selfAs(t, "fakedispatch"), "--providers", "calc", "-o", out, in)
	require.Equal(t, exitOK, code, stderr)
	got := readLines(t, out)
	require.Len(t, got, n)
	died, ok := 0, 0
	for i := range n {
		ls := got[fmt.Sprint(i)]
		require.Len(t, ls, 1)
		switch l := ls[0]; kindOf(l) {
		case "ok":
			ok++
			assert.Equal(t, fmt.Sprint(i+1), string(l.Result))
		case "capability":
			died++
			// Its call was in flight when it died, or came before it was back.
			assert.Regexp(t, `^the tool server went down: the dispatch command died \(exit status 3\) with the call in flight; its stderr ends: fakedispatch: dying as asked$|`+
				`^the tool server went down: the dispatch command died \(exit status 3\); the call was not sent \(it is restarted before the next job starts\); its stderr ends: fakedispatch: dying as asked$|`+
				`^the tool server went down: the dispatch command is restarting; the call was not sent$`, l.Error.Message)
		default:
			t.Errorf("id %d: %s", i, kindOf(l))
		}
	}
	assert.Positive(t, died)
	assert.Greater(t, ok, n/2, "restarted after each death")
}

// TestProgress: a bar on a terminal (a pseudo-terminal here) or when
// forced; none when stderr is a file, only the summary.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, `{"id": %d, "code": "return %d"}`+"\n", i, i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))

	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&screen, ptmx)
		close(copied)
	}()
	code := Main(context.Background(), []string{"batch", "-o", filepath.Join(dir, "out1"), in}, strings.NewReader(""), io.Discard, tty)
	tty.Close()
	<-copied
	require.Equal(t, exitOK, code)
	assert.Contains(t, screen.String(), "(20/20")
	assert.Contains(t, screen.String(), "100%")
	assert.Contains(t, screen.String(), "scripts/s")

	code, _, stderr := runMain(t, "batch", "--progress", "always", "-o", filepath.Join(dir, "out2"), in)
	require.Equal(t, exitOK, code)
	assert.Contains(t, stderr, "(20/20")

	f, err := os.Create(filepath.Join(dir, "stderr"))
	require.NoError(t, err)
	code = Main(context.Background(), []string{"batch", "-o", filepath.Join(dir, "out3"), in}, strings.NewReader(""), io.Discard, f)
	f.Close()
	require.Equal(t, exitOK, code)
	text, _ := os.ReadFile(filepath.Join(dir, "stderr"))
	assert.NotContains(t, string(text), "%")
	assert.NotContains(t, string(text), "\r")
	assert.Contains(t, string(text), "codemode batch: 20 jobs, 0 failed")
}

// TestResumeAfterKill: a batch killed (SIGKILL) part way, resumed: every
// id exactly once.
func TestResumeAfterKill(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	var b strings.Builder
	const n = 3000
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d, "code": "const t = performance.now(); while (performance.now() - t < 1) {} return %d"}`+"\n", i, i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	cmd := startBatch(t, out, 8<<10, nil, "-j", "2", "-o", out, in)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	before := readLinesLoose(t, out)
	require.Less(t, before, n, "killed before the end")

	code, _, stderr := runMain(t, "batch", "--resume", "-j", "2", "-o", out, in)
	require.Equal(t, exitOK, code, stderr)
	got := readLines(t, out)
	require.Len(t, got, n)
	for i := range n {
		ls := got[fmt.Sprint(i)]
		require.Len(t, ls, 1, "id %d", i)
		assert.Equal(t, fmt.Sprint(i), string(ls[0].Result))
	}
}

// startBatch starts `codemode batch args...` as a process of its own and
// returns once out holds at least size bytes.
func startBatch(t *testing.T, out string, size int64, stderr io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(selfAs(t, "codemode"), append([]string{"batch"}, args...)...)
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := os.Stat(out)
		if err == nil && st.Size() >= size {
			return cmd
		}
		if !time.Now().Before(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the batch wrote nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readLinesLoose counts the complete lines of a file a kill may have cut.
func readLinesLoose(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return bytes.Count(data, []byte("\n"))
}

// TestInterrupt: SIGINT lets the runs in flight finish and be written,
// starts no more, prints the summary and exits 130.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	var b strings.Builder
	const n = 2000
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d, "code": "await new Promise((r) => setTimeout(r, 20)); return %d"}`+"\n", i, i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	var stderr bytes.Buffer
	cmd := startBatch(t, out, 1, &stderr, "-j", "4", "-o", out, in)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Equal(t, exitInterrupted, ee.ExitCode())
	assert.Contains(t, stderr.String(), "(interrupted: the runs in flight finished)")
	assert.Contains(t, stderr.String(), "throughput")
	got := readLines(t, out) // every line whole
	require.Less(t, len(got), n)
	for i := range len(got) { // a prefix of the input, each ok
		ls := got[fmt.Sprint(i)]
		require.Len(t, ls, 1, "id %d", i)
		assert.Equal(t, "ok", kindOf(ls[0]))
	}
}

// jobStream produces n W1-like jobs as JSON lines without holding them.
type jobStream struct {
	mu   sync.Mutex
	i, n int
	buf  []byte
}

func (s *jobStream) progress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.i
}

func (s *jobStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.buf) < len(p) && s.i < s.n {
		s.buf = fmt.Appendf(s.buf, `{"id": %d, "code": "return {ok: true, n: 2, s: 'hi'}"}`+"\n", s.i)
		s.i++
	}
	if len(s.buf) == 0 {
		return 0, io.EOF
	}
	k := copy(p, s.buf)
	s.buf = s.buf[k:]
	return k, nil
}

// lineCounter counts the lines written to it.
type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// TestBatchMemoryFlat: jobs stream in and lines stream out; the heap after
// 200,000 jobs is what it was after 20,000.
func TestBatchMemoryFlat(t *testing.T) {
	const n = 200_000
	in := &jobStream{n: n}
	out := &lineCounter{}
	var early, late uint64
	var m runtime.MemStats
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			i := in.progress()
			if i >= n/10 && early == 0 {
				runtime.GC()
				runtime.ReadMemStats(&m)
				early = m.HeapInuse
			}
			if i >= n*9/10 && late == 0 {
				runtime.GC()
				runtime.ReadMemStats(&m)
				late = m.HeapInuse
			}
		}
	}()
	code := Main(context.Background(), []string{"batch", "--progress", "never", "-"}, in, out, io.Discard)
	close(stop)
	<-sampled
	require.Equal(t, exitOK, code)
	assert.Equal(t, n, out.n)
	require.NotZero(t, early)
	require.NotZero(t, late)
	assert.Less(t, late, early+8<<20, "heap in use after 10%% of the jobs %d, after 90%% %d", early, late)
}

// TestLongLine: a line past the limit is its own bad_input line, and the
// lines after it still run.
func TestLongLine(t *testing.T) {
	defer func(m int) { maxLine = m }(maxLine)
	maxLine = 200
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	long := `{"id": "long", "code": "return '` + strings.Repeat("x", 5000) + `'"}`
	require.NoError(t, os.WriteFile(in, []byte(`{"id": "a", "code": "return 1"}`+"\n"+long+"\n"+`{"id": "b", "code": "return 2"}`+"\n"+"\x00\xff garbage\n"), 0o644))
	code, _, stderr := runMain(t, "batch", "--stable", "-o", out, in)
	require.Equal(t, exitOK, code, stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, `{"id":"a","result":1,"logs":[],"host_calls":0}`, lines[0])
	assert.Equal(t, `{"id":null,"line":2,"error":{"kind":"bad_input","message":"line 2: the line is longer than the limit (200 bytes)"},"logs":[],"host_calls":0}`, lines[1])
	assert.Equal(t, `{"id":"b","result":2,"logs":[],"host_calls":0}`, lines[2])
	assert.Contains(t, lines[3], `"line":4,"error":{"kind":"bad_input"`)
}
