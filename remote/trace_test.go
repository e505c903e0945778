package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/codemode-go/codemode"
	cotel "github.com/codemode-go/codemode/otel"
	"github.com/codemode-go/codemode/otel/oteltest"
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
	assert.Equal(t, "client.request\n  codemode.execute\n    execute_tool db.get\n      client.db.get\n", oteltest.Tree(spans))
	for _, s := range spans {
		assert.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID(), "one trace: %s", s.Name())
	}

	// A program with no providers travels as one Standalone call: its run
	// is still the request's child.
	ctx, root = tracer.Start(context.Background(), "client.standalone")
	res = c.Execute(ctx, codemode.Request{Code: `async () => 8`})
	root.End()
	require.Empty(t, res.Error)
	assert.Equal(t, "client.standalone\n  codemode.execute\n", oteltest.Tree(sr.Ended()[len(spans):]))
	for _, s := range sr.Ended()[len(spans):] {
		assert.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID(), "one trace: %s", s.Name())
	}
}
