// Package otel turns codemode's [codemode.Observer] into OpenTelemetry
// traces and metrics: a span per run, a child span per tool call (under
// which a handler's own spans nest: its context carries the call's span),
// and run and tool-call counts and durations.
//
//	obs := otel.New(otel.WithTracerProvider(tp), otel.WithMeterProvider(mp))
//	e, _ := codemode.New(codemode.WithObserver(obs))
//
// The caller's context carries its trace into the run: the run's span is
// a child of the span in the context Run or Execute is given.
//
// # Spans
//
// A run is a span named after its kind ("codemode.run", "codemode.execute",
// "codemode.resume"), of kind internal, with
//
//   - codemode.run.kind: run, execute or resume
//   - codemode.run.outcome: ok, paused, or the error kind (js, timeout,
//     memory_exceeded, capability, pending_promise, internal, diverged)
//   - codemode.run.host_calls, codemode.run.peak_memory_bytes
//   - codemode.run.cached: whether the program's bytecode came from the
//     cache (false: it was compiled)
//   - codemode.continuation.id: a resume's continuation
//
// and status Error with the error recorded when it failed (a pause is no
// error). A tool call is a span named "execute_tool <tool>" (the GenAI
// semantic conventions' operation), of kind internal, with
// gen_ai.operation.name "execute_tool", gen_ai.tool.name (the tool's
// policy name: a capability's name, a provider tool's "provider.tool"),
// codemode.tool.provider, codemode.tool.seq (its place among the run's
// calls), codemode.tool.outcome (ok, error, timeout, rejected, budget,
// replayed, paused) and codemode.tool.policy (approved, edited, rejected,
// budget, replayed), error.type set on a failure, and status Error with
// the failure recorded — also when the program caught it. A failure is
// every one the program sees: a handler's error or panic, arguments
// refused with a TypeError, a capability's result that is not JSON, a
// per-call timeout, a rejection or a budget, and a provider tool's answer
// {"error": …} (a DispatchFunc's, a tool server's, an MCP upstream's
// isError result) or one outside the envelope.
//
// # Metrics
//
//   - codemode.run.duration (histogram, s), by codemode.run.kind and
//     codemode.run.outcome
//   - codemode.tool.duration (histogram, s), by gen_ai.tool.name and
//     codemode.tool.outcome (at most 1,024 pairs: past them a tool reads
//     "other", since a program can call a provider's tools by any name)
//
// A histogram's count is the number of runs or calls.
package otel

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/codemode-go/codemode"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/codemode-go/codemode/otel"

// The attribute keys of our own.
const (
	AttrRunKind        = attribute.Key("codemode.run.kind")
	AttrRunOutcome     = attribute.Key("codemode.run.outcome")
	AttrRunHostCalls   = attribute.Key("codemode.run.host_calls")
	AttrRunPeakMemory  = attribute.Key("codemode.run.peak_memory_bytes")
	AttrRunCached      = attribute.Key("codemode.run.cached")
	AttrContinuationID = attribute.Key("codemode.continuation.id")
	// AttrSessionID is the id of the session a run is one of.
	AttrSessionID    = attribute.Key("codemode.session.id")
	AttrToolProvider = attribute.Key("codemode.tool.provider")
	AttrToolSeq      = attribute.Key("codemode.tool.seq")
	AttrToolOutcome  = attribute.Key("codemode.tool.outcome")
	AttrToolPolicy   = attribute.Key("codemode.tool.policy")
	// The run's effects ledger (codemode.Effects): the calls that reached
	// their tool and those whose handler returned, the write calls that
	// completed, failed or did not return, and its summary ("no tool
	// ran", "only reads ran", "store.put completed before the timeout").
	AttrEffectsStarted        = attribute.Key("codemode.effects.started")
	AttrEffectsCompleted      = attribute.Key("codemode.effects.completed")
	AttrEffectsWritesComplete = attribute.Key("codemode.effects.writes_completed")
	AttrEffectsWritesFailed   = attribute.Key("codemode.effects.writes_failed")
	AttrEffectsWritesRunning  = attribute.Key("codemode.effects.writes_running")
	AttrEffectsSummary        = attribute.Key("codemode.effects.summary")
)

// The semantic conventions' keys used (GenAI's execute_tool, error.type).
const (
	attrOperation = attribute.Key("gen_ai.operation.name")
	attrToolName  = attribute.Key("gen_ai.tool.name")
	attrErrorType = attribute.Key("error.type")
)

// Option configures [New].
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider sets the tracer provider (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets the meter provider (default: the global one).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// Observer is the codemode.Observer New returns.
type Observer struct {
	tracer  trace.Tracer
	runDur  metric.Float64Histogram
	toolDur metric.Float64Histogram
	// The attribute sets of the measurements, made once per pair (an
	// attribute set sorts and allocates): by kind and outcome, and by
	// tool and outcome.
	runSets, toolSets sets
	noTraces          bool // the TracerProvider is OpenTelemetry's no-op: no span is started
}

// sets are the measurement options of pairs of attribute values, made
// once each, at most maxSets of them: a program can call tools by any
// name (a provider's undeclared ones reach the dispatch), and a metric's
// attributes must not grow with what programs write; past the bound the
// first value reads "other".
type sets struct {
	m sync.Map // [2]string -> metric.MeasurementOption
	n atomic.Int32
}

// maxSets bounds the attribute pairs a metric is recorded with.
const maxSets = 1024

func (s *sets) of(k1 attribute.Key, v1 string, k2 attribute.Key, v2 string) metric.MeasurementOption {
	key := [2]string{v1, v2}
	if o, ok := s.m.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	if s.n.Load() >= maxSets {
		return metric.WithAttributes(k1.String("other"), k2.String(v2))
	}
	o := metric.WithAttributeSet(attribute.NewSet(k1.String(v1), k2.String(v2)))
	if _, loaded := s.m.LoadOrStore(key, o); !loaded {
		s.n.Add(1)
	}
	return o
}

var _ codemode.Observer = (*Observer)(nil)

// New returns an Observer that records spans and metrics with the
// providers (the global ones by default). Instruments that cannot be made
// are left out, never an error: observing must not stop a run.
func New(opts ...Option) *Observer {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	_, noTraces := c.tp.(noop.TracerProvider)
	o := &Observer{tracer: c.tp.Tracer(ScopeName), noTraces: noTraces}
	m := c.mp.Meter(ScopeName)
	o.runDur, _ = m.Float64Histogram("codemode.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long runs took, by kind and outcome."))
	o.toolDur, _ = m.Float64Histogram("codemode.tool.duration", metric.WithUnit("s"),
		metric.WithDescription("How long tool calls took, by tool and outcome."))
	return o
}

// RunStart starts the run's span, a child of ctx's.
func (o *Observer) RunStart(ctx context.Context, run codemode.RunInfo) context.Context {
	if o.noTraces {
		return ctx
	}
	attrs := []attribute.KeyValue{AttrRunKind.String(run.Kind)}
	if run.Session != "" {
		attrs = append(attrs, AttrSessionID.String(run.Session))
	}
	if run.Continuation != "" {
		attrs = append(attrs, AttrContinuationID.String(run.Continuation))
	}
	ctx, _ = o.tracer.Start(ctx, "codemode."+run.Kind, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx
}

// RunEnd ends the run's span and records its duration.
func (o *Observer) RunEnd(ctx context.Context, run codemode.RunInfo, end codemode.RunEnd) {
	if span := trace.SpanFromContext(ctx); !o.noTraces && span.IsRecording() {
		span.SetAttributes(AttrRunOutcome.String(end.Outcome), AttrRunHostCalls.Int(end.HostCalls),
			AttrRunPeakMemory.Int64(end.PeakMemory), AttrRunCached.Bool(end.Cached))
		if e := end.Effects; e != nil || end.Err != nil {
			var started, completed, wc, wf, wr int
			if e != nil {
				started, completed, wc, wf, wr = e.Started, e.Completed, e.WritesCompleted, e.WritesFailed, e.WritesRunning
			}
			span.SetAttributes(AttrEffectsStarted.Int(started), AttrEffectsCompleted.Int(completed),
				AttrEffectsWritesComplete.Int(wc), AttrEffectsWritesFailed.Int(wf), AttrEffectsWritesRunning.Int(wr),
				AttrEffectsSummary.String(e.Summary()))
		}
		if end.Err != nil {
			span.RecordError(end.Err)
			span.SetAttributes(attrErrorType.String(end.Outcome))
			span.SetStatus(codes.Error, end.Err.Error())
		}
		span.End()
	}
	if o.runDur != nil && o.runDur.Enabled(ctx) {
		o.runDur.Record(ctx, end.Elapsed.Seconds(), o.runSets.of(AttrRunKind, run.Kind, AttrRunOutcome, end.Outcome))
	}
}

// ToolStart starts the call's span, a child of the run's.
func (o *Observer) ToolStart(ctx context.Context, call codemode.ToolCallInfo) context.Context {
	if o.noTraces {
		return ctx
	}
	ctx, _ = o.tracer.Start(ctx, "execute_tool "+call.Tool, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrOperation.String("execute_tool"), attrToolName.String(call.Tool),
			AttrToolProvider.String(call.Provider), AttrToolSeq.Int(call.Seq)))
	return ctx
}

// ToolEnd ends the call's span and records its duration.
func (o *Observer) ToolEnd(ctx context.Context, call codemode.ToolCallInfo, end codemode.ToolCallEnd) {
	if span := trace.SpanFromContext(ctx); !o.noTraces && span.IsRecording() {
		attrs := make([]attribute.KeyValue, 1, 3)
		attrs[0] = AttrToolOutcome.String(end.Outcome)
		if end.Policy != "" {
			attrs = append(attrs, AttrToolPolicy.String(end.Policy))
		}
		if end.Err != nil {
			span.RecordError(end.Err)
			attrs = append(attrs, attrErrorType.String(end.Outcome))
			span.SetStatus(codes.Error, end.Err.Error())
		}
		span.SetAttributes(attrs...)
		span.End()
	}
	if o.toolDur != nil && o.toolDur.Enabled(ctx) {
		o.toolDur.Record(ctx, end.Elapsed.Seconds(), o.toolSets.of(attrToolName, call.Tool, AttrToolOutcome, end.Outcome))
	}
}
