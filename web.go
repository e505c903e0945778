//go:build cgo

package codemode

/*
#include "bridge.h"
*/
import "C"

import (
	_ "embed"
	"sync"
)

//go:embed js/web.js
var webSource string

// webFile names web.js's frames, which error renderings drop.
const webFile = "<codemode:web>"

// loadWeb compiles js/web.js once per process and hands its bytecode to C,
// where it stays for the life of the process: the web globals evaluate it
// in a sandbox the first time a script reads one of them. It runs when the
// process's first such read asks for it (go_load_web), not before: the
// compile is some 7 ms, which a process that never reads one never pays.
var loadWeb = sync.OnceValue(func() error {
	bc, err := compileScript(webSource, webFile)
	if err != nil {
		return err
	}
	C.bridge_set_web((*C.uint8_t)(C.CBytes(bc)), C.size_t(len(bc)))
	return nil
})

//export go_load_web
func go_load_web() C.int32_t {
	if loadWeb() != nil {
		return -1
	}
	return 0
}
