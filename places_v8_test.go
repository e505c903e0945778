//go:build cgo

package codemode

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// v8Places are bodies that fail, each placed where V8 places it. Two
// places differ by design and are not here: `return foo(1)` with foo not
// defined is placed at foo (V8: the statement's start), and `o.a.b += 1`
// reading b of undefined at b (V8: at a).
var v8Places = []string{
	"const a = {};\n  return a.nope.deeper;",
	"const o = {};\nreturn o.foo(1);",
	"const o={};\no.x.y = 3",
	"const o = {};\nfor (const x of o.list) {}",
	"const f = 3;\nreturn f()",
	"const rows = [{a: 1}, {}]\nreturn rows.map(function (r) {\n  const v = r.a\n  return v.toFixed(1)\n})",
	"const q = 1\nconst g = [1].map((x) => x.y.z)\nreturn g",
	"function f(o){ return o.x.y }\nreturn f({});",
	"const d = {items: []}\nreturn d.items[0].name",
	"const m = new Map()\nconst v = m.get(1)\nif (v.ok) { return 1 }",
	"const xs = null\nreturn [...xs]",
	"let u\nconst {a} = u",
	"const o = {}\nreturn new o.f()",
	"const a = {}\nreturn a.b.c + a.x.c",
	"const k = 'z'\nconst o = {}\nreturn o[k].y",
	"let n = null\nfor (let i = 0; i < 3; i++) {\n  n.push(i)\n}",
	"const u = undefined\nconst s = `${u.name}`",
	"const data = {}\nconst total = data.items.reduce((a, b) => a + b, 0)",
	"class A { m() { return this.x.y } }\nreturn new A().m()",
	"async function load() {\n  const cfg = null\n  return cfg.url\n}\nreturn await load()",
	"const list = [1, 2]\nreturn list.map(x => x.a.b)",
	"const x = undefined\nswitch (x.kind) { case 1: return 1 }",
	"const xs = 5\nfor (const x of xs) {}",
}

// v8Script runs each body as an async function's in Node (vm, the wrapper
// on a line of its own) and prints where V8 placed its error.
const v8Script = `
const vm = require('vm');
const bodies = JSON.parse(require('fs').readFileSync(0, 'utf8'));
(async () => {
  const out = [];
  for (const body of bodies) {
    try {
      await new vm.Script("(async () => {\n" + body + "\n})()", {filename: 'script.js'}).runInNewContext({});
      out.push(null);
    } catch (e) {
      const m = /script\.js:(\d+):(\d+)/.exec(String(e && e.stack));
      out.push(m ? [Number(m[1]) - 1, Number(m[2])] : null);
    }
  }
  console.log(JSON.stringify(out));
})();`

// TestErrorPlacesMatchV8: a script error's line and column are V8's
// (Node's), on identical bodies: the expression that threw, placed as V8
// places it (a member at its property, a write at its operator, `new` at
// its keyword, a call at its callee's name).
func TestErrorPlacesMatchV8(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on the PATH: error places are not compared with V8's")
	}
	in, err := json.Marshal(v8Places)
	require.NoError(t, err)
	cmd := exec.Command(node, "-e", v8Script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	require.NoError(t, err)
	var want [][]int
	require.NoError(t, json.Unmarshal(out, &want))
	require.Len(t, want, len(v8Places))
	e := newExecutor(t)
	frame := regexp.MustCompile(`script\.js:(\d+):(\d+)`)
	for i, body := range v8Places {
		require.NotNil(t, want[i], "V8 placed no error of %q", body)
		_, err := e.Run(context.Background(), body)
		ee := execErr(t, err)
		assert.Equal(t, want[i], []int{ee.Line, ee.Column}, "Run(%q): %s", body, ee.Message)
		// The message's first frame says the same.
		m := frame.FindStringSubmatch(ee.Message)
		require.NotNil(t, m, ee.Message)
		l, _ := strconv.Atoi(m[1])
		c, _ := strconv.Atoi(m[2])
		assert.Equal(t, []int{ee.Line, ee.Column}, []int{l, c}, ee.Message)
	}
}
