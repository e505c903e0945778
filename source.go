package codemode

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"
import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/codemode-go/codemode/internal/jspos"
	"github.com/codemode-go/codemode/quickjs"
)

// source.go: the one path a program's source takes to the engine. Run,
// Execute and Register (and its self-test) hand their source here, and so
// do the CLI and the other surfaces through them: the key the bytecode
// cache keys it under (a process-secret hash of the source and all that
// decides its compile), then the cached bytecode, or the text the run
// compiles: shaped, stripped of TypeScript when a stripper is linked and
// instrumented with its position map (positions.go, package jspos), then
// wrapped for its kind. A request walks down the floors: the API
// (runtime.go, provider.go, tool.go), here, positions.go, internal/jspos;
// isolate.go then runs what comes out.

// unitKind is what a source is wrapped as.
type unitKind int

const (
	unitNone           unitKind = iota // nothing to ready: pinned bytecode, or global code as it is
	unitScript                         // Run's body (wrapScript)
	unitTool                           // a registered tool's source (wrapTool)
	unitProgram                        // Execute's code over its providers (programSource)
	unitSession                        // a session's Run body: wrapScript, its declarations hoisted (jspos.SessionBody)
	unitSessionProgram                 // a session's Execute code: programSource, its declarations hoisted
)

// load readies p's source (p.smap.src) to run as kind: from the bytecode
// cache (p.bc), or as text to compile (p.src, with p.wantBC: the run hands
// its bytecode back for the cache under key). The instrumentation is
// shared with the runs that prepare the same key at once, and counts
// against the run's deadline (see instrument). Call release once the run
// has compiled.
func (e *Executor) load(ctx context.Context, deadline time.Time, budget time.Duration, p *program, kind unitKind) (key [32]byte, release func(), err *ExecError) {
	src := p.smap.src
	switch kind {
	case unitScript:
		key, p.syncBody = e.runKeys.key(src)
	case unitTool:
		key = scriptKey("tool", src)
	case unitSession:
		key, p.syncBody = scriptKey("session", src), awaitFree(src)
	case unitSessionProgram:
		key = sessionProgramKey(src, p.providers)
	default:
		key = e.programKeys.program(src, p.providers)
	}
	if bc, ok := e.cache.get(key); ok {
		if kind != unitSession && kind != unitSessionProgram {
			p.bc, p.src = bc, noSource
			if kind == unitProgram {
				p.smap.head = programHead(p.providers)
			}
			return key, func() {}, nil
		}
		if globals, ok := e.cache.get(globalsKey(key)); ok {
			p.bc, p.src, p.prologue = bc, noSource, globals
			if kind == unitSessionProgram {
				p.smap.head = programHead(p.providers)
			}
			return key, func() {}, nil
		}
	}
	if release, err = e.instrument(ctx, deadline, budget, key, p); err != nil {
		return key, nil, err
	}
	text := p.smap.instrument().Source()
	switch kind {
	case unitScript:
		p.src = wrapScript(text, key, guarded(p.smap.in.m.Form()), jspos.StrictBody(src), p.syncBody)
	case unitSession:
		p.src = wrapScript(text, key, guarded(p.smap.in.m.Form()), jspos.StrictBody(src), p.syncBody)
		p.prologue = cString([]byte(p.smap.in.m.Globals()))
	case unitSessionProgram:
		p.src, p.smap.head = programSource(text, p.providers, key)
		p.prologue = cString([]byte(p.smap.in.m.Globals()))
	case unitTool:
		p.src = wrapTool(text, key)
	default:
		p.src, p.smap.head = programSource(text, p.providers, key)
	}
	p.wantBC = true
	return key, release, nil
}

// globalsKey is the cache key of a session body's declaration prologue,
// next to its bytecode's key.
func globalsKey(key [32]byte) [32]byte {
	key[0] ^= 0xff
	return key
}

// selftestSource readies a tool's self-test, which takes every shape a
// run does (its value is the verdict, see jspos.Form, awaited): its
// position map and its text. It runs once, at registration: no key, no
// cache.
func (e *Executor) selftestSource(src string) (*sourceMap, []byte) {
	sm := &sourceMap{file: selftestFileName, head: len(selftestHead), shape: jspos.Body, src: src, ts: e.ts, mods: e.modules}
	return sm, []byte(selftestHead + sm.instrument().Source() + selftestTail + "\x00")
}

// instrument instruments a program's source (shared with the runs that
// miss the cache for it at once), as part of the run whose deadline is
// deadline, budget after its start: a run whose deadline passes, or whose
// ctx ends, while its source is prepared fails with that outcome, as if it
// had run (see instruments.share). Call release once the source is
// compiled.
func (e *Executor) instrument(ctx context.Context, deadline time.Time, budget time.Duration, key [32]byte, p *program) (release func(), err *ExecError) {
	release, st, ok := e.instruments.share(ctx, deadline, key, &p.smap)
	if ok {
		return release, nil
	}
	c := call{ex: e, name: p.name, budget: budget}
	if st == C.BRIDGE_TIMEOUT {
		return nil, c.timeout()
	}
	return nil, c.canceled(ctx)
}

// processKey keys every hash that must not be predictable from outside the
// process (see wrapScript).
var processKey = func() [32]byte {
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		panic("codemode: no randomness for the process key: " + err.Error())
	}
	return k
}()

// keyHasher is an HMAC-SHA256 keyed with processKey, with scratch space
// (Reset keeps its key). Keyed BLAKE3 was the first choice; its hasher's
// stack frame made every run on a new goroutine (a burst of a thousand)
// copy its stack, 2 us a key against 0.25 us, and it was slower on large
// sources too (80 KB: 62 us against 46 us, SHA-NI).
type keyHasher struct {
	h   hash.Hash
	buf [32]byte
}

var keyHashers = sync.Pool{New: func() any { return &keyHasher{h: hmac.New(sha256.New, processKey[:])} }}

// keyMemo remembers the keys of the Run scripts (or Execute programs) seen
// last, so that a script run again (what a service does) finds its cached
// bytecode without hashing it again: the HMAC was 5 % of a small run. An
// entry is found by a seeded hash of the script and used only if its
// script is the same string (and a program's providers have the same
// names), so a memo hit is the key the HMAC would give. Scripts past
// keyMemoMax bytes are not remembered (hashing is a small part of their
// run), which bounds what the memo holds to keyMemoSize of them.
type keyMemo struct {
	seed    maphash.Seed
	entries [keyMemoSize]atomic.Pointer[memoKey]
}

type memoKey struct {
	src   string
	key   [32]byte
	sync  bool     // awaitFree(src)
	names []string // an Execute program's providers (program)
}

const (
	keyMemoSize = 256
	keyMemoMax  = 16 << 10
)

// key returns scriptKey("run", src) and awaitFree(src), remembered.
func (m *keyMemo) key(src string) ([32]byte, bool) {
	e := m.remember(src, nil, func() *memoKey {
		return &memoKey{key: scriptKey("run", src), sync: awaitFree(src)}
	})
	return e.key, e.sync
}

// program returns programKey(code, providers), remembered.
func (m *keyMemo) program(code string, providers []Provider) [32]byte {
	return m.remember(code, providers, func() *memoKey {
		e := &memoKey{key: programKey(code, providers), names: make([]string, len(providers))}
		for i, p := range providers {
			e.names[i] = strings.Clone(p.Name)
		}
		return e
	}).key
}

// remember returns the entry for src over providers (nil for a Run
// script), making it with fresh when the memo holds none; src is kept in
// the entry made, a copy.
func (m *keyMemo) remember(src string, providers []Provider, fresh func() *memoKey) *memoKey {
	if len(src) > keyMemoMax {
		return fresh()
	}
	slot := &m.entries[maphash.String(m.seed, src)%keyMemoSize]
	if e := slot.Load(); e != nil && e.src == src && e.namesOf(providers) {
		return e
	}
	e := fresh()
	e.src = strings.Clone(src)
	slot.Store(e)
	return e
}

// namesOf reports whether the entry was made for providers of these
// names, in order.
func (e *memoKey) namesOf(providers []Provider) bool {
	if len(e.names) != len(providers) {
		return false
	}
	for i := range providers {
		if e.names[i] != providers[i].Name {
			return false
		}
	}
	return true
}

// scriptKey returns the keyed hash of a script together with everything
// that decides how it compiles.
func scriptKey(kind string, source string) [32]byte {
	k := newKey(kind)
	k.h.Write(stringBytes(source))
	return k.sum()
}

// newKey starts a keyed hash of kind; write the source's parts to its h,
// then sum.
func newKey(kind string) *keyHasher {
	k := keyHashers.Get().(*keyHasher)
	h := k.h
	h.Reset()
	h.Write(stringBytes(quickjs.EngineVersion))
	binary.LittleEndian.PutUint64(k.buf[:8], C.BRIDGE_VERSION)
	k.buf[8] = 0
	h.Write(k.buf[:9])
	h.Write(stringBytes(kind))
	h.Write(k.buf[8:9])
	return k
}

// sum returns the hash and gives the hasher back.
func (k *keyHasher) sum() [32]byte {
	k.h.Sum(k.buf[:0])
	sum := k.buf
	keyHashers.Put(k)
	return sum
}

// awaitFree reports whether a script can hold no await: no "await", nor
// a Unicode escape (\u0061wait is await too, and reserved in an async
// function only). It reads the model's source, before TypeScript is
// stripped and positions instrumented (neither adds an await), so that a
// run from cached bytecode knows its wrapper without the text.
func awaitFree(src string) bool {
	return !strings.Contains(src, "await") && !strings.Contains(src, `\u`)
}

// wrapScript turns a run_js body into a program whose completion value is
// the body's promise, NUL-terminated for the engine. A script the parser
// read as one body that ends where the wrapper's does (package jspos) is
// an async function's body as it is, its directives, function
// declarations, top-level return and await the function's own:
//
//	(async () => {<script>
//	})()
//
// Any other (one that does not parse, or was too large to read) is
// guarded: the engine itself must refuse a script that closes the wrapper
// early and opens another (`}); (async () => {`), so the script goes in a
// labelled block and the wrapper ends with a break out of it,
//
//	(async () => {L: {<script>
//	{break L}}})()
//
// and `break L` only parses where L encloses it in the same function. L is
// derived from a process-secret hash of the script. In L's block a "use
// strict" directive is only a string: a guarded script that begins with
// one (strict; see jspos.StrictBody) has it in the function's prologue
// too. Either head shares the script's first line, so line numbers in
// errors are the script's own.
//
// A script whose source has no "await" anywhere, and no Unicode escape
// that could spell one (sync; see awaitFree), goes in a plain arrow
// function instead, its head padded to the async one's length so columns
// stay where they were: without an await the two bodies parse alike
// (await is reserved only in the async one, and a script that names it
// keeps that one), and the async function's machinery and promise were a
// seventh of a small run. The engine then
// does with the body's value or throw what the async function would have
// done (adopt a thenable, run the jobs queued before a throw; see
// adopt_thenable in bridge.c), so the outcome is the same.
func wrapScript(script string, key [32]byte, guard, strict, sync bool) []byte {
	head := wrapHead
	if sync {
		head = syncHead
	}
	if !guard {
		const tail = "\n})()"
		b := make([]byte, 0, len(head)+len(script)+len(tail)+1)
		b = append(b, head...)
		b = append(b, script...)
		b = append(b, tail...)
		return append(b, 0)
	}
	var label [24]byte
	hex.Encode(label[:], key[:12])
	const name, colon = "__codemode_", ": {"
	const tail1, tail2 = "\n{break __codemode_", "}}})()"
	b := make([]byte, 0, scriptHead(true, strict)+len(tail1)+len(label)+len(tail2)+len(script)+1)
	b = append(b, head...)
	if strict {
		b = append(b, strictDirective...)
	}
	b = append(b, name...)
	b = append(b, label[:]...)
	b = append(b, colon...)
	b = append(b, script...)
	b = append(b, tail1...)
	b = append(b, label[:]...)
	b = append(b, tail2...)
	return append(b, 0)
}

// programSource wraps the request's code (trimmed of its statement end,
// perhaps instrumented) into the program unit, a function of the
// providers and the contract names returning the code's value,
// NUL-terminated:
//
//	(function (store, …, __dispatch, …) {'use strict';L: {return (<code>
//	);break L}})
//
// The head shares the code's first line; the label works as in wrapScript.
// It returns the head's length in bytes.
func programSource(code string, providers []Provider, key [32]byte) (src []byte, head int) {
	label := "__codemode_" + hex.EncodeToString(key[:12])
	var b strings.Builder
	b.Grow(programHead(providers) + len(code) + len(label) + 16)
	b.WriteString("(function (")
	for _, p := range providers {
		b.WriteString(p.Name)
		b.WriteString(", ")
	}
	b.WriteString(contractNames + ") {'use strict';" + label + ": {return (")
	head = b.Len()
	b.WriteString(code)
	b.WriteString("\n);break " + label + "}})")
	b.WriteByte(0)
	return []byte(b.String()), head
}

// programHead is the length of programSource's head, which a run from
// cached bytecode needs for its error positions and not the text.
func programHead(providers []Provider) int {
	const labelLen = len("__codemode_") + 24
	n := len("(function (") + len(contractNames+") {'use strict';") + labelLen + len(": {return (")
	for _, p := range providers {
		n += len(p.Name) + len(", ")
	}
	return n
}

// programKey is the cache key of a program unit: its code and the names
// it binds.
func programKey(code string, providers []Provider) [32]byte {
	return programKeyOf("program", code, providers)
}

// sessionProgramKey is the cache key of a session's Execute program unit
// (its declarations hoisted).
func sessionProgramKey(code string, providers []Provider) [32]byte {
	return programKeyOf("session-program", code, providers)
}

// programKeyOf keys a program unit of kind.
func programKeyOf(kind, code string, providers []Provider) [32]byte {
	k := newKey(kind)
	for _, p := range providers {
		k.h.Write(stringBytes(p.Name))
		k.h.Write(stringBytes(","))
	}
	k.h.Write(stringBytes("\n"))
	k.h.Write(stringBytes(code))
	return k.sum()
}

// trimStatementEnd drops trailing white space and one trailing semicolon.
func trimStatementEnd(code string) string {
	code = strings.TrimRightFunc(code, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	return strings.TrimSuffix(code, ";")
}

// compileScript compiles a trusted script to bytecode in a throwaway runtime.
func compileScript(src, file string) ([]byte, error) {
	return compileScriptStripped(src, file, C.BRIDGE_STRIP_NONE)
}

// compileScriptStripped is compileScript without the source text and the
// debug information (C.BRIDGE_STRIP_ALL) or the source text alone
// (C.BRIDGE_STRIP_SOURCE): bridge_compile's strip.
func compileScriptStripped(src, file string, strip C.int32_t) ([]byte, error) {
	csrc := append([]byte(src), 0)
	cfile := C.CString(file)
	defer C.free(unsafe.Pointer(cfile))
	var out C.bridge_out
	st := C.bridge_compile((*C.char)(unsafe.Pointer(&csrc[0])), C.size_t(len(src)), cfile, strip, &out)
	return compiled(st, &out, "compile "+file)
}

// compileModule compiles srcs[i] (of n) as a module, its imports resolved
// against the others: WithModules's modules, compiled once.
func compileModule(srcs *C.bridge_source, n, i int, name string) ([]byte, error) {
	var out C.bridge_out
	st := C.bridge_compile_module(srcs, C.int32_t(n), C.int32_t(i), &out)
	return compiled(st, &out, fmt.Sprintf("module %q", name))
}

// compiled is a compile's bytecode, or its rendered error as one; out is
// freed.
func compiled(st C.int32_t, out *C.bridge_out, what string) ([]byte, error) {
	defer C.bridge_out_free(out)
	data := C.GoBytes(unsafe.Pointer(out.data), C.int(out.size))
	if st != C.BRIDGE_DONE {
		return nil, fmt.Errorf("codemode: %s: %s", what, data)
	}
	return data, nil
}

// wrapTool turns a tool source (trimmed of its statement end, perhaps
// instrumented) into a script whose completion value is the source's
// value, with the labelled wrapper of wrapScript:
//
//	(function () {L: {return (<source>
//	);break L}})()
func wrapTool(source string, key [32]byte) []byte {
	var label [24]byte
	hex.Encode(label[:], key[:12])
	var b strings.Builder
	b.Grow(len(source) + 2*len(label) + 64)
	b.WriteString("(function () {__codemode_")
	b.Write(label[:])
	b.WriteString(": {return (")
	b.WriteString(source)
	b.WriteString("\n);break __codemode_")
	b.Write(label[:])
	b.WriteString("}})()")
	b.WriteByte(0)
	return []byte(b.String())
}
