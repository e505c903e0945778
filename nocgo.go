//go:build !cgo

package codemode

// codemode runs every sandbox in QuickJS-ng, a C engine, through cgo: it
// cannot be built without it. This file is all the package has when cgo is
// off, so the build fails on the one line below, whose error names the fix:
// build with CGO_ENABLED=1 and a C toolchain (gcc or clang) on PATH.
var _ = codemode_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler_such_as_gcc_or_clang
