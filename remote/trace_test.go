package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// spanObserver is a codemode.Observer making a span per run and per tool
// call with an OpenTelemetry tracer: what the otel module's does, enough
// to follow a trace across the daemon without making that module a
// requirement of remote's users (issue 53).
type spanObserver struct{ tracer trace.Tracer }

func (o spanObserver) RunStart(ctx context.Context, run codemode.RunInfo) context.Context {
	ctx, _ = o.tracer.Start(ctx, "codemode."+run.Kind)
	return ctx
}

func (o spanObserver) RunEnd(ctx context.Context, _ codemode.RunInfo, _ codemode.RunEnd) {
	trace.SpanFromContext(ctx).End()
}

func (o spanObserver) ToolStart(ctx context.Context, call codemode.ToolCallInfo) context.Context {
	ctx, _ = o.tracer.Start(ctx, "execute_tool "+call.Tool)
	return ctx
}

func (o spanObserver) ToolEnd(ctx context.Context, _ codemode.ToolCallInfo, _ codemode.ToolCallEnd) {
	trace.SpanFromContext(ctx).End()
}

// parents maps each ended span's name to its parent's ("" for a root).
func parents(spans []sdktrace.ReadOnlySpan) map[string]string {
	byID := map[trace.SpanID]string{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s.Name()
	}
	out := map[string]string{}
	for _, s := range spans {
		out[s.Name()] = byID[s.Parent().SpanID()]
	}
	return out
}

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
		Executor: []codemode.Option{codemode.WithObserver(spanObserver{tp.Tracer("daemon")})}})
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
	assert.Equal(t, map[string]string{"client.request": "", "codemode.execute": "client.request",
		"execute_tool db.get": "codemode.execute", "client.db.get": "execute_tool db.get"}, parents(spans))
	for _, s := range spans {
		assert.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID(), "one trace: %s", s.Name())
	}

	// A program with no providers travels as one Standalone call: its run
	// is still the request's child.
	ctx, root = tracer.Start(context.Background(), "client.standalone")
	res = c.Execute(ctx, codemode.Request{Code: `async () => 8`})
	root.End()
	require.Empty(t, res.Error)
	assert.Equal(t, map[string]string{"client.standalone": "", "codemode.execute": "client.standalone"},
		parents(sr.Ended()[len(spans):]))
	for _, s := range sr.Ended()[len(spans):] {
		assert.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID(), "one trace: %s", s.Name())
	}
}
