package jspos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSessionBodyHoists(t *testing.T) {
	tests := []struct {
		name, src, out, globals string // out with its position markers (0;)
	}{
		{"let and const", "let a = 1, b\nconst c = 2", "0;;   a = 1, b\n0;;     c = 2", "let a, b, c;"},
		{"var", "var v = f()", "0;;   v = (__codemode_at(0),f)()", "var v;"},
		{"patterns", "const {x, y: [z = 1], ...r} = o", "0;;     ({x, y: [z = 1], ...r} = o)", "let x, z, r;"},
		{"array pattern after a call", "f()\nlet [p] = q", "(__codemode_at(0),f)()\n0;;   ([p] = q)", "let p;"},
		{"function", "g()\nfunction g() {}", "globalThis.g = g;g()\nfunction g() {}", "var g;"},
		{"function after a directive", "'use strict'\nfunction g() {}", "'use strict'\nglobalThis.g = g;function g() {}", "var g;"},
		{"class", "class K { m() {} }\n(k)", "0;K = class K { m() {} };\n0;return (k)", "let K;"},
		{"nested stay", "{ let a = 1 } for (var i = 0; ;) {} if (x) { var w }", "{ 0;let a = 1 } 0;for (var i = 0; ;) {;0;} 0;if (x) { 0;var w }", ""},
		{"lone function is declared", "function h() { return 1 }", "globalThis.h = h;function h() { 0;return 1 }", "var h;"},
		{"arrow is called", "async () => { let a = 1 }", "0;return (async () => { 0;let a = 1 }\n)()", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Instrument(tt.src, SessionBody)
			assert.Equal(t, tt.globals, m.Globals())
			assert.Equal(t, tt.out, m.Source())
		})
	}
}
