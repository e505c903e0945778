// Package typescript lets codemode executors run TypeScript: importing it
// (even as `import _ "github.com/codemode-go/codemode/typescript"`)
// registers [Stripper] with [codemode.RegisterTypeScript], so every
// executor made afterwards accepts TypeScript wherever it accepts
// JavaScript, with errors at the TypeScript source's lines and columns.
//
// The stripping is esbuild's (github.com/evanw/esbuild, pkg/api Transform
// with the TS loader): type annotations, interface and type declarations,
// generics, as, satisfies, non-null !, declare, optional parameters,
// access modifiers and type-only imports and exports (import type,
// import { type A }, export type, export interface) are removed; enum
// and namespace are compiled to JavaScript objects, and work. A source
// that a type-only import or export would make a module (where its
// top-level return is not allowed) is stripped as the script it is: each
// such declaration esbuild's parser names is blanked first (eraseTypeOnly),
// so every position holds. An executor asks only for a
// source that parses as JavaScript in none of its input shapes, so
// JavaScript never pays for it; the bytecode cache keeps the compiled
// result under the original source.
//
// It is its own module so that a binary that never imports it does not
// link esbuild.
package typescript

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/go-sourcemap/sourcemap"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/jspos"
)

func init() { codemode.RegisterTypeScript(Stripper{}) }

// Stripper is a [codemode.TypeScript] backed by esbuild. Its zero value is
// ready to use and safe for concurrent use.
type Stripper struct{}

// Strip implements [codemode.TypeScript]. The JavaScript keeps the
// source's statements (top-level return and await included) and
// `export default`; its positions map back through esbuild's source map.
func (Stripper) Strip(src string) (string, func(line, col int) (int, int), error) {
	// esbuild's parser recurses without a depth limit (a Go stack
	// overflow ends the process) and backtracks over types: a source is
	// stripped only within the bounds package jspos checks first.
	if ok, r := jspos.TypeScriptReadable(src); !ok {
		return "", nil, &codemode.TypeScriptError{Line: 1, Column: 1,
			Message: "codemode did not strip the source as TypeScript: " + r.Why()}
	}
	js, back, err := strip(src, src, "")
	if !topLevelReturn(err) {
		return js, back, unwrap(err)
	}
	// A type-only import or export (import type, export type, export
	// interface) made the source a module, where return is not allowed:
	// it is erased, as any compiler erases it, and the source stripped as
	// the script it is.
	erased := eraseModuleSyntax(src, err)
	if erased != src {
		ejs, eback, eerr := strip(erased, src, "")
		if !topLevelReturn(eerr) {
			return ejs, eback, unwrap(eerr)
		}
	}
	// Top-level await made the source a module: strip it as the body of
	// an async function instead.
	if wjs, wback, werr := strip(erased, src, wrapHead); werr == nil {
		return wjs, wback, nil
	}
	return "", nil, unwrap(err)
}

// unwrap is err as Strip returns it: a stripError's TypeScriptError.
func unwrap(err error) error {
	if se, ok := err.(*stripError); ok {
		return se.te
	}
	return err
}

// eraseModuleSyntax is src with every type-only import and export
// declaration blanked (eraseTypeOnly), given err, esbuild's refusal of a
// top-level return in it. esbuild's note says which keyword made the
// source a module, so only declarations its parser saw are touched: each
// one found is erased from a probe copy, and so is a top-level await
// (which esbuild names first), and the probe parsed again for the next,
// until nothing makes it a module or something other than a type-only
// declaration does.
func eraseModuleSyntax(src string, err error) string {
	erased, probe := src, src
	for i := 0; i < maxErased && topLevelReturn(err); i++ {
		off, ok := moduleKeyword(err.(*stripError).msg, probe)
		if !ok {
			break
		}
		if strings.HasPrefix(probe[off:], "await") {
			probe = blank(probe, off, off+len("await"))
		} else {
			next, ok := eraseTypeOnly(probe, off)
			if !ok {
				break
			}
			probe = next
			erased, _ = eraseTypeOnly(erased, off) // the same declaration: only awaits differ
		}
		_, _, err = strip(probe, src, "")
	}
	return erased
}

// maxErased bounds the type-only declarations erased from one source
// (each costs a parse).
const maxErased = 64

// stripError is esbuild's first error, as a TypeScriptError and as
// esbuild gave it (its notes say why a source is a module).
type stripError struct {
	te  *codemode.TypeScriptError
	msg api.Message
}

func (e *stripError) Error() string { return e.te.Error() }

// topLevelReturn reports whether err is esbuild's refusal of a return at
// the top level of a module.
func topLevelReturn(err error) bool {
	se, ok := err.(*stripError)
	return ok && strings.HasPrefix(se.msg.Text, "Top-level return cannot be used")
}

// moduleKeyword is the byte offset in src of the import, export or await
// keyword that esbuild's note on m says made src a module.
func moduleKeyword(m api.Message, src string) (int, bool) {
	for _, n := range m.Notes {
		l := n.Location
		if l == nil || !strings.HasPrefix(n.Text, "This file is considered to be an ECMAScript module") {
			continue
		}
		off := 0
		for line := 1; line < l.Line; line++ {
			i := strings.IndexByte(src[off:], '\n')
			if i < 0 {
				return 0, false
			}
			off += i + 1
		}
		off += l.Column
		if rest := src[min(off, len(src)):]; strings.HasPrefix(rest, "import") || strings.HasPrefix(rest, "export") ||
			strings.HasPrefix(rest, "await") {
			return off, true
		}
	}
	return 0, false
}

// wrapHead makes a body an async function's for esbuild; it shares the
// source's first line, and its closing brace has a line of its own.
const wrapHead = "async function __codemode_ts() {"

// strip runs esbuild over src, inside an async function when head is set
// (the function is taken off the output again). orig is the source src
// was made from by blanking (the same lines, and the same UTF-16 length
// up to every position): positions are the original's.
func strip(src, orig, head string) (string, func(line, col int) (int, int), error) {
	in := src
	if head != "" {
		in = head + src + "\n}"
	}
	r := api.Transform(in, api.TransformOptions{
		Loader:    api.LoaderTS,
		Sourcemap: api.SourceMapExternal,
		Target:    api.ESNext,
		// Keep what a model wrote: no minification, no legal comments moved.
		LegalComments: api.LegalCommentsNone,
	})
	if len(r.Errors) > 0 {
		e := r.Errors[0]
		te := &codemode.TypeScriptError{Line: 1, Column: 1, Message: e.Text}
		if e.Location != nil {
			te.Line = e.Location.Line
			before := prefix(e.Location.LineText, e.Location.Column)
			if te.Line == 1 && head != "" {
				before = before[min(len(head), len(before)):]
			}
			te.Column = 1 + utf8.RuneCountInString(before)
			if origLines := strings.Split(orig, "\n"); src != orig && te.Line <= len(origLines) {
				te.Column = 1 + runeIndex(origLines[te.Line-1], utf16Len(before))
			}
		}
		return "", nil, &stripError{te: te, msg: e}
	}
	sm, err := sourcemap.Parse("", r.Map)
	if err != nil {
		return "", nil, errors.New("typescript: esbuild's source map: " + err.Error())
	}
	jsLines := strings.Split(string(r.Code), "\n")
	skip := 0 // lines of the output before the source's
	if head != "" {
		// "async function __codemode_ts() {", the body, "}", "".
		if len(jsLines) < 3 || !strings.HasPrefix(jsLines[0], "async function __codemode_ts()") {
			return "", nil, errors.New("typescript: esbuild's output is not the function it was given")
		}
		end := len(jsLines) - 1
		for end > 0 && strings.TrimSpace(jsLines[end]) != "}" {
			end--
		}
		jsLines, skip = jsLines[1:end], 1
	}
	srcLines := strings.Split(orig, "\n")
	back := func(line, col int) (int, int) {
		if line < 1 || line > len(jsLines) {
			return line, col
		}
		_, _, l, c, ok := sm.Source(line+skip, utf16Index(jsLines[line-1], col-1))
		if !ok || l < 1 || l > len(srcLines) {
			return line, col
		}
		if l == 1 && head != "" {
			c = max(c-len(head), 0)
		}
		return l, 1 + runeIndex(srcLines[l-1], c)
	}
	return strings.Join(jsLines, "\n"), back, nil
}

// prefix is the first n bytes of s, or s.
func prefix(s string, n int) string {
	if n < 0 || n > len(s) {
		return s
	}
	return s[:n]
}

// utf16Index is the UTF-16 offset of the rune at index runes of line.
func utf16Index(line string, runes int) int {
	n := 0
	for i, r := range []rune(line) {
		if i >= runes {
			break
		}
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// runeIndex is the rune index of UTF-16 offset units of line.
func runeIndex(line string, units int) int {
	n, i := 0, 0
	for _, r := range line {
		if n >= units {
			break
		}
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i++
	}
	return i
}
