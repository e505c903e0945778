// Package quickjs links the QuickJS-ng engine into a binary and holds our
// declarations of the part of its C API that codemode calls.
//
// The engine source is not vendored. The carrier module
// github.com/buke/quickjs-go compiles QuickJS-ng (its deps/quickjs) in its
// own cgo package; the blank import below links those symbols into every
// binary that imports this package. codemode's C shim declares the API it
// needs in quickjs_api.h and never calls the carrier's Go API.
//
// The declarations are pinned to [EngineVersion]. abi_test.go compiles the
// carrier's real quickjs.h together with quickjs_api.h, so the compiler
// re-checks every prototype, and compares struct layouts and constant values
// computed under both headers: a bump of the carrier that changes the ABI
// fails that test instead of corrupting memory at run time.
package quickjs

import (
	_ "github.com/buke/quickjs-go" // compiles and links the QuickJS-ng engine
)

// EngineVersion is the QuickJS-ng release that quickjs_api.h declares and
// that the carrier module in go.mod compiles. abi_test.go checks it against
// the real header's QJS_VERSION_* macros.
const EngineVersion = "0.15.1"

// Carrier is the Go module that compiles the engine.
const Carrier = "github.com/buke/quickjs-go"
