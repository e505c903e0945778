package jspos

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInstrument(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		shape Shape
		src   string
		want  string // the instrumented text
	}{
		{"statements that record no position", Body, "const u = {}\nconsole.log('x')\nreturn u.address.city",
			"0;const u = {}\nconsole.log(__codemode_at('x',0))\n0;return u.address.city"},
		{"expression statements and throws record their own", Body, "a()\nthrow b", "(__codemode_at(0),a)()\nthrow b"},
		{"nested functions", Body, "const f = () => {\n  return null.x\n}\nreturn f()",
			"0;const f = () => {\n  0;return null.x\n}\n0;return f()"},
		{"if, else blocks, switch cases", Body, "if (a) return 1\nelse { const z = 2 }\nswitch (x) { case 1: let y = 2; break }",
			"0;if (a) return 1\nelse { 0;const z = 2 }\n0;switch (x) { case 1: 0;let y = 2; break }"},
		{"parenthesised condition", Body, "if ( (a) ) {}", "0;if ( (a) ) {}"},
		{"a comment before the condition leaves the if unmarked", Body, "if /* c */ (a) {}", "if /* c */ (a) {}"},
		{"loops: the start and the end of the body", Body, "for (let i = 0; i < 3; i++) {\n  x()\n}\nwhile (a) { b }\ndo { c } while (d)",
			"0;for (let i = 0; i < 3; i++) {\n  (__codemode_at(0),x)()\n;0;}\n0;while (a) { b ;0;}\n0;do { c ;0;} while (d)"},
		{"for-of has no end marker", Body, "for (const x of xs) { y() }", "0;for (const x of xs) { (__codemode_at(0),y)() }"},
		{"directives stay first", Body, "'use strict'\nfunction f() { 'use strict'; return this }\nreturn f()",
			"'use strict'\nfunction f() { 'use strict'; 0;return this }\n0;return f()"},
		{"classes, static blocks, labels", Body, "class A { static { let q = 1 } m() { return 2 } }\nL: for (;;) break L",
			"0;class A { static { 0;let q = 1 } m() { 0;return 2 } }\n0;L: for (;;) break L"},
		{"try blocks", Body, "try { return 1 } catch { return 2 } finally { let z }",
			"try { 0;return 1 } catch { 0;return 2 } finally { 0;let z }"},
		{"no statement is split", Body, "let a = b\n(c)\nreturn a", "0;let a = b\n(__codemode_at(c,0))\n0;return a"},
		{"asi", Body, "let a = 1\nlet b = 2\nreturn a + b", "0;let a = 1\n0;let b = 2\n0;return a + b"},
		{"for await", Body, "for await (const x of y) {}\nreturn 1", "0;for await (const x of y) {}\n0;return 1"},
		{"import()", Body, "const m = await import('m')\nreturn m", "0;const m = await import('m')\n0;return m"},
		{"a tool", Expression, "(args) => {\n  const u = args.user\n  return u.name\n}",
			"(args) => {\n  0;const u = args.user\n  0;return u.name\n}"},
		{"a program", StrictExpression, "async () => { return 1 }", "async () => { 0;return 1 }"},
		{"unparsable stays", Body, "return {", "return {"},
		{"what closes the wrapper stays", Body, "}); (async () => {", "}); (async () => {"},
		{"non-ASCII", Body, "const é = 'ü😀'; return é", "0;const é = 'ü😀'; 0;return é"},
		// The parser panicked on this string (test262's regexp-builtin-exec-v-u-flag.js).
		{"escapes past U+FFFF", Body, "const s = 'a\\u{20BB7}b\\u{10FFFF}c'\nreturn s", "0;const s = 'a\\u{20BB7}b\\u{10FFFF}c'\n0;return s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := Instrument(tt.src, tt.shape)
			assert.Equal(t, tt.want, m.Source())
			assert.Equal(t, tt.src, m.Original())
		})
	}
}

func TestOffset(t *testing.T) {
	t.Parallel()
	src := "const a = 1\nreturn a.b.c"
	m := Instrument(src, Body)
	require.Equal(t, "0;const a = 1\n0;return a.b.c", m.Source())
	out := m.Source()
	for instr, want := range map[int]int{
		0:                              0,  // the first marker stands for its statement
		1:                              0,  // inside it too
		2:                              0,  // the statement itself
		strings.Index(out, "1\n"):      10, // the 1
		strings.Index(out, "0;return"): 12, // the second marker: the return
		strings.Index(out, "return"):   12,
		strings.Index(out, ".c"):       strings.Index(src, ".c"),
		len(out):                       len(src),
		len(out) + 10:                  len(src), // the wrapper's tail
		-4:                             0,        // the wrapper's head
	} {
		assert.Equal(t, want, m.Offset(instr), "Offset(%d)", instr)
	}
	assert.Equal(t, strings.Index(out, "0;return"), m.LineOffset(2, 1))
	assert.Equal(t, len(out), m.LineOffset(9, 1))
	// A loop's end marker stands for the loop.
	m = Instrument("let i = 0\nwhile (i < 2) {\n  i++\n}", Body)
	require.Equal(t, "0;let i = 0\n0;while (i < 2) {\n  i++\n;0;}", m.Source())
	assert.Equal(t, 10, m.Offset(strings.Index(m.Source(), ";0;}")+1))
}

func TestPosition(t *testing.T) {
	t.Parallel()
	m := Instrument("const é = 1\n  return é +\n\n", Body)
	for off, want := range map[int][2]int{
		0:  {1, 1},
		6:  {1, 7},  // é
		9:  {1, 9},  // after é (2 bytes): characters, not bytes
		13: {2, 1},  // the line's start
		99: {2, 13}, // past the end: after the last character
	} {
		l, c := m.Position(off)
		assert.Equal(t, want, [2]int{l, c}, "Position(%d)", off)
	}
	assert.Equal(t, 4, m.Lines())
	assert.Equal(t, 2, m.Line(15))
	assert.Equal(t, 15, m.Indent(13), "indentation is skipped")
	assert.Equal(t, 20, m.Indent(20))
	l, c := Instrument("   ", Body).End()
	assert.Equal(t, [2]int{1, 1}, [2]int{l, c})
}

func TestSyntaxError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shape Shape
		src   string
		want  SyntaxError
	}{
		{Body, "let x = ;", SyntaxError{Offset: 8, Message: "Unexpected token ;"}},
		{Body, "return 'abc", SyntaxError{Offset: 7, Message: "Unexpected token ILLEGAL"}},
		{Body, "return {", SyntaxError{Offset: 8, EndOfInput: true, Message: "Unexpected token )"}},
		{Body, "return `abc", SyntaxError{Offset: 11, EndOfInput: true, Message: "Unexpected end of input"}},
		{Body, "const a = 1\nreturn a +", SyntaxError{Offset: 22, EndOfInput: true, Message: "Unexpected token }"}},
		{Body, "}", SyntaxError{Offset: 0, StrayCloser: true, Message: "Unexpected token }"}},
		// Past a stray brace the parser trips on what follows (the engine,
		// on its wrapper's label: codemode places that one).
		{Body, "const f = () => {}\n}\nreturn 1", SyntaxError{Offset: 21, Message: "Unexpected token return"}},
		{Body, "}); (async () => {", SyntaxError{Offset: 0, StrayCloser: true, Message: "Unexpected token '}'"}},
		{Expression, "(a) => 1)", SyntaxError{Offset: 8, StrayCloser: true, Message: "Unexpected token )"}},
		{Expression, "(a) => {", SyntaxError{Offset: 8, EndOfInput: true, Message: "Unexpected token )"}},
	}
	for _, tt := range tests {
		m := Instrument(tt.src, tt.shape)
		require.NotNil(t, m.SyntaxError(), tt.src)
		assert.Equal(t, tt.want, *m.SyntaxError(), "Instrument(%q)", tt.src)
		assert.Equal(t, tt.src, m.Source(), "an unparsable source is kept")
	}
	assert.Nil(t, Instrument("return 1", Body).SyntaxError())
}

// TestReadsNothing: a sourceMappingURL comment makes the parser's default
// read the file it names (as a path relative to the working directory);
// the map must not. The file is a FIFO with no writer, so reading it would
// block.
func TestReadsNothing(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "map.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, fifo)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		// parse, not Instrument: the wrappers' tails keep the comment off
		// the last line, where the parser looks for it.
		_, err := parse("1\n//# sourceMappingURL=" + rel)
		done <- err
	}()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test binary can end.
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		t.Fatal("Instrument read the file a sourceMappingURL comment names")
	}
}
