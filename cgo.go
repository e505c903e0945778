package codemode

// Every #cgo directive of the package lives here. The engine itself is
// compiled by the carrier module (see package quickjs); the C units
// (bridge_*.c) include our declarations of its API from quickjs/quickjs_api.h.

/*
#cgo CFLAGS: -I${SRCDIR}/quickjs -D_GNU_SOURCE -std=gnu11 -Wall -Wextra
#cgo LDFLAGS: -lm
*/
import "C"

import (
	_ "github.com/codemode-go/codemode/quickjs" // links the QuickJS-ng engine
)
