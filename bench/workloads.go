package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// workload is one measured task, identical across engines.
type workload struct {
	id, title string
	want      string // the expected result, as JSON
	// as: the workload whose run an engine without one of this id's
	// runs (W3r: codemode's raw form; the peers have one form)
	as string
}

var workloads = []workload{
	{"W1", "fresh sandbox, tiny script returning a small object", `{"ok":true,"n":2,"s":"hi"}`, ""},
	{"W2", "fresh sandbox, 50-line data transform", "", ""}, // want: testdata/golden/realistic.json
	{"W3", "one run making 100 host-function calls, typed (codemode.Func; peers: their Go functions)", `5050`, ""},
	{"W3r", "W3 with a raw capability (json.RawMessage in, any out; peers: as W3)", `5050`, "W3"},
	{"W4", "Promise.all over 16 async host calls of 1 ms", `136`, ""},
	{"W5", "a 2,000-line tool from cached bytecode", `{"n":5,"result":750}`, ""},
}

// scripts holds the JavaScript every engine runs. Bodies are async-function
// bodies (codemode's run_js); expressions are what the other engines
// evaluate. Both do the same work.
type scripts struct {
	tinyBody, tinyExpr           string
	realisticBody, realisticExpr string
	host100Body, host100Expr     string
	hostRawBody                  string // W3r: codemode's raw capability
	async16Body, async16Expr     string
	largeTool, largeExpr         string
}

func loadScripts(root string) (*scripts, error) {
	realistic, err := os.ReadFile(filepath.Join(root, "testdata/golden/realistic.js"))
	if err != nil {
		return nil, err
	}
	want, err := os.ReadFile(filepath.Join(root, "testdata/golden/realistic.json"))
	if err != nil {
		return nil, err
	}
	workloads[1].want = strings.TrimSpace(string(want))
	large, err := os.ReadFile(filepath.Join(root, "testdata/large_tool.js"))
	if err != nil {
		return nil, err
	}
	tool := strings.TrimSpace(string(large))
	return &scripts{
		tinyBody:      `return {ok: true, n: 1 + 1, s: "hi"}`,
		tinyExpr:      `({ok: true, n: 1 + 1, s: "hi"})`,
		realisticBody: string(realistic),
		realisticExpr: "(() => {\n" + string(realistic) + "\n})()",
		host100Body:   "let s = 0; for (let i = 0; i < 100; i++) s += hcall({i}); return s",
		host100Expr:   "(() => { let s = 0; for (let i = 0; i < 100; i++) s += hcall(i); return s })()",
		hostRawBody:   "let s = 0; for (let i = 0; i < 100; i++) s += hraw({i}); return s",
		async16Body: "const r = await Promise.all(Array.from({length: 16}, (_, i) => hasync({i})));\n" +
			"return r.reduce((a, b) => a + b, 0)",
		async16Expr: "(async () => { const r = await Promise.all(Array.from({length: 16}, (_, i) => hasync(i)));\n" +
			"return r.reduce((a, b) => a + b, 0) })()",
		largeTool: tool,
		largeExpr: "(" + tool + ")({n: 5})",
	}, nil
}

// runOf is e's run of the workload id, or of the workload it stands for
// (its as) when e has none of its own, and the id the run is e's under.
func (e *engine) runOf(id string) (func() (string, error), string) {
	if e.runs[id] == nil {
		for _, w := range workloads {
			if w.id == id && w.as != "" {
				return e.runs[w.as], w.as
			}
		}
	}
	return e.runs[id], id
}

// sameJSON reports whether two JSON texts encode the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// check runs a workload once and compares its answer with the expected one.
func check(run func() (string, error), w workload) error {
	got, err := run()
	if err != nil {
		return err
	}
	if !sameJSON(got, w.want) {
		return fmt.Errorf("wrong answer %.80s", got)
	}
	return nil
}

// cstr returns s NUL-terminated, for C.
func cstr(s string) []byte { return append([]byte(s), 0) }
