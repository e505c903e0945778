package typescript

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEraseTypeOnly(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		src  string
		want string // "" when the declaration is not type-only
	}{
		{`import type { A } from "m"; x`, `                            x`},
		{"import type A from 'm'\nx", "                      \nx"},
		{`import type * as N from "m" with { type: "json" }; x`, `                                                   x`},
		{"import type {\n A, // a\n B as C,\n} from './m'\nx", "             \n        \n        \n            \nx"},
		{`import { type A, type B as C, type "d" as D } from "m";x`, `                                                       x`},
		{`export type { A, B as C } from "m"; x`, `                                    x`},
		{`export type { A }`, `                 `},
		{`export type * from "m"; x`, `                        x`},
		{`export type * as N from "m"; x`, `                             x`},
		{`export type T = { a: 1 }`, `       type T = { a: 1 }`},
		{`export interface I { a: 1 }`, `       interface I { a: 1 }`},
		{`export declare const d: number`, `       declare const d: number`},
		{`import type { "😀" as E } from "m"; x`, `                                    x`},
		{`import { A } from "m"`, ""},
		{`import { type A, B } from "m"`, ""},
		{`import {} from "m"`, ""},
		{`import type from "m"`, ""},
		{`import type, { a } from "m"`, ""},
		{`import "m"`, ""},
		{`import * as N from "m"`, ""},
		{`export const a = 1`, ""},
		{`export default 1`, ""},
		{`export { a }`, ""},
		{`import type { A } from "m`, ""},
		{`import type { A from "m"`, ""},
		{`export type {`, ""},
	} {
		got, ok := eraseTypeOnly(tt.src, 0)
		if tt.want == "" {
			assert.False(t, ok, "eraseTypeOnly(%q) = %q", tt.src, got)
			continue
		}
		assert.True(t, ok, "eraseTypeOnly(%q)", tt.src)
		assert.Equal(t, tt.want, got, "eraseTypeOnly(%q)", tt.src)
		assert.Equal(t, utf16Len(tt.src), utf16Len(got), "eraseTypeOnly(%q) keeps every position", tt.src)
	}
}

// FuzzEraseTypeOnly: whatever the source and offset, erasing never panics
// and keeps the lines and every position.
func FuzzEraseTypeOnly(f *testing.F) {
	for _, s := range []string{`import type { A, B as C } from "m"; x`, "export type { A } from 'm'", "import { type \"x\" as y } from 'm'",
		"import type * as N from 'm' with { a: 'b' };", "export interface I {}", "import type {\n/* c */ A\n} from 'm'"} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, src string, off int) {
		if off < 0 || off > len(src) {
			return
		}
		got, ok := eraseTypeOnly(src, off)
		if !ok {
			return
		}
		if utf16Len(got) != utf16Len(src) || strings.Count(got, "\n") != strings.Count(src, "\n") || got[:off] != src[:off] {
			t.Fatalf("eraseTypeOnly(%q, %d) = %q moved positions", src, off, got)
		}
	})
}
