package typescript

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// eraseTypeOnly blanks the type-only declaration whose import or export
// keyword is at src[off:] (esbuild's parser found it there), as a
// TypeScript compiler erases it, and returns the source with it blanked;
// ok is false when the declaration is not type-only (a value import is
// left for the engine to refuse: a program is a script, with no module to
// load). The forms:
//
//	import type X from "m"            import type { A, B as C } from "m"
//	import type * as N from "m"       import { type A, type B } from "m"
//	export type { A, B } [from "m"]   export type * [as N] from "m"
//	export type T = ...               export interface I { ... }
//	export declare ...
//
// The first five are blanked whole (with a trailing `with {...}` and `;`);
// of the last three only the export keyword is, leaving the declaration
// for esbuild to erase. Blanking keeps the source's lines and each
// character's UTF-16 length, so every position after it holds.
func eraseTypeOnly(src string, off int) (string, bool) {
	s := scanner{src: src, at: off}
	kw := s.word()
	switch kw {
	case "export":
		after := s.at
		switch s.word() {
		case "interface", "declare":
			return blank(src, off, after), true
		case "type":
			switch {
			case s.punct('{'):
				if !s.list(false) {
					return "", false
				}
				if s.peekWord() == "from" {
					s.word()
					if !s.str() {
						return "", false
					}
				}
			case s.punct('*'):
				if s.peekWord() == "as" {
					s.word()
					if s.word() == "" && !s.str() {
						return "", false
					}
				}
				if s.word() != "from" || !s.str() {
					return "", false
				}
			case s.peekWord() != "":
				return blank(src, off, after), true // export type T = ...
			default:
				return "", false
			}
		default:
			return "", false
		}
	case "import":
		if s.peekWord() == "type" {
			s.word()
			switch {
			case s.punct('{'):
				if !s.list(false) {
					return "", false
				}
			case s.punct('*'):
				if s.word() != "as" || s.word() == "" {
					return "", false
				}
			case s.word() != "": // import type X from "m"
			default:
				return "", false
			}
		} else if !s.punct('{') || !s.list(true) {
			return "", false
		}
		if s.word() != "from" || !s.str() {
			return "", false
		}
	default:
		return "", false
	}
	if w := s.peekWord(); w == "with" || w == "assert" {
		s.word()
		if !s.punct('{') || !s.attributes() {
			return "", false
		}
	}
	end := s.at
	if s.punct(';') {
		end = s.at
	}
	return blank(src, off, end), true
}

// blank replaces src[from:to] with spaces, a character's UTF-16 length of
// them for each (line breaks stay).
func blank(src string, from, to int) string {
	var b strings.Builder
	b.Grow(len(src))
	b.WriteString(src[:from])
	for _, r := range src[from:to] {
		switch r {
		case '\n', '\r', '\u2028', '\u2029':
			b.WriteRune(r)
		default:
			b.WriteString("  "[:utf16Len(string(r))])
		}
	}
	b.WriteString(src[to:])
	return b.String()
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r) // an invalid byte is U+FFFD: one unit
	}
	return n
}

// scanner reads the few tokens of an import or export declaration,
// skipping white space and comments between them.
type scanner struct {
	src string
	at  int
}

// skip passes white space and comments.
func (s *scanner) skip() {
	for s.at < len(s.src) {
		c := s.src[s.at]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			s.at++
		case strings.HasPrefix(s.src[s.at:], "//"):
			i := strings.IndexAny(s.src[s.at:], "\n\r")
			if i < 0 {
				s.at = len(s.src)
				return
			}
			s.at += i
		case strings.HasPrefix(s.src[s.at:], "/*"):
			i := strings.Index(s.src[s.at+2:], "*/")
			if i < 0 {
				s.at = len(s.src)
				return
			}
			s.at += 2 + i + 2
		default:
			if r, n := utf8.DecodeRuneInString(s.src[s.at:]); r == '\u00a0' || r == '\ufeff' || r == '\u2028' || r == '\u2029' {
				s.at += n
				continue
			}
			return
		}
	}
}

// identByte reports whether c continues an identifier (bytes of non-ASCII
// characters count: the parser has read the declaration already).
func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// peekWord is the identifier at the scanner's place, not taken.
func (s *scanner) peekWord() string {
	s.skip()
	i := s.at
	for i < len(s.src) && identByte(s.src[i]) {
		i++
	}
	return s.src[s.at:i]
}

// word takes an identifier ("" if there is none).
func (s *scanner) word() string {
	w := s.peekWord()
	s.at += len(w)
	return w
}

// punct takes c if it is next.
func (s *scanner) punct(c byte) bool {
	s.skip()
	if s.at < len(s.src) && s.src[s.at] == c {
		s.at++
		return true
	}
	return false
}

// str takes a string literal.
func (s *scanner) str() bool {
	s.skip()
	if s.at >= len(s.src) || (s.src[s.at] != '"' && s.src[s.at] != '\'') {
		return false
	}
	q := s.src[s.at]
	for i := s.at + 1; i < len(s.src); i++ {
		switch s.src[i] {
		case '\\':
			i++
		case '\n', '\r':
			return false
		case q:
			s.at = i + 1
			return true
		}
	}
	return false
}

// list takes the rest of a specifier list after its `{`: specifiers
// separated by commas, up to `}`, each `[type] name [as name]` with a
// name an identifier or a string. typed requires every specifier to be
// marked type, as TypeScript reads them (`type A`, `type A as B`; `type`
// and `type as B` name a value called type), and at least one.
func (s *scanner) list(typed bool) bool {
	n := 0
	for !s.punct('}') {
		var toks []string
		for len(toks) < 4 {
			if w := s.word(); w != "" {
				toks = append(toks, w)
			} else if s.str() {
				toks = append(toks, `"`)
			} else {
				break
			}
		}
		switch {
		case len(toks) == 1:
		case len(toks) == 2 && toks[0] == "type":
			toks[0] = "type:"
		case len(toks) == 3 && toks[1] == "as":
		case len(toks) == 4 && toks[0] == "type" && toks[2] == "as":
			toks[0] = "type:"
		default:
			return false
		}
		if typed && toks[0] != "type:" {
			return false
		}
		n++
		if !s.punct(',') {
			if !s.punct('}') {
				return false
			}
			break
		}
	}
	return !typed || n > 0
}

// attributes takes import attributes after their `{`: key: "value"
// pairs, up to `}`.
func (s *scanner) attributes() bool {
	for {
		if s.punct('}') {
			return true
		}
		if s.word() == "" && !s.str() {
			return false
		}
		if !s.punct(':') || !s.str() {
			return false
		}
		if !s.punct(',') {
			return s.punct('}')
		}
	}
}
