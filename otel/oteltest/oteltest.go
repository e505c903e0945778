// Package oteltest renders recorded OpenTelemetry spans for tests: the
// span tree of a run, as text.
package oteltest

import (
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Tree renders ended spans (tracetest.SpanRecorder.Ended) as an indented
// tree, two spaces a level, children in start order, a failed span
// followed by " [error: <description>]": a test compares it whole.
func Tree(spans []sdktrace.ReadOnlySpan) string {
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
	byStart := func(l []sdktrace.ReadOnlySpan) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].StartTime().Before(l[j].StartTime()) })
	}
	byStart(roots)
	var b strings.Builder
	// The depth is the spans' nesting, which the SDK bounds by what the
	// process started; the walk keeps its own stack.
	type item struct {
		s     sdktrace.ReadOnlySpan
		depth int
	}
	stack := make([]item, 0, len(roots))
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, item{roots[i], 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", it.depth), it.s.Name())
		if it.s.Status().Code == codes.Error {
			fmt.Fprintf(&b, " [error: %s]", it.s.Status().Description)
		}
		b.WriteString("\n")
		kids := children[it.s.SpanContext().SpanID()]
		byStart(kids)
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, item{kids[i], it.depth + 1})
		}
	}
	return b.String()
}
