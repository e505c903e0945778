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
	"unsafe"
)

//go:embed js/web.js
var webSource string

//go:embed js/url.js
var urlSource string

// webFile and urlFile name web.js's and url.js's frames, which error
// renderings drop.
const (
	webFile = "<codemode:web>"
	urlFile = "<codemode:url>"
)

// loadWeb compiles js/web.js and js/url.js once per process and hands
// their bytecode to C, where it stays for the life of the process: the web
// globals evaluate web.js in a sandbox the first time a script reads one of
// them, and web.js reads url.js the first time the run needs URL. It runs
// when the process's first such read asks for it (go_load_web), not
// before: the compile is some 7 ms, which a process that never reads one
// never pays. The bytecode leaves out the source and the line numbers
// (three quarters of its size, and reading bytecode is most of what a
// run's first read of a web global costs): their frames are dropped from
// renderings anyway, and their functions print as [native code], as a
// browser's own do.
var loadWeb = sync.OnceValue(func() error {
	bc, err := compileScriptStripped(webSource, webFile, C.BRIDGE_STRIP_ALL)
	if err != nil {
		return err
	}
	ubc, err := compileScriptStripped(urlSource, urlFile, C.BRIDGE_STRIP_ALL)
	if err != nil {
		return err
	}
	C.bridge_set_web((*C.uint8_t)(C.CBytes(bc)), C.size_t(len(bc)), (*C.uint8_t)(C.CBytes(ubc)), C.size_t(len(ubc)))
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

//export go_text_label
func go_text_label(label *C.char, n C.size_t, name *C.char, nameCap C.size_t, nameLen *C.size_t) (id C.int32_t) {
	defer func() {
		if recover() != nil {
			id = -1
		}
	}()
	i, canonical := textLabel(C.GoStringN(label, C.int(n)))
	if i < 0 || len(canonical) > int(nameCap) {
		return -1
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(name)), int(nameCap)), canonical)
	*nameLen = C.size_t(len(canonical))
	return C.int32_t(i)
}

//export go_text_decode
func go_text_decode(id C.int32_t, state *C.uint32_t, in *C.uint8_t, n C.size_t, flags C.int32_t, out *C.char, outCap C.size_t) (written C.int64_t) {
	defer func() {
		if recover() != nil {
			written = -2
		}
	}()
	var src []byte
	if n > 0 {
		src = unsafe.Slice((*byte)(unsafe.Pointer(in)), int(n))
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(out)), int(outCap))
	w, next, ok, err := textDecode(int(id), uint32(*state), src, flags&1 != 0, flags&2 != 0, dst)
	if err != nil {
		return -2
	}
	*state = C.uint32_t(next)
	if !ok {
		return -1
	}
	return C.int64_t(w)
}
