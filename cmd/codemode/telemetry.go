package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-go/codemode"
	cotel "github.com/codemode-go/codemode/otel"
)

// telemetryFlags are --otlp, --trace-file and --telemetry-timeout.
type telemetryFlags struct {
	otlp, traceFile string
	timeout         time.Duration
}

// The most the exit waits to flush telemetry: for a one-shot command
// (run, batch) a short wait, so an unreachable or hung exporter does not
// hold every invocation (the exporters' own bound is 10 s); a daemon
// (serve, mcp) stops rarely and has more to flush.
const (
	telemetryTimeoutOneShot = 2 * time.Second
	telemetryTimeoutDaemon  = 10 * time.Second
)

// register adds the flags, the flush bound defaulting to def.
func (tf *telemetryFlags) register(fs *flag.FlagSet, def time.Duration) {
	fs.StringVar(&tf.otlp, "otlp", "", "export traces and metrics over OTLP to this collector: host:port (gRPC, plaintext) or an http(s):// URL (HTTP, e.g. http://localhost:4318)")
	fs.StringVar(&tf.traceFile, "trace-file", "", "write every span to this file as OTLP/JSON, a batch of spans (TracesData) per line, as the OpenTelemetry Collector's file exporter writes them")
	durationVar(fs, &tf.timeout, "telemetry-timeout", def, "the most the exit waits to flush --otlp and --trace-file; what is not sent by then is dropped, with a line on stderr")
}

// telemetry is what the flags set up: the executor option that observes
// runs, the propagator a daemon reads and writes trace context with (W3C
// trace context, not baggage: a client's baggage is not the daemon's to
// carry on), and the shutdown (which flushes what is buffered).
type telemetry struct {
	opts     []codemode.Option
	prop     propagation.TextMapPropagator
	shutdown func(context.Context) error
	timeout  time.Duration // --telemetry-timeout: the bound on shutdown
}

// open sets up the exporters the flags ask for (none: no option, nothing
// to shut down). Nothing global is set.
func (tf *telemetryFlags) open(ctx context.Context) (_ *telemetry, err error) {
	if tf.timeout <= 0 {
		return nil, usagef("--telemetry-timeout must be positive")
	}
	t := &telemetry{shutdown: func(context.Context) error { return nil }, timeout: tf.timeout}
	if tf.otlp == "" && tf.traceFile == "" {
		return t, nil
	}
	res := resource.NewSchemaless(semconv.ServiceName("codemode"))
	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	var mp *sdkmetric.MeterProvider
	var closers []func(context.Context) error // each exporter's, as soon as it exists
	defer func() {
		if err != nil {
			for _, c := range closers {
				c(context.Background())
			}
		}
	}()
	if tf.traceFile != "" {
		f, err := os.Create(tf.traceFile)
		if err != nil {
			return nil, usagef("--trace-file: %v", err)
		}
		exp, err := otlptrace.New(ctx, &fileClient{f: f, w: bufio.NewWriter(f)})
		if err != nil {
			f.Close()
			return nil, err
		}
		closers = append(closers, exp.Shutdown)
		topts = append(topts, sdktrace.WithBatcher(exp))
	}
	if tf.otlp != "" {
		texp, mexp, err := otlpExporters(ctx, tf.otlp)
		if texp != nil {
			closers = append(closers, texp.Shutdown)
		}
		if err != nil {
			return nil, usagef("--otlp: %v", err)
		}
		topts = append(topts, sdktrace.WithBatcher(texp))
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
	}
	// From here the providers own the exporters: their shutdowns end them.
	tp := sdktrace.NewTracerProvider(topts...)
	closers = []func(context.Context) error{tp.Shutdown}
	if mp != nil {
		closers = append(closers, mp.Shutdown)
	}
	t.prop = propagation.TraceContext{}
	oopts := []cotel.Option{cotel.WithTracerProvider(tp)}
	if mp != nil {
		oopts = append(oopts, cotel.WithMeterProvider(mp))
	}
	t.opts = []codemode.Option{codemode.WithObserver(cotel.New(oopts...))}
	done := closers
	t.shutdown = func(ctx context.Context) error {
		var errs []error
		for _, c := range done {
			errs = append(errs, c(ctx))
		}
		return errors.Join(errs...)
	}
	return t, nil
}

// executorOptions are the executor options of the governance and
// telemetry flags, and what flushes the telemetry at the end.
func executorOptions(ctx context.Context, gf *govFlags, tl *telemetryFlags, stderr io.Writer) ([]codemode.Option, func(), error) {
	gov, err := gf.options()
	if err != nil {
		return nil, nil, err
	}
	tel, err := tl.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	return append(gov, tel.opts...), func() { tel.close(stderr) }, nil
}

// close flushes and shuts the exporters down within --telemetry-timeout
// (the trace provider first, the meter provider in what is left),
// reporting a failure on stderr.
func (t *telemetry) close(stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	err := t.shutdown(ctx)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "codemode: telemetry: not flushed within --telemetry-timeout %v; what was not sent is dropped\n", t.timeout)
	default: // one line: errors.Join's are one per exporter
		fmt.Fprintf(stderr, "codemode: telemetry: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
}

// otlpExporters are the trace and metric exporters of an --otlp endpoint:
// an http(s):// URL speaks OTLP/HTTP, host:port OTLP/gRPC in plaintext.
func otlpExporters(ctx context.Context, endpoint string) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	if strings.HasPrefix(endpoint, "http://") || strings.HasPrefix(endpoint, "https://") {
		t, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
		if err != nil {
			return nil, nil, err
		}
		m, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/metrics"))
		return t, m, err
	}
	if strings.Contains(endpoint, "://") {
		return nil, nil, fmt.Errorf("%q: want host:port (gRPC) or an http(s):// URL", endpoint)
	}
	t, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, nil, err
	}
	m, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure())
	return t, m, err
}

// fileClient is an otlptrace.Client that writes each upload as a line of
// OTLP/JSON, for a harness without a collector: the OTLP exporter does the
// translation from spans, and the OpenTelemetry Collector's own encoder
// (pdata's) the JSON, as the OTLP specification defines it (hex trace and
// span ids, enums as integers; protojson writes ids in base64 and enums
// by name, which the Collector refuses). A line is a TracesData, the
// form of the Collector's file exporter, which its otlpjsonfile receiver
// reads back.
type fileClient struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

// Start does nothing: the file is open.
func (c *fileClient) Start(context.Context) error { return nil }

// Stop flushes and closes the file.
func (c *fileClient) Stop(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.w.Flush()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// UploadTraces writes one line.
func (c *fileClient) UploadTraces(_ context.Context, spans []*tracepb.ResourceSpans) error {
	b, err := otlpJSON(spans)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return c.w.Flush()
}

// otlpJSON is spans as OTLP/JSON: their protobuf encoding read by pdata's
// unmarshaler, written by its JSON marshaler (one line: JSON escapes every
// newline inside a string).
func otlpJSON(spans []*tracepb.ResourceSpans) ([]byte, error) {
	b, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: spans})
	if err != nil {
		return nil, err
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
	if err != nil {
		return nil, err
	}
	return (&ptrace.JSONMarshaler{}).MarshalTraces(td)
}
