//go:build cgo

package codemode

/*
#include "bridge.h"
*/
import "C"

import (
	"context"
	"strings"
	"time"
	"unsafe"

	"github.com/codemode-go/codemode/internal/jspos"
)

// The two engines of the differential conformance tests
// (conformance_test.go): the plain engine, and a sandbox running global
// code. Neither is API: tests hold the sandbox's behaviour against the
// engine's own on identical text.

// plainOutcome is what a run of the plain engine came to.
type plainOutcome struct {
	threw    bool     // the source threw (or did not compile)
	thrown   string   // String() of the thrown value
	syntax   bool     // the source did not compile
	timedOut bool     // the deadline stopped it
	stalled  bool     // a body's promise never settled
	prints   []string // what print printed
}

// plainRun runs src in the plain engine (bridge_plain.c) under the limits,
// as global code or, with body set, as the body of an async function.
func plainRun(src string, body bool, lim Limits) plainOutcome {
	text := cString(stringBytes(src))
	var b C.int32_t
	if body {
		b = 1
	}
	var out C.bridge_out
	st := C.bridge_plain_run((*C.char)(unsafe.Pointer(&text[0])), C.size_t(len(src)), b, C.int64_t(lim.Deadline),
		C.uint64_t(lim.Memory), C.uint64_t(lim.Stack), &out)
	defer C.bridge_out_free(&out)
	o := plainOutcome{threw: st == C.BRIDGE_THROWN, timedOut: st == C.BRIDGE_TIMEOUT, stalled: st == C.BRIDGE_STALLED,
		syntax: out.syntax != 0}
	if out.data != nil {
		o.thrown = C.GoStringN(out.data, C.int(out.size))
	}
	if out.logs != nil {
		lines := C.GoStringN(out.logs, C.int(out.logs_size))
		o.prints = strings.Split(strings.TrimSuffix(lines, "\n"), "\n")
	}
	return o
}

// runGlobal runs src as global code in a fresh sandbox (everything a run
// has: the guards, the web globals, the lazy globals), with no shape, no
// markers and no wrapper; its completion value is discarded and its jobs
// run. The Result holds the logs; an error is what was thrown (kind js),
// or the deadline's or the memory limit's.
func (e *Executor) runGlobal(ctx context.Context, src string) (*Result, error) {
	p := &program{name: RunJSToolName, mode: C.BRIDGE_MODE_GLOBAL, file: scriptFile,
		smap: sourceMap{file: scriptFileName, shape: jspos.Body, src: src, in: &instrumented{m: jspos.Plain(src)}},
		src:  cString(stringBytes(src))}
	o := e.do(ctx, p, runInput{start: time.Now()})
	if o.refused {
		return nil, o.err
	}
	res := &Result{Logs: o.logs, Stats: o.stats, Effects: o.effects}
	if o.err != nil {
		return res, o.err
	}
	return res, nil
}
