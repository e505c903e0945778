package otel_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/codemode-go/codemode"
	cotel "github.com/codemode-go/codemode/otel"
)

// BenchmarkObserved is what observing costs: W1 (a tiny script) and W3
// (100 host calls) with no Observer, with the otel Observer over a no-op
// TracerProvider, and over the SDK exporting to a discarding exporter.
func BenchmarkObserved(b *testing.B) {
	discard := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer discard.Shutdown(context.Background())
	get := codemode.WithCapability(codemode.Capability{Name: "get", Func: func(context.Context, json.RawMessage) (any, error) { return 1, nil }})
	for _, obs := range []struct {
		name string
		opts []codemode.Option
	}{
		{"none", nil},
		{"otel-noop", []codemode.Option{codemode.WithObserver(cotel.New(cotel.WithTracerProvider(noop.NewTracerProvider())))}},
		{"otel-sdk", []codemode.Option{codemode.WithObserver(cotel.New(cotel.WithTracerProvider(discard)))}},
	} {
		e, err := codemode.New(append(obs.opts, get)...)
		if err != nil {
			b.Fatal(err)
		}
		for _, w := range []struct{ name, script string }{
			{"W1", "return {ok: true, n: 2}"},
			{"W3", "let s = 0; for (let i = 0; i < 100; i++) s += get({i}); return s"},
		} {
			b.Run(w.name+"/"+obs.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := e.Run(context.Background(), w.script); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		e.Close()
	}
}
