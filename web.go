//go:build cgo

package codemode

/*
#include "bridge.h"
*/
import "C"

import (
	_ "embed"
	"errors"
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

//export go_domain_to_ascii
func go_domain_to_ascii(domain *C.char, n C.size_t, out **C.char, length *C.size_t) (rc C.int32_t) {
	defer func() {
		if recover() != nil {
			rc = 1 // x/net/idna panicking on some input: not a valid domain
		}
	}()
	ascii, err := domainToASCII(C.GoStringN(domain, C.int(n)))
	switch {
	case errors.Is(err, errIDNALabel):
		return 2
	case err != nil:
		return 1
	}
	*out = (*C.char)(C.CBytes([]byte(ascii)))
	*length = C.size_t(len(ascii))
	return 0
}
