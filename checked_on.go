//go:build cgo && codemode_checked

package codemode

// checkedMode is true (built with -tags codemode_checked): every sandbox is
// a fresh libc-backed runtime freed after its run, so JS_FreeRuntime's
// assertions catch any leaked reference. Slower; for tests and leak hunts.
const checkedMode = true
