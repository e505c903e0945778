package otel_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/codemode-go/codemode"
	cotel "github.com/codemode-go/codemode/otel"
)

// A run's span and its tool calls' spans, recorded in memory: in a
// service, the TracerProvider exports to a collector.
func Example() {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	e, err := codemode.New(codemode.WithObserver(cotel.New(cotel.WithTracerProvider(tp))),
		codemode.WithCapability(codemode.Capability{Name: "lookup", Func: func(context.Context, json.RawMessage) (any, error) {
			return "ada", nil
		}}))
	if err != nil {
		panic(err)
	}
	defer e.Close()
	res, _ := e.Run(context.Background(), `return lookup({id: 1})`)
	fmt.Println(string(res.Value))
	for _, s := range sr.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// "ada"
	// execute_tool lookup
	// codemode.run
}
