// Package typescript lets codemode executors run TypeScript: importing it
// (even as `import _ "github.com/codemode-go/codemode/typescript"`)
// registers [Stripper] with [codemode.RegisterTypeScript], so every
// executor made afterwards accepts TypeScript wherever it accepts
// JavaScript, with errors at the TypeScript source's lines and columns.
//
// The stripping is esbuild's (github.com/evanw/esbuild, pkg/api Transform
// with the TS loader): type annotations, interface and type declarations,
// generics, as, satisfies, non-null !, declare, optional parameters,
// access modifiers and import type are removed; enum and namespace are
// compiled to JavaScript objects, and work. An executor asks only for a
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
	js, back, err := strip(src, "")
	var te *codemode.TypeScriptError
	if errors.As(err, &te) && strings.HasPrefix(te.Message, "Top-level return cannot be used") {
		// Top-level await made the source a module, where return is not
		// allowed: strip it as the body of an async function instead.
		if wjs, wback, werr := strip(src, wrapHead); werr == nil {
			return wjs, wback, nil
		}
	}
	return js, back, err
}

// wrapHead makes a body an async function's for esbuild; it shares the
// source's first line, and its closing brace has a line of its own.
const wrapHead = "async function __codemode_ts() {"

// strip runs esbuild over src, inside an async function when head is set
// (the function is taken off the output again).
func strip(src, head string) (string, func(line, col int) (int, int), error) {
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
			te.Column = 1 + utf8.RuneCountInString(prefix(e.Location.LineText, e.Location.Column))
			if te.Line == 1 && head != "" {
				te.Column = max(te.Column-len(head), 1)
			}
		}
		return "", nil, te
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
	srcLines := strings.Split(src, "\n")
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
