package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// logLines reads r to its end and hands over its lines (a server's
// stderr, which must keep draining).
func logLines(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// addressIn takes lines until one matches pattern and returns its group
// (a server's address from its log), or fails after 30 s.
func addressIn(t *testing.T, lines <-chan string, pattern string) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the server ended before it said where it listens")
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatal("the server did not start")
		}
	}
}

// TestServe: `codemode serve` with a token runs a remote client's program
// (its tool call answered in this process) and drains when told to.
func TestServe(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("tok\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--token-file", token, "--grace", "5s", "--metrics", "127.0.0.1:0"}, nil, io.Discard, pw)
		pw.Close()
	}()
	lines := logLines(pr)
	metrics := addressIn(t, lines, `metrics on (http://\S+)`)
	a := addressIn(t, lines, `listening on (\S+)`)
	go func() {
		for range lines { // keep draining
		}
	}()
	c, err := remote.Dial(a, remote.WithToken("tok"))
	require.NoError(t, err)
	defer c.Close()
	res := c.Execute(ctx, codemode.Request{Code: "async () => (await db.q()) + 1", Providers: []codemode.Provider{{Name: "db"}},
		Dispatch: func(context.Context, string, string, string) (string, error) { return `{"result":41}`, nil }})
	require.Empty(t, res.Error)
	assert.Equal(t, "42", string(res.Result))
	bad, err := remote.Dial(a)
	require.NoError(t, err)
	defer bad.Close()
	assert.Contains(t, bad.Execute(ctx, codemode.Request{Code: "async () => 1"}).Error, "Unauthenticated")
	resp, err := http.Get(metrics)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), `codemode_programs_total{kind="ok"} 1`)
	assert.Contains(t, string(body), `codemode_tool_calls_total 1`)
	assert.Contains(t, string(body), `codemode_message_bytes_total{direction="in"}`)
	assert.Contains(t, string(body), `codemode_message_bytes_total{direction="out"}`)
	assert.Contains(t, string(body), `codemode_unauthenticated_total 1`)
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("codemode serve did not drain")
	}
}

// TestServeDrainsOnSIGTERM: a `codemode serve` process told SIGTERM with a
// program in flight lets it finish (its tool call answered after the
// signal), then exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	cmd := exec.Command(selfAs(t, "codemode"), "serve", "--listen", "127.0.0.1:0", "--grace", "20s")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := logLines(stderr)
	a := addressIn(t, lines, `listening on (\S+)`)
	go func() {
		for range lines {
		}
	}()
	c, err := remote.Dial(a)
	require.NoError(t, err)
	defer c.Close()
	arrived, release := make(chan struct{}), make(chan struct{})
	done := make(chan codemode.ExecuteResult, 1)
	go func() {
		done <- c.Execute(context.Background(), codemode.Request{Code: "async () => await db.slow()", Providers: []codemode.Provider{{Name: "db"}},
			Dispatch: func(context.Context, string, string, string) (string, error) {
				close(arrived)
				<-release
				return `{"result":"finished after the signal"}`, nil
			}})
	}()
	<-arrived
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	// While the program finishes, a new connection's health check sees the
	// drain, and a new program is refused for another daemon.
	conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	require.Eventually(t, func() bool {
		r, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		return err == nil && r.Status == healthpb.HealthCheckResponse_NOT_SERVING
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "remote: Unavailable: the daemon is draining: try another", c.Execute(context.Background(), codemode.Request{Code: "async () => 1"}).Error)
	close(release)
	res := <-done
	require.Empty(t, res.Error)
	assert.Equal(t, `"finished after the signal"`, string(res.Result))
	require.NoError(t, cmd.Wait())
}

// TestServePausedAcrossProcesses: a program paused on one `codemode
// serve` process resumes on a second (the first is gone by then): the
// client holds the key, the daemons never see it.
func TestServePausedAcrossProcesses(t *testing.T) {
	start := func() (string, *exec.Cmd) {
		cmd, a := startServe(t)
		return a, cmd
	}
	g := codemode.Governance{Tools: map[string]codemode.ToolPolicy{"db.write": {RequiresApproval: true}},
		Key: []byte("0123456789abcdef0123456789abcdef")}
	var reads, writes int
	dispatch := func(_ context.Context, _, tool, _ string) (string, error) {
		if tool == "read" {
			reads++
			return `{"result":10}`, nil
		}
		writes++
		return `{"result":"written"}`, nil
	}
	a, first := start()
	ca, err := remote.Dial(a, remote.WithGovernance(g))
	require.NoError(t, err)
	defer ca.Close()
	res := ca.Execute(context.Background(), codemode.Request{
		Code:      "async () => { let s = 0; for (const i of [1, 2, 3]) s += await db.read(i); return await db.write(s) }",
		Providers: []codemode.Provider{{Name: "db", Tools: []string{"read", "write"}}}, Dispatch: dispatch})
	require.Empty(t, res.Error)
	require.NotNil(t, res.Paused)
	require.NoError(t, first.Process.Kill())

	b, _ := start()
	cb, err := remote.Dial(b, remote.WithGovernance(g))
	require.NoError(t, err)
	defer cb.Close()
	out := cb.Resume(context.Background(), res.Paused.Continuation, codemode.Approve(), dispatch)
	require.Empty(t, out.Error)
	assert.Equal(t, `"written"`, string(out.Result))
	assert.Equal(t, 3, reads, "the reads ran once, on the first daemon")
	assert.Equal(t, 1, writes)
}

// TestServeIdleMemory: --idle-memory is what a daemon's idle sandboxes
// keep once a burst is over. After a burst of programs alive at once
// (each awaiting its tool call until all have made theirs), a daemon
// given room keeps every sandbox's pages (its budget's bytes in use stay
// above a burst's images), and one given none gives them back; a negative
// size is a usage error. Each daemon
// has a budget of its own: the default one is the process's, which the
// two would share.
func TestServeIdleMemory(t *testing.T) {
	t.Parallel()
	// Four times the warm sandboxes (twice the concurrency, at least 4):
	// more than a daemon keeps warm on any number of cores.
	burst := 4 * max(2*runtime.GOMAXPROCS(0), 4)
	inUse := func(metrics string) float64 {
		resp, err := http.Get(metrics)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`(?m)^codemode_memory_in_use_bytes (\S+)$`).FindStringSubmatch(string(body))
		require.NotNil(t, m, "no codemode_memory_in_use_bytes in %s", body)
		n, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return n
	}
	serveBurst := func(idle string) (metrics string) {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		done := make(chan int, 1)
		go func() {
			done <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--idle-memory", idle,
				"--memory-budget", "1GiB"}, nil, io.Discard, pw)
			pw.Close()
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("codemode serve did not stop")
			}
		})
		lines := logLines(pr)
		metrics = addressIn(t, lines, `metrics on (http://\S+)`)
		a := addressIn(t, lines, `listening on (\S+)`)
		go func() {
			for range lines {
			}
		}()
		c, err := remote.Dial(a, remote.WithLimits(codemode.Limits{Deadline: time.Minute}))
		require.NoError(t, err)
		defer c.Close()
		var arrived sync.WaitGroup
		arrived.Add(burst)
		req := codemode.Request{Code: "async () => (await db.q()) + 1", Providers: []codemode.Provider{{Name: "db"}},
			Dispatch: func(context.Context, string, string, string) (string, error) {
				arrived.Done()
				arrived.Wait()
				return `{"result":1}`, nil
			}}
		var wg sync.WaitGroup
		errs := make(chan string, burst)
		for range burst {
			wg.Go(func() {
				if res := c.Execute(ctx, req); res.Error != "" || string(res.Result) != "2" {
					errs <- res.Error + string(res.Result)
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("a program of the burst: %s", e)
		}
		return metrics
	}
	var kept, none string
	var wg sync.WaitGroup
	wg.Go(func() { kept = serveBurst("64MiB") })
	wg.Go(func() { none = serveBurst("0") })
	wg.Wait()
	if t.Failed() {
		return
	}
	// Past the trim (a sandbox idle for a second is trimmed by the next
	// pass, within two), the daemon given room still holds every image.
	time.Sleep(3 * time.Second)
	held := inUse(kept)
	assert.GreaterOrEqual(t, held, float64(burst*(100<<10)), "the sandboxes of the burst keep their pages")
	require.Eventually(t, func() bool { return inUse(none) <= held/2 }, 30*time.Second, 100*time.Millisecond,
		"a daemon with no idle memory gives the burst's pages back")

	var stderr strings.Builder
	assert.Equal(t, exitUsage, Main(context.Background(), []string{"serve", "--idle-memory", "-1"}, nil, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "invalid size")
}

// TestServeMemoryBudget: --memory-budget takes a size up to what the
// process may use, or a percentage of it; a budget the process cannot
// have, and 0, are usage errors that say why (a 4GiB budget in a 768MiB
// container was accepted, and the kernel killed the daemon at 792MiB);
// the default is three quarters of what the process may use, and the
// "serving" log line says where that was read. Not parallel: it sets
// GOMEMLIMIT, which the process's limit is read from.
func TestServeMemoryBudget(t *testing.T) {
	codemode.DefaultMemoryBudget() // the process's default, read before GOMEMLIMIT is set here
	const gomemlimit = 768 << 20
	old := debug.SetMemoryLimit(gomemlimit)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	limit, from := codemode.ProcessMemoryLimit()
	if from != "GOMEMLIMIT" {
		t.Skipf("the process may use %d bytes (%s), less than GOMEMLIMIT", limit, from)
	}
	require.Equal(t, int64(gomemlimit), limit)

	for _, c := range []struct {
		flag  string
		bytes int64  // the budget, or 0 for a usage error
		src   string // where it came from, or the error's text
	}{
		{"512MiB", 512 << 20, "--memory-budget"},
		{"768MiB", 768 << 20, "--memory-budget"},
		{"50%", 384 << 20, "--memory-budget 50%"},
		{"", codemode.DefaultMemoryBudget().Bytes(), "default 75%"},
		{"769MiB", 0, "--memory-budget 769MiB is more than the process may use: 768MiB (GOMEMLIMIT)"},
		{"4GiB", 0, "--memory-budget 4GiB is more than the process may use: 768MiB (GOMEMLIMIT)"},
		{"64MiB", 0, "--memory-budget 64MiB cannot hold one program at --memory 32MiB: give at least 80MiB"},
	} {
		var f budgetFlag
		if c.flag != "" {
			require.NoError(t, f.Set(c.flag))
		}
		b, src, err := memoryBudget(f, 0)
		if c.bytes == 0 {
			var ue *usageError
			if assert.ErrorAs(t, err, &ue, "--memory-budget %s", c.flag) {
				assert.Contains(t, err.Error(), c.src)
			}
			continue
		}
		if assert.NoError(t, err, "--memory-budget %s", c.flag) {
			assert.Equal(t, c.bytes, b.Bytes(), "--memory-budget %s", c.flag)
			assert.Equal(t, budgetSource{from: c.src, process: gomemlimit, processFrom: "GOMEMLIMIT"}, src)
		}
	}
	var f budgetFlag
	for v, want := range map[string]string{
		"0":    "a budget of 0 bytes holds no program",
		"0MiB": "a budget of 0 bytes holds no program",
		"NaN":  "invalid size",
		"0%":   "invalid percentage",
		"NaN%": "invalid percentage",
		"101%": "invalid percentage",
	} {
		err := f.Set(v)
		if assert.Error(t, err, v) {
			assert.Contains(t, err.Error(), want, v)
		}
	}

	// Through the command: the usage error, and the source in the log.
	var stderr strings.Builder
	assert.Equal(t, exitUsage, Main(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--memory-budget", "4GiB"},
		nil, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "is more than the process may use: 768MiB (GOMEMLIMIT)")
	stderr.Reset()
	assert.Equal(t, exitUsage, Main(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--memory-budget", "0"},
		nil, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "leave --memory-budget out for the default")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--memory-budget", "100%"}, nil, io.Discard, pw)
		pw.Close()
	}()
	var warned bool
	var serving map[string]any
	for l := range logLines(pr) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m["msg"] {
		case "the memory budget leaves less than a quarter of what the process may use for Go's heap, the C library and the binary":
			warned = true
		case "serving":
			serving = m
			cancel()
		}
	}
	assert.Equal(t, exitOK, <-done)
	assert.True(t, warned, "a budget of all the process may use is warned of")
	require.NotNil(t, serving, "no serving line")
	assert.Equal(t, "--memory-budget 100%", serving["memory_budget_from"])
	assert.Equal(t, float64(gomemlimit), serving["memory_budget"])
	assert.Equal(t, float64(gomemlimit), serving["process_memory"])
	assert.Equal(t, "GOMEMLIMIT", serving["process_memory_from"])
}

// TestServeSessionMoves: the case. A session runs on one
// `codemode serve` process; the client seals it (its key never leaves the
// client), the process is killed, and a second process continues it: the
// next program sees the state, and the tool server saw each call once.
func TestServeSessionMoves(t *testing.T) {
	ctx := context.Background()
	start := func() (*exec.Cmd, string) { return startServe(t) }
	var mu sync.Mutex
	var seen []string
	dispatch := func(_ context.Context, provider, tool, args string) (string, error) {
		mu.Lock()
		seen = append(seen, provider+"."+tool+args)
		mu.Unlock()
		return `{"result":{"id":7,"name":"Ada"}}`, nil
	}
	users := []codemode.Provider{{Name: "users", Tools: []string{"get"}}}
	first, a := start()
	c1, err := remote.Dial(a)
	require.NoError(t, err)
	defer c1.Close()
	s := c1.NewSession()
	res := s.Execute(ctx, codemode.Request{Code: "const user = await users.get({id: 7}); const greet = (u) => 'hi ' + u.name",
		Providers: users, Dispatch: dispatch})
	require.Nil(t, res.Err, res.Error)
	res = s.Execute(ctx, codemode.Request{Code: "greet(user)", Providers: users, Dispatch: dispatch})
	require.Nil(t, res.Err, res.Error)
	assert.Equal(t, `"hi Ada"`, string(res.Result))
	key := codemode.SessionKey{Key: []byte("the client's key, never sent out"), Encrypt: true}
	sealed, err := s.Seal(key)
	require.NoError(t, err)
	require.NoError(t, first.Process.Kill())
	first.Wait()

	_, b := start()
	c2, err := remote.Dial(b)
	require.NoError(t, err)
	defer c2.Close()
	s2, err := c2.RestoreSession(sealed, key)
	require.NoError(t, err)
	res = s2.Execute(ctx, codemode.Request{Code: "[greet(user), user.id]", Providers: users, Dispatch: dispatch})
	require.Nil(t, res.Err, res.Error)
	assert.JSONEq(t, `["hi Ada",7]`, string(res.Result))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{`users.get[{"id":7}]`}, seen, "the tool server saw the call once")
}

// startServe starts a `codemode serve` process on loopback, killed when the
// test ends, and returns it and its address.
func startServe(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(selfAs(t, "codemode"), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := logLines(stderr)
	a := addressIn(t, lines, `listening on (\S+)`)
	go func() {
		for range lines { // keep draining
		}
	}()
	return cmd, a
}

// TestLogDurations: the daemon's JSON log writes durations as durations
// ("1.5ms"), not as the handler's bare count of nanoseconds (issue 53).
func TestLogDurations(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{ReplaceAttr: durationText}))
	log.Info("program", "kind", "ok", "elapsed", 1500*time.Microsecond, "host_calls", 2)
	assert.Contains(t, b.String(), `"elapsed":"1.5ms"`)
	assert.Contains(t, b.String(), `"host_calls":2`)
}
