package jspos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestForms: what each form becomes for each target, exactly.
func TestForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		src       string
		form      Form
		body, fun string // the instrumented text for Body, and for StrictExpression
	}{
		{"statements", "const x = 10;\nx * 2", Statements,
			"0;const x = 10;\n0;return x * 2", "async () => {0;const x = 10;\n0;return x * 2\n}"},
		{"a parenthesised last expression", "a();\n(b)", Statements, "(__codemode_at(0),a)();\n0;return (b)", "async () => {(__codemode_at(0),a)();\n0;return (b)\n}"},
		{"a return anywhere", "if (a) { return 1 }\n2", Statements, "0;if (a) { 0;return 1 }\n2", "async () => {0;if (a) { 0;return 1 }\n2\n}"},
		{"a loop last", "for (;;) {}", Statements, "0;for (;;) {;0;}", "async () => {0;for (;;) {;0;}\n}"},
		{"an arrow", "async () => 1;", Function, "0;return (async () => 1\n)();", "async () => 1 "},
		{"a parenthesised arrow", "(() => 1)", Function, "0;return ((() => 1)\n)()", "(() => 1)"},
		{"a declaration", "function main() { return 1 };", Declaration,
			"function main() { 0;return 1 };\n;return main();", "function main() { 0;return 1 } "},
		{"an object", "{\"a\": 1};", Value, "0;return ({\"a\": 1} \n)", "() => ({\"a\": 1} \n)"},
		{"an anonymous function", "function () { return 1 }", Value,
			"0;return (function () { 0;return 1 }\n)()", "function () { 0;return 1 }"},
		{"export default", "export default 42", Value, "               0;return (42\n)", "               () => (42\n)"},
		{"a fence", "Here:\n```js\n1 + 2\n```\nThat is all.", Statements,
			"     \n     \n0;return 1 + 2\n   \n            ", "async () => {     \n     \n0;return 1 + 2\n   \n            \n}"},
		{"invalid", "let x = ;", Invalid, "let x = ;", "async () => {let x = ;\n}"},
		{"a stray closer", "}); (async () => {", Invalid, "}); (async () => {", "}); (async () => {"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := Instrument(tt.src, Body)
			assert.Equal(t, tt.form, b.Form())
			assert.Equal(t, tt.body, b.Source())
			assert.Len(t, b.Original(), len(tt.src), "the map's source keeps the length")
			f := Instrument(tt.src, StrictExpression)
			assert.Equal(t, tt.form, f.Form())
			assert.Equal(t, tt.fun, f.Source())
		})
	}
}

// TestUnfence: which fences are read, and what is blanked.
func TestUnfence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, want string
		open      int
	}{
		{"```js\nx\n```", "     \nx\n   ", 0},
		{"prose\n```ts\nx\n```\nmore", "     \n     \nx\n   \n    ", 6},
		{"  ```\nx\n  ```  ", "     \nx\n       ", 2},
		{"```js\nx", "     \nx", 0},                    // left open, first
		{"prose\n```js\nx", "prose\n```js\nx", -1},     // left open after prose
		{"```python\nx\n```", "```python\nx\n```", -1}, // another language
		{"no fence", "no fence", -1},
		{"```", "```", -1},                                                                        // nothing after it
		{"```JS\nx\n```\n```js\ny\n```", "     \nx\n   \n     \ny\n   ", 0},                       // every code fence, in order
		{"```js\nf()\n```\nthen\n```js\ng()", "     \nf()\n   \n    \n     \ng()", 0},             // the last left open
		{"```js\nx\n```\nOut:\n```json\n{}\n```\n", "     \nx\n   \n    \n       \n  \n   \n", 0}, // another language between
		{"```json\n{}\n```\n```\ny\n```", "       \n  \n   \n   \ny\n   ", 15},                    // a bare fence after another language
	}
	for _, tt := range tests {
		got, open := unfence(tt.src)
		assert.Equal(t, tt.want, got, "unfence(%q)", tt.src)
		assert.Equal(t, tt.open, open, "unfence(%q)", tt.src)
	}
}

// FuzzInstrument: any source, any target, no panic, and the map's source
// keeps the source's length.
func FuzzInstrument(f *testing.F) {
	for _, s := range []string{"", "```", "```js\n", "export default", "export  default\n(", "/*", "//", "x => 5;",
		"function () {};", "Sure:\n```js\n1\n```", "}); (async () => {", "\ufeff1", "a;\n)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, shape := range []Shape{Body, Expression, StrictExpression} {
			m := Instrument(src, shape)
			if len(m.Original()) != len(src) {
				t.Fatalf("Instrument(%q, %d): source of %d bytes, want %d", src, shape, len(m.Original()), len(src))
			}
			for off := 0; off <= len(m.Source()); off++ {
				if o := m.Offset(off); o < 0 || o > len(src) {
					t.Fatalf("Offset(%d) = %d", off, o)
				}
			}
		}
	})
}
