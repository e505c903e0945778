//go:build cgo

package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"sort"
	"unsafe"
)

// WithModules makes host-provided ES modules importable by name from the
// sandbox: `const { greet } = await import("helpers.js")` in a script, and
// `import { greet } from "helpers.js"` between the modules. Each source is
// compiled once, when the executor is made (New fails on a syntax error),
// and evaluated afresh in every run that imports it: nothing a run does to
// a module is seen by the next. Any other specifier rejects as before
// ("could not load module '<name>'"); a relative specifier in a module
// resolves against the importing module's name.
func WithModules(modules map[string]string) Option {
	return func(c *config) error {
		if c.modules == nil {
			c.modules = map[string]string{}
		}
		for name, src := range modules {
			c.modules[name] = src
		}
		return nil
	}
}

// moduleTable is an executor's compiled modules, in C memory for C's
// loader; freed with the executor.
type moduleTable struct {
	mods  *C.bridge_module
	n     int
	names []string // sorted
}

// compileModules compiles every module (in name order, so that the first
// error is always the same).
func compileModules(modules map[string]string) (*moduleTable, error) {
	if len(modules) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, name)
	}
	sort.Strings(names)
	t := &moduleTable{n: len(names), names: names}
	t.mods = (*C.bridge_module)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof(C.bridge_module{}))))
	mods := unsafe.Slice(t.mods, len(names))
	srcs := (*C.bridge_source)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof(C.bridge_source{}))))
	defer C.free(unsafe.Pointer(srcs))
	ss := unsafe.Slice(srcs, len(names))
	for i, name := range names {
		if name == "" {
			t.free()
			return nil, fmt.Errorf("codemode: a module has an empty name")
		}
		mods[i].name = C.CString(name)
		ss[i] = C.bridge_source{name: mods[i].name, src: C.CString(modules[name]), len: C.size_t(len(modules[name]))}
	}
	defer func() {
		for _, s := range ss {
			C.free(unsafe.Pointer(s.src))
		}
	}()
	for i, name := range names {
		data, err := compileModule(srcs, len(names), i, name)
		if err != nil {
			t.free()
			return nil, err
		}
		mods[i].bc, mods[i].len = (*C.uint8_t)(C.CBytes(data)), C.size_t(len(data))
	}
	return t, nil
}

// has says whether the table holds a module of that name.
func (t *moduleTable) has(name string) bool {
	if t == nil {
		return false
	}
	i := sort.SearchStrings(t.names, name)
	return i < len(t.names) && t.names[i] == name
}

func (t *moduleTable) free() {
	if t == nil || t.mods == nil {
		return
	}
	for _, m := range unsafe.Slice(t.mods, t.n) {
		C.free(unsafe.Pointer(m.name))
		C.free(unsafe.Pointer(m.bc))
	}
	C.free(unsafe.Pointer(t.mods))
	t.mods = nil
}
