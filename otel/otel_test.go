package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/codemode-go/codemode"
	cotel "github.com/codemode-go/codemode/otel"
	"github.com/codemode-go/codemode/otel/oteltest"
)

// observed is an executor with capabilities, observed into an in-memory
// span recorder and metric reader.
func observed(t *testing.T, opts ...codemode.Option) (*codemode.Executor, *tracetest.SpanRecorder, *sdkmetric.ManualReader, trace.Tracer) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mr := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(mr))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	tracer := tp.Tracer("test")
	opts = append(opts, codemode.WithObserver(cotel.New(cotel.WithTracerProvider(tp), cotel.WithMeterProvider(mp))),
		codemode.WithCapability(codemode.Capability{Name: "query", Async: true,
			Func: func(ctx context.Context, args json.RawMessage) (any, error) {
				_, span := tracer.Start(ctx, "db.query") // the handler's own span
				defer span.End()
				return 42, nil
			}}),
		codemode.WithCapability(codemode.Capability{Name: "fail", Func: func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("disk full")
		}}),
		codemode.WithCapability(codemode.Capability{Name: "hang", Async: true, Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}),
		codemode.WithGovernance(codemode.Governance{Tools: map[string]codemode.ToolPolicy{"hang": {Timeout: 20 * time.Millisecond}}}))
	e, err := codemode.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e, sr, mr, tracer
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

func find(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return nil
}

// TestSpanTree: the caller's span is the run's parent, each tool call is a
// child of the run, a handler's own span is a child of its call, and a
// timeout and a caught failure are recorded as such.
func TestSpanTree(t *testing.T) {
	e, sr, mr, tracer := observed(t)
	ctx, root := tracer.Start(context.Background(), "request")
	res, err := e.Run(ctx, `
		const n = await query({sql: 'select 1'})
		try { fail({}) } catch (e) {}
		try { await hang({}) } catch (e) {}
		return n`)
	root.End()
	require.NoError(t, err)
	assert.Equal(t, "42", string(res.Value))
	spans := sr.Ended()
	assert.Equal(t, `request
  codemode.run
    execute_tool query
      db.query
    execute_tool fail [error: disk full]
    execute_tool hang [error: tool "hang" timed out after 20ms (its per-call timeout)]
`, oteltest.Tree(spans))
	run := find(t, spans, "codemode.run")
	a := attrs(run)
	assert.Equal(t, "run", a[cotel.AttrRunKind])
	assert.Equal(t, "ok", a[cotel.AttrRunOutcome])
	assert.Equal(t, "3", a[cotel.AttrRunHostCalls])
	assert.NotEmpty(t, a[cotel.AttrRunPeakMemory])
	// The ledger: three calls reached their tools; hang's handler was
	// left running by its per-call timeout (every tool is a write here).
	assert.Equal(t, "3", a[cotel.AttrEffectsStarted])
	assert.Equal(t, "2", a[cotel.AttrEffectsCompleted])
	assert.Equal(t, "1", a[cotel.AttrEffectsWritesComplete])
	assert.Equal(t, "1", a[cotel.AttrEffectsWritesFailed])
	assert.Equal(t, "1", a[cotel.AttrEffectsWritesRunning])
	assert.Equal(t, "query completed; fail failed (it may have written first); hang did not return (it may have taken effect)",
		a[cotel.AttrEffectsSummary])
	assert.Equal(t, codes.Unset, run.Status().Code)
	q := attrs(find(t, spans, "execute_tool query"))
	assert.Equal(t, "execute_tool", q["gen_ai.operation.name"])
	assert.Equal(t, "query", q["gen_ai.tool.name"])
	assert.Equal(t, "ok", q[cotel.AttrToolOutcome])
	assert.Equal(t, "0", q[cotel.AttrToolSeq])
	h := attrs(find(t, spans, "execute_tool hang"))
	assert.Equal(t, "timeout", h[cotel.AttrToolOutcome])
	assert.Equal(t, "timeout", h["error.type"])
	assert.Equal(t, "error", attrs(find(t, spans, "execute_tool fail"))[cotel.AttrToolOutcome])

	var rm metricdata.ResourceMetrics
	require.NoError(t, mr.Collect(context.Background(), &rm))
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				outcome := ""
				for _, kv := range dp.Attributes.ToSlice() {
					if strings.HasSuffix(string(kv.Key), "outcome") {
						outcome = kv.Value.String()
					}
				}
				counts[m.Name+" "+outcome] += dp.Count
			}
		}
	}
	assert.Equal(t, map[string]uint64{"codemode.run.duration ok": 1, "codemode.tool.duration ok": 1,
		"codemode.tool.duration error": 1, "codemode.tool.duration timeout": 1}, counts)
}

// TestFailedRunSpan: a run that fails is an error span with its kind.
func TestFailedRunSpan(t *testing.T) {
	e, sr, _, _ := observed(t)
	_, err := e.Run(context.Background(), `fail({})`)
	require.Error(t, err)
	run := find(t, sr.Ended(), "codemode.run")
	assert.Equal(t, codes.Error, run.Status().Code)
	assert.Equal(t, "capability", attrs(run)[cotel.AttrRunOutcome])
	assert.Equal(t, "capability", attrs(run)["error.type"])
}

// TestExecuteSpans: provider calls are spans too, named provider.tool.
func TestExecuteSpans(t *testing.T) {
	e, sr, _, tracer := observed(t)
	res := e.Execute(context.Background(), codemode.Request{Code: `async () => await db.get(1)`,
		Providers: []codemode.Provider{{Name: "db"}},
		Dispatch: func(ctx context.Context, provider, tool, args string) (string, error) {
			_, span := tracer.Start(ctx, "http.get")
			span.End()
			return `{"result":1}`, nil
		}})
	require.Empty(t, res.Error)
	assert.Equal(t, "codemode.execute\n  execute_tool db.get\n    http.get\n", oteltest.Tree(sr.Ended()))
	assert.Equal(t, "db", attrs(find(t, sr.Ended(), "execute_tool db.get"))[cotel.AttrToolProvider])
}

// TestEnvelopeErrorSpan: a provider tool that answers with the error
// envelope (as a tool server or an MCP upstream's isError result does) is
// a failed span with error.type, counted under "error" — the program saw
// the call fail, caught or not; a falsy error is a success.
func TestEnvelopeErrorSpan(t *testing.T) {
	e, sr, mr, _ := observed(t)
	res := e.Execute(context.Background(), codemode.Request{Code: `async () => {
			try { await db.get(1) } catch (e) {}
			try { await db.get(2) } catch (e) {}
			return await db.get(3)
		}`,
		Providers: []codemode.Provider{{Name: "db"}},
		Dispatch: func(_ context.Context, _, _, args string) (string, error) {
			switch args {
			case "[1]":
				return `{"error":"no such row"}`, nil
			case "[2]":
				return `not json`, nil
			}
			return `{"error":"","result":3}`, nil
		}})
	require.Empty(t, res.Error)
	assert.Equal(t, "3", string(res.Result))
	spans := sr.Ended()
	assert.Equal(t, `codemode.execute
  execute_tool db.get [error: no such row]
  execute_tool db.get [error: `+codemode.MsgOutsideEnvelope+`]
  execute_tool db.get
`, oteltest.Tree(spans))
	var failed int
	for _, s := range spans {
		if s.Name() != "execute_tool db.get" {
			continue
		}
		a := attrs(s)
		if s.Status().Code == codes.Error {
			failed++
			assert.Equal(t, "error", a[cotel.AttrToolOutcome])
			assert.Equal(t, "error", a["error.type"])
			require.Len(t, s.Events(), 1, "the failure is recorded")
			assert.Equal(t, "exception", s.Events()[0].Name)
		} else {
			assert.Equal(t, "ok", a[cotel.AttrToolOutcome])
			assert.NotContains(t, a, attribute.Key("error.type"))
		}
	}
	assert.Equal(t, 2, failed)
	var rm metricdata.ResourceMetrics
	require.NoError(t, mr.Collect(context.Background(), &rm))
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "codemode.tool.duration" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				o, _ := dp.Attributes.Value(cotel.AttrToolOutcome)
				counts[o.AsString()] += dp.Count
			}
		}
	}
	assert.Equal(t, map[string]uint64{"error": 2, "ok": 1}, counts)
}
