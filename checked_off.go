//go:build cgo && !codemode_checked

package codemode

// checkedMode is false: sandboxes are restored from per-slot snapshot images
// in arenas. Build with -tags codemode_checked to build and free every
// sandbox the straightforward way instead.
const checkedMode = false
