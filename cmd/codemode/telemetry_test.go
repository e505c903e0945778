package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestTraceFile: `codemode batch --trace-file` writes OTLP JSON lines that
// parse back as ExportTraceServiceRequests: a run span per job with its
// tool calls as children.
func TestTraceFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	fixtures := write("fixtures.json", `{"store": {"get": [{"args": [1], "result": {"v": 10}}]}}`)
	jobs := write("jobs.jsonl", `{"id": 1, "code": "return (await store.get(1)).v"}
{"id": 2, "code": "try { await store.get(2) } catch (e) { return 'caught' }"}
`)
	traces := filepath.Join(dir, "traces.jsonl")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"batch", "--stable", "--tools", fixtures, "--trace-file", traces, jobs}, nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	f, err := os.Open(traces)
	require.NoError(t, err)
	defer f.Close()
	type span struct{ name, parent, id, outcome string }
	var spans []span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var req coltracepb.ExportTraceServiceRequest
		require.NoError(t, protojson.Unmarshal(sc.Bytes(), &req), "a line is OTLP JSON")
		for _, rs := range req.ResourceSpans {
			assert.Equal(t, "service.name", rs.Resource.Attributes[0].Key)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := span{name: s.Name, parent: hex.EncodeToString(s.ParentSpanId), id: hex.EncodeToString(s.SpanId)}
					for _, a := range s.Attributes {
						if a.Key == "codemode.tool.outcome" || a.Key == "codemode.run.outcome" {
							sp.outcome = a.Value.GetStringValue()
						}
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	require.NoError(t, sc.Err())
	byName := map[string][]span{}
	ids := map[string]span{}
	for _, s := range spans {
		byName[s.name] = append(byName[s.name], s)
		ids[s.id] = s
	}
	require.Len(t, byName["codemode.execute"], 2, "a run span per job")
	require.Len(t, byName["execute_tool store.get"], 2)
	outcomes := map[string]bool{}
	for _, s := range byName["execute_tool store.get"] {
		assert.Equal(t, "codemode.execute", ids[s.parent].name, "a call is its run's child")
		outcomes[s.outcome] = true
	}
	assert.Equal(t, map[string]bool{"ok": true, "error": true}, outcomes, "the caught failure is recorded")
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
