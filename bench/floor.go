package main

/*
#cgo CFLAGS: -I${SRCDIR}/../quickjs -std=gnu11 -Wall
#include "floor.h"
*/
import "C"

import (
	"errors"
	"sync"
	"time"
	"unsafe"

	_ "github.com/codemode-go/codemode/quickjs" // links the engine
)

// outBufs hold the floor's results (passing a stack array to C would move
// it to the heap on every call).
var outBufs = sync.Pool{New: func() any { return new([4096]byte) }}

// floorRun evaluates src (NUL-terminated) in a fresh stock sandbox.
func floorRun(src []byte, host bool) (string, error) {
	out := outBufs.Get().(*[4096]byte)
	defer outBufs.Put(out)
	h := C.int(0)
	if host {
		h = 1
	}
	n := C.floor_run((*C.char)(unsafe.Pointer(&src[0])), C.size_t(len(src)-1), h, (*C.char)(unsafe.Pointer(&out[0])), C.size_t(len(out)))
	if n < 0 {
		return "", errors.New("the floor run failed")
	}
	return string(out[:n]), nil
}

// floorCompile compiles src (NUL-terminated) to bytecode.
func floorCompile(src []byte) ([]byte, error) {
	var n C.size_t
	p := C.floor_compile((*C.char)(unsafe.Pointer(&src[0])), C.size_t(len(src)-1), &n)
	if p == nil {
		return nil, errors.New("the floor could not compile")
	}
	defer C.floor_free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

func floorRunBytecode(bc []byte) (string, error) {
	out := outBufs.Get().(*[4096]byte)
	defer outBufs.Put(out)
	n := C.floor_run_bytecode((*C.uint8_t)(unsafe.Pointer(&bc[0])), C.size_t(len(bc)), (*C.char)(unsafe.Pointer(&out[0])), C.size_t(len(out)))
	if n < 0 {
		return "", errors.New("the floor run failed")
	}
	return string(out[:n]), nil
}

// floorSpin runs for (;;) {} under a deadline of d in a fresh sandbox.
func floorSpin(d time.Duration) error {
	if C.floor_spin(C.int64_t(d)) != 0 {
		return errors.New("the deadline did not stop the floor")
	}
	return nil
}
