package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// TestTraceFile: `codemode batch --trace-file` writes OTLP/JSON lines that
// the OpenTelemetry Collector's own decoder (pdata's) reads: ids in hex,
// enums as integers, a run span per job with its tool calls as children,
// and a failed call (a fixture's error envelope, a Go error) an error span
// with error.type, caught or not.
func TestTraceFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	fixtures := write("fixtures.json", `{"store": {"get": [{"args": [1], "result": {"v": 10}}, {"args": [3], "error": "no such row"}]}}`)
	jobs := write("jobs.jsonl", `{"id": 1, "code": "return (await store.get(1)).v"}
{"id": 2, "code": "try { await store.get(2) } catch (e) { return 'caught' }"}
{"id": 3, "code": "try { await store.get(3) } catch (e) { return e.message }"}
`)
	traces := filepath.Join(dir, "traces.jsonl")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"batch", "--stable", "--tools", fixtures, "--trace-file", traces, jobs}, nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	f, err := os.Open(traces)
	require.NoError(t, err)
	defer f.Close()
	type span struct {
		name, outcome, errType string
		parent, id             pcommon.SpanID
		trace                  pcommon.TraceID
		kind                   ptrace.SpanKind
		status                 ptrace.StatusCode
		statusText             string
	}
	var spans []span
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		lines++
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(sc.Bytes())
		require.NoError(t, err, "a line is OTLP/JSON to the Collector: %s", sc.Bytes())
		var raw struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []map[string]json.RawMessage
				}
			}
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &raw))
		for _, rs := range raw.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					assert.Regexp(t, `^"[0-9a-f]{32}"$`, string(s["traceId"]), "a trace id in hex")
					assert.Regexp(t, `^"[0-9a-f]{16}"$`, string(s["spanId"]), "a span id in hex")
					assert.Equal(t, "1", string(s["kind"]), "the kind as an integer (internal)")
					if st, ok := s["status"]; ok && strings.Contains(string(st), "code") {
						assert.Contains(t, string(st), `"code":2`, "a status code as an integer (error)")
					}
				}
			}
		}
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			name, ok := rs.Resource().Attributes().Get("service.name")
			assert.True(t, ok)
			assert.Equal(t, "codemode", name.Str())
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				assert.Equal(t, "github.com/codemode-go/codemode/otel", ss.Scope().Name())
				for k := 0; k < ss.Spans().Len(); k++ {
					s := ss.Spans().At(k)
					sp := span{name: s.Name(), parent: s.ParentSpanID(), id: s.SpanID(), trace: s.TraceID(), kind: s.Kind(),
						status: s.Status().Code(), statusText: s.Status().Message()}
					for _, key := range []string{"codemode.tool.outcome", "codemode.run.outcome"} {
						if v, ok := s.Attributes().Get(key); ok {
							sp.outcome = v.Str()
						}
					}
					if v, ok := s.Attributes().Get("error.type"); ok {
						sp.errType = v.Str()
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	require.NoError(t, sc.Err())
	require.NotZero(t, lines)
	byName := map[string][]span{}
	ids := map[pcommon.SpanID]span{}
	for _, s := range spans {
		assert.False(t, s.id.IsEmpty())
		assert.False(t, s.trace.IsEmpty())
		assert.Equal(t, ptrace.SpanKindInternal, s.kind, s.name)
		byName[s.name] = append(byName[s.name], s)
		ids[s.id] = s
	}
	require.Len(t, byName["codemode.execute"], 3, "a run span per job")
	require.Len(t, byName["execute_tool store.get"], 3)
	var calls []string
	for _, s := range byName["execute_tool store.get"] {
		run := ids[s.parent]
		assert.Equal(t, "codemode.execute", run.name, "a call is its run's child")
		assert.Equal(t, run.trace, s.trace)
		calls = append(calls, fmt.Sprintf("%s %s %s %q", s.outcome, s.errType, s.status, s.statusText))
	}
	sort.Strings(calls)
	assert.Equal(t, []string{
		`error error Error "no fixture of get matches the arguments [2]"`,
		`error error Error "no such row"`,
		`ok  Unset ""`,
	}, calls, "the caught failures are error spans")
	for _, s := range byName["codemode.execute"] {
		assert.Equal(t, "ok", s.outcome)
		assert.Equal(t, ptrace.StatusCodeUnset, s.status)
	}
}

// collector is a fake OTLP/gRPC collector on loopback that keeps the span
// names it receives.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLP: `codemode run --otlp host:port` exports its spans to a
// collector over OTLP/gRPC before it exits.
func TestOTLP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	c := &collector{}
	coltracepb.RegisterTraceServiceServer(g, c)
	go g.Serve(ln)
	defer g.Stop()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"run", "--otlp", ln.Addr().String(), "-"}, strings.NewReader("return 6 * 7"), &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	assert.Equal(t, "{\"result\":42,\"logs\":[]}\n", stdout.String())
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, []string{"codemode.run"}, c.names, "flushed at exit")
}

// TestTelemetryTimeout: with the exporter hung (a listener that accepts
// and never answers) or unreachable, run and batch print their results
// and exit within --telemetry-timeout (2 s by default; the exporters' own
// bound is 10 s), saying on stderr that telemetry was not flushed. A hung
// exporter holds the exit for the whole bound, so it is the flag's.
func TestTelemetryTimeout(t *testing.T) {
	t.Parallel()
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		hung.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never read nor answered
			mu.Unlock()
		}
	}()
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := gone.Addr().String()
	require.NoError(t, gone.Close())

	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"id": 1, "code": "return 6 * 7"}`+"\n"), 0o644))
	type tc struct {
		cmd, endpoint string
		hung          bool
		timeout       time.Duration // 0: the default
		took          time.Duration
		code          int
		stdout        string
		stderr        string
	}
	var cases []*tc
	for _, cmd := range []string{"run", "batch"} {
		for _, ep := range []string{hung.Addr().String(), "http://" + hung.Addr().String(), refused, "http://" + refused} {
			cases = append(cases, &tc{cmd: cmd, endpoint: ep, hung: strings.Contains(ep, hung.Addr().String())})
		}
	}
	cases = append(cases, &tc{cmd: "run", endpoint: hung.Addr().String(), hung: true, timeout: 3 * time.Second})
	// The cases wait concurrently: they are waits, not work.
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{c.cmd, "--otlp", c.endpoint}
			if c.timeout > 0 {
				args = append(args, "--telemetry-timeout", c.timeout.String())
			}
			var stdin io.Reader
			if c.cmd == "run" {
				args, stdin = append(args, "-"), strings.NewReader("return 6 * 7")
			} else {
				args = append(args, "--stable", jobs)
			}
			var stdout, stderr bytes.Buffer
			start := time.Now()
			c.code = Main(context.Background(), args, stdin, &stdout, &stderr)
			c.took = time.Since(start)
			c.stdout, c.stderr = stdout.String(), stderr.String()
		}()
	}
	wg.Wait()
	for _, c := range cases {
		name := fmt.Sprintf("%s --otlp %s --telemetry-timeout %v", c.cmd, c.endpoint, c.timeout)
		want := telemetryTimeoutOneShot
		if c.timeout > 0 {
			want = c.timeout
		}
		require.Equal(t, exitOK, c.code, "%s: %s", name, c.stderr)
		assert.Contains(t, c.stdout, "42", name)
		assert.Less(t, c.took, want+5*time.Second, "%s: the exit waits for telemetry at most --telemetry-timeout", name)
		if c.hung {
			assert.GreaterOrEqual(t, c.took, want, "%s: a hung exporter is waited for the whole bound", name)
			assert.Contains(t, c.stderr, fmt.Sprintf("codemode: telemetry: not flushed within --telemetry-timeout %v; what was not sent is dropped\n", want), name)
		}
	}
}

// TestTelemetryTimeoutFlag: -h says the bound and its default per
// command; a bound that is not positive is refused.
func TestTelemetryTimeoutFlag(t *testing.T) {
	t.Parallel()
	for cmd, def := range map[string]string{"run": "2s", "batch": "2s", "serve": "10s", "mcp": "10s"} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, exitOK, Main(context.Background(), []string{cmd, "-h"}, nil, &stdout, &stderr), cmd)
		help := stderr.String()
		i := strings.Index(help, "-telemetry-timeout duration")
		require.GreaterOrEqual(t, i, 0, "%s -h names --telemetry-timeout", cmd)
		assert.Contains(t, help[i:], "(default "+def+")", cmd)
	}
	for _, bad := range []string{"0", "-1s"} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), []string{"run", "--telemetry-timeout", bad, "-"}, strings.NewReader("return 1"), &stdout, &stderr)
		assert.Equal(t, exitUsage, code, bad)
		assert.Contains(t, stderr.String(), "--telemetry-timeout must be positive", bad)
		assert.Empty(t, stdout.String())
	}
}
