//go:build cgo

package codemode

import (
	"fmt"
	"sync/atomic"
)

// TypeScript strips TypeScript syntax (type annotations, interface and type
// declarations, generics, as, satisfies, non-null !, declare, access
// modifiers, import type) from a source, leaving JavaScript. An executor
// asks it only for a source that parses as JavaScript in none of the input
// shapes (see [Executor.Run]): JavaScript pays nothing for it.
//
// The package github.com/codemode-go/codemode/typescript (its own module,
// so that a binary that never imports it does not link its dependency)
// implements it with esbuild and registers itself when imported.
type TypeScript interface {
	// Strip returns src as JavaScript, and back, which maps a 1-based line
	// and column of js to the line and column in src that it came from. A
	// source it cannot read fails with a [*TypeScriptError].
	Strip(src string) (js string, back func(line, col int) (int, int), err error)
}

// TypeScriptError is a syntax error in a TypeScript source, at its 1-based
// line and column (in characters).
type TypeScriptError struct {
	Line, Column int
	Message      string
}

// Error returns the message with its position.
func (e *TypeScriptError) Error() string {
	return fmt.Sprintf("%s (line %d, column %d)", e.Message, e.Line, e.Column)
}

var registeredTS atomic.Pointer[TypeScript]

// RegisterTypeScript makes ts the TypeScript stripper of every executor
// made afterwards without [WithTypeScript] (nil: none). Importing
// github.com/codemode-go/codemode/typescript registers its stripper.
func RegisterTypeScript(ts TypeScript) {
	if ts == nil {
		registeredTS.Store(nil)
		return
	}
	registeredTS.Store(&ts)
}

func registeredTypeScript() TypeScript {
	if p := registeredTS.Load(); p != nil {
		return *p
	}
	return nil
}

// WithTypeScript sets the executor's TypeScript stripper; nil turns
// TypeScript off (a source that is not JavaScript is then a syntax error).
// Without it, an executor takes the one registered with
// [RegisterTypeScript], if any.
func WithTypeScript(ts TypeScript) Option {
	return func(c *config) error {
		c.ts, c.tsSet = ts, true
		return nil
	}
}
