// Package hostile holds the inputs that once ended the process or held a
// core for minutes, for every module's tests to throw at its surface: each
// nests a construct past any bound a parser in Go could survive (a Go
// stack overflow is fatal) or in the shapes that made a parser's error
// recovery or backtracking superlinear.
package hostile

import "strings"

// Sources returns, by name, JavaScript and TypeScript sources that must
// come back at once with an error (or a value), never crash, never hang.
func Sources() map[string]string {
	const n = 200000
	r := strings.Repeat
	return map[string]string{
		"parens":        r("(", 2*n),
		"brackets":      r("[", n),
		"braces":        r("{", n),
		"labels":        "return " + r("{a:", n),
		"arrows":        r("()=>", n) + "1",
		"bang":          "return " + r("!", n) + "x",
		"assignments":   r("a=", n) + "1",
		"conditionals":  r("a?b:", n) + "c",
		"ifs":           r("if(1)", n) + "x",
		"else ifs":      r("if(a){}else ", n) + "{}",
		"templates":     r("`${", n),
		"new":           r("new ", n) + "X",
		"typeof":        r("typeof ", n) + "x",
		"sums":          "return " + r("1+", 5*n) + "1",
		"members":       "return a" + r(".b", 5*n),
		"calls":         "return f" + r("()", 5*n),
		"empty ifs":     r("if ;", 2*n), // error recovery: goja's parser recurses on each
		"trys":          r("try ", 2*n),
		"functions":     r("function(){", n),
		"strays":        r("{a:1}}", n),
		"ts brackets":   "const x: number = 1;\n" + r("[", n),
		"ts generics":   "let x: " + r("Array<", n) + "number" + r(">", n) + " = []; return 1",
		"ts arrows":     "const x: number = 1;\nconst y = " + r("a ? (b) : c => ", 40) + "d;",
		"ts fn types":   "type F = " + r("(a: ", 2000) + "x" + r(") => void", 2000) + ";\nreturn 1",
		"ts unions":     "type U = " + r("'a' | ", n) + "'b';\nreturn 1",
		"labels 5,000":  "return " + r("{a:", 5000), // 6.6 s once, 60 KB
		"arrows 20,000": r("()=>", 20000) + "1",
	}
}
