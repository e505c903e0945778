package remote_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/codemode-go/codemode"
	cotel "github.com/codemode-go/codemode/otel"
	"github.com/codemode-go/codemode/remote"
)

// TestTraceAcrossTheDaemon: one trace holds the client's request, the
// daemon's run and its tool call, and the client's work for the call, in
// that order of nesting (client and daemon record to one recorder here,
// as one collector would gather them).
func TestTraceAcrossTheDaemon(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	prop := propagation.TraceContext{}
	a, _ := daemon(t, remote.ServerOptions{Propagator: prop,
		Executor: []codemode.Option{codemode.WithObserver(cotel.New(cotel.WithTracerProvider(tp)))}})
	c := dial(t, a, remote.WithPropagator(prop))
	tracer := tp.Tracer("client")
	ctx, root := tracer.Start(context.Background(), "client.request")
	res := c.Execute(ctx, codemode.Request{Code: `async () => await db.get(1)`, Providers: []codemode.Provider{{Name: "db"}},
		Dispatch: func(ctx context.Context, _, _, _ string) (string, error) {
			_, span := tracer.Start(ctx, "client.db.get")
			span.End()
			return `{"result":7}`, nil
		}})
	root.End()
	require.Empty(t, res.Error)
	assert.Equal(t, "7", string(res.Result))
	spans := sr.Ended()
	assert.Equal(t, "client.request\n  codemode.execute\n    execute_tool db.get\n      client.db.get\n", spanTree(spans))
	for _, s := range spans {
		assert.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID(), "one trace: %s", s.Name())
	}
}

// spanTree renders spans as an indented tree, children in start order.
func spanTree(spans []sdktrace.ReadOnlySpan) string {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); p.IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), s.Name())
		kids := children[s.SpanContext().SpanID()]
		sort.Slice(kids, func(i, j int) bool { return kids[i].StartTime().Before(kids[j].StartTime()) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}
