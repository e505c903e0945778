package jspos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode/internal/hostile"
)

// TestNesting: what the lexer counts, exactly, on sources whose nesting a
// reader can count too.
func TestNesting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src          string
		depth, chain int
		sure         bool
	}{
		{"", 1, 0, true},
		{"return 1", 1, 0, true},
		{"f(a, b)", 2, 1, true},             // the call's parentheses; the call is an operator
		{"((((1))))", 5, 0, true},           // four brackets
		{"a = b = c = d", 4, 0, true},       // assignments nest: the right side is a recursive call
		{"a = 1; b = 2; c = 3", 2, 0, true}, // a semicolon ends an expression
		{"a = 1, b = 2", 2, 0, true},        // so does a comma
		{"a = 1\nb = 2\nc = 3", 2, 0, true}, // and a line break where a statement must end
		{"a = b\n(c)", 3, 1, true},          // but not where the expression goes on: b(c)
		{"!!!!x", 5, 0, true},               // prefix operators nest
		{"1 + 2 + 3 + 4", 1, 3, true},       // binary operators chain
		{"a.b.c.d", 1, 3, true},
		{"x ? y : z", 3, 0, true},
		{"if (a) if (b) if (c) x", 5, 0, true},                 // statement heads without a block nest
		{"if (a) {}\nif (b) {}\nif (c) {}", 3, 0, true},        // with one, the statement ends with it
		{"if (a) x; else if (b) y; else if (c) z", 7, 0, true}, // else continues the statement
		{"`a${b + `c${d}`}`", 3, 1, true},                      // substitutions are brackets
		{"'((((' + \"[[[[\" + /((((/", 1, 2, true},             // in strings and regular expressions, nothing nests
		{"// ((((\n/* [[[[ */ x", 1, 0, true},                  // nor in comments
		{"if (a) /re/.test(b)", 3, 2, true},                    // a slash after a statement head's ) starts a regex
		{"(a) / 2", 2, 1, true},                                // after another ), it divides
		{"x = {}\n/re/", 3, 1, false},                          // after a }, the lexer cannot know
		{"a)", 1, 0, false},                                    // a closer that closes nothing
		{"'open", 1, 0, false},                                 // a string left open
		{"#!/usr/bin/env node\n1", 1, 0, false},                // a hashbang
	}
	for _, tt := range tests {
		r := Nesting(tt.src, false)
		assert.Equal(t, [3]any{tt.depth, tt.chain, tt.sure}, [3]any{r.Depth, r.Chain, r.Sure}, "Nesting(%q)", tt.src)
	}
	// TypeScript: generics, unions and type operators nest; the colon of
	// a parenthesized expression in a conditional's middle is counted.
	r := Nesting("let x: Array<Array<keyof T>> = a ? (b): c => (d): e => 1", true)
	assert.Equal(t, 2, r.ConditionalArrows)
	assert.Greater(t, r.Depth, Nesting("let x = 1", true).Depth)
}

// TestPathologicalSourcesAreNotRead: past the bounds, nothing is parsed:
// each source comes back unread (or invalid, by the syntax check) at once,
// and the error says which bound. The parse itself would have taken the
// process down.
func TestPathologicalSourcesAreNotRead(t *testing.T) {
	t.Parallel()
	for name, src := range hostile.Sources() {
		for _, shape := range []Shape{Body, Expression, StrictExpression} {
			m := Instrument(src, shape)
			if strings.HasPrefix(name, "ts ") || strings.Contains(name, ",") {
				continue // TypeScript, or within MaxCount but not valid: the root's tests run them
			}
			switch m.Form() {
			case Unread:
				assert.NotEmpty(t, m.Why(), "%s: which bound", name)
			case Invalid:
				assert.Nil(t, m.SyntaxError(), "%s: the engine's parser says where, not goja's", name)
			default:
				t.Errorf("%s (shape %d): form %d, want Unread or Invalid", name, shape, m.Form())
			}
			assert.Equal(t, src, m.Source(), "%s: kept as it is", name)
		}
		// esbuild stops at its first error (it does not recover): a
		// statement head with nothing after it stops it at once.
		if name != "empty ifs" && name != "trys" {
			ok, _ := TypeScriptReadable(src)
			assert.False(t, ok, "%s is no TypeScript to strip", name)
		}
	}
}

// TestConditionalArrowsBound: esbuild's time doubles with each
// parenthesized expression followed by a colon in a conditional's middle;
// past the bound the source is not stripped, however small it is.
func TestConditionalArrowsBound(t *testing.T) {
	t.Parallel()
	src := func(n int) string { return "x = " + strings.Repeat("a ? (b) : c => ", n) + "d;" }
	ok, _ := TypeScriptReadable(src(MaxConditionalArrows))
	assert.True(t, ok)
	ok, r := TypeScriptReadable(src(MaxConditionalArrows + 1))
	assert.False(t, ok)
	assert.Contains(t, r.Why(), "parenthesized expressions followed by a colon")
	// Return types of functions are no conditionals.
	ok, _ = TypeScriptReadable(strings.Repeat("function f(a: number): number { return a }\n", 50))
	assert.True(t, ok)
}

// TestProgramsAreRead: the programs models write, and large ones, are
// within the bounds: the golden corpus, and a long program (with no syntax
// check set, a source past MaxCount is not read, so this counts as the
// lexer's verdict alone).
func TestProgramsAreRead(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../testdata/golden/*.js")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		r := Nesting(string(src), false)
		assert.True(t, r.Within(), "%s: %+v %s", f, r, r.Why())
		assert.Less(t, r.Depth, 64, f)
	}
	long := strings.Repeat("if (rows.length > 2) {\n  total = total + rows[0].price * 2;\n} else {\n  total = 0\n}\n", 2000)
	r := Nesting(long, false)
	assert.True(t, r.Within(), "%+v", r)
	assert.LessOrEqual(t, r.Depth, 8, "sequential statements do not add up")
}

func TestStrictBody(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]bool{
		`"use strict"; x = 1`:                  true,
		"'use strict'\nx = 1":                  true,
		"// a comment\n'use strict'":           true,
		`"a"; "use strict"; x`:                 true, // a prologue of several
		"```js\n'use strict'\nreturn 1\n```":   true,
		`"use strict" + x`:                     false, // an expression, no directive
		"x; 'use strict'":                      false,
		`"use\x20strict"`:                      false, // as written, not as read
		"return 1":                             false,
		`"use strict`:                          false,
		"'use strict'\n.length":                false,
		"async () => { 'use strict'; return }": false, // the function's own: no wrapper's business
	} {
		assert.Equal(t, want, StrictBody(src), "StrictBody(%q)", src)
	}
}

func TestStaticImport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, module string
		off         int
		ok          bool
	}{
		{"import fs from 'fs'\nreturn fs", "fs", 0, true},
		{"const a = 1\n  import { x } from \"helpers.js\"", "helpers.js", 14, true},
		{"import * as path from 'node:path'", "node:path", 0, true},
		{"import 'side-effect'", "side-effect", 0, true},
		{"import type { T } from './t'\nreturn 1", "", 0, false},
		{"const m = await import('m')", "", 0, false},
		{"return import.meta", "", 0, false},
		{"const important = 1", "", 0, false},
	}
	for _, tt := range tests {
		module, off, ok := StaticImport(tt.src)
		assert.Equal(t, [3]any{tt.module, tt.off, tt.ok}, [3]any{module, off, ok}, "StaticImport(%q)", tt.src)
	}
}

// BenchmarkNesting: the lexer's cost per byte of a real program (it runs
// before every parse of a source past MaxCount).
func BenchmarkNesting(b *testing.B) {
	src, err := os.ReadFile("../../testdata/golden/realistic.js")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if !Nesting(string(src), false).Within() {
			b.Fatal("not within")
		}
	}
}
