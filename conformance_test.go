//go:build conformance

package codemode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The differential conformance gate (make conformance; a fixed subset in
// make test): test262, from the copy beside the repository
// (../shared/conformance/test262, its commit in that directory's README),
// runs through the plain engine (plain.go: the same QuickJS-ng and
// intrinsics, nothing of codemode's) and through a sandbox, on identical
// text, in two shapes:
//
//   - global code: the test as test262 means it, in a sandbox with its
//     guards, web globals and lazy globals, and no rewriting;
//   - Run's body: the test as Executor.Run's script, with everything Run
//     adds (shapes, markers, the wrapper); the plain engine runs it as the
//     body of an async function.
//
// A test that passes on the plain engine and fails in the sandbox, in
// either shape, is a bug of codemode's, unless testdata/conformance/known.txt
// names it with a reason (a list that only shrinks: a named test that
// passes fails the gate too). Tests the shape makes inapplicable are
// classified by rule and counted, never dropped: module code (flags:
// module) in both shapes; in the body shape, a test the plain engine
// passes as global code and fails as a function body (global-scope
// semantics a body cannot have); and a test whose last expression
// statement's value, which Run returns (and awaits), fails it where the
// value discarded passes (a rejected or never-settling promise, a promise
// subclass counting its then calls). Tests neither engine passes are
// counted as such.
//
// CODEMODE_CONFORMANCE_SUBSET=N runs the first test of every directory
// and every Nth after it; CODEMODE_TEST262 names another copy.

// conformanceLimits are both engines' limits for every test.
var conformanceLimits = Limits{Memory: 128 << 20, Stack: 1 << 20, Deadline: 20 * time.Second, Payload: 1 << 20,
	Logs: 1 << 20}

// t262meta is a test's frontmatter (INTERPRETING.md, Metadata).
type t262meta struct {
	Includes []string `yaml:"includes"`
	Flags    []string `yaml:"flags"`
	Features []string `yaml:"features"`
	Negative *struct {
		Phase string `yaml:"phase"`
		Type  string `yaml:"type"`
	} `yaml:"negative"`
}

func (m t262meta) flag(f string) bool {
	for _, x := range m.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// t262prelude defines the host's functions (INTERPRETING.md, Host-Defined
// Functions), the same text for both engines: print (the plain engine's
// own, console.log in a sandbox) and $262 with what a host without realms
// or agents can give.
const t262prelude = `var print = typeof globalThis.print === 'function' ? globalThis.print : function (s) { console.log(String(s)); };
var $262 = {
  global: globalThis,
  gc: function () { throw new Error('gc is not available'); },
  detachArrayBuffer: function (buffer) { buffer.transfer(); },
  evalScript: function (source) { return (0, eval)(source); },
  createRealm: function () { throw new Error('realms are not available'); },
  agent: {},
};
`

// outcome is one engine's run of one test in one shape: pass or not, and
// why not.
type t262outcome struct {
	pass bool
	why  string
}

// t262result is one test (one strictness variant) in every engine and
// shape.
type t262result struct {
	path   string // under test/
	strict bool
	module bool
	// global and body: the plain engine's outcome, then the sandbox's.
	global, body [2]t262outcome
	// bodyValue: the sandbox failed the body only for the value Run
	// returns (with it discarded, the body passes).
	bodyValue bool
}

type t262suite struct {
	dir     string
	harness sync.Map // name -> string
}

func (s *t262suite) include(name string) (string, error) {
	if v, ok := s.harness.Load(name); ok {
		return v.(string), nil
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "harness", name))
	if err != nil {
		return "", err
	}
	s.harness.Store(name, string(b))
	return string(b), nil
}

func parseMeta(src string) (t262meta, error) {
	var m t262meta
	start := strings.Index(src, "/*---")
	end := strings.Index(src, "---*/")
	if start < 0 || end < start {
		return m, errors.New("no frontmatter")
	}
	err := yaml.Unmarshal([]byte(src[start+5:end]), &m)
	return m, err
}

// texts are the test's texts to run: one per strictness it runs in.
func (s *t262suite) texts(src string, m t262meta) (texts []string, strict []bool, err error) {
	if m.flag("raw") {
		return []string{src}, []bool{false}, nil
	}
	var b strings.Builder
	b.WriteString(t262prelude)
	names := []string{"assert.js", "sta.js"}
	if m.flag("async") {
		names = append(names, "doneprintHandle.js")
	}
	names = append(names, m.Includes...)
	for _, n := range names {
		h, err := s.include(n)
		if err != nil {
			return nil, nil, err
		}
		b.WriteString(h)
		b.WriteString("\n")
	}
	b.WriteString(src)
	text := b.String()
	switch {
	case m.flag("onlyStrict"):
		return []string{"\"use strict\";\n" + text}, []bool{true}, nil
	case m.flag("noStrict") || m.flag("module"):
		return []string{text}, []bool{false}, nil
	}
	return []string{text, "\"use strict\";\n" + text}, []bool{false, true}, nil
}

// judge turns an engine's report into pass or fail by the test's
// expectations: its negative phase and type, and for an async test the
// line $DONE prints.
func judge(m t262meta, threw bool, syntax bool, thrown string, prints []string, other string) t262outcome {
	if other != "" {
		return t262outcome{why: other}
	}
	name := strings.TrimPrefix(thrown, "Uncaught ") // a sandbox's thrown value that is no Error
	if i := strings.IndexAny(name, ":\n"); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimSpace(name)
	if n := m.Negative; n != nil {
		switch {
		case !threw:
			return t262outcome{why: "expected " + n.Type + " (" + n.Phase + "), no error"}
		case name != n.Type:
			return t262outcome{why: "expected " + n.Type + ", got " + firstLine(thrown)}
		case n.Phase == "parse" && !syntax && name == "SyntaxError":
			return t262outcome{why: "a SyntaxError at runtime, not at parse: " + firstLine(thrown)}
		}
		return t262outcome{pass: true}
	}
	if threw {
		return t262outcome{why: firstLine(thrown)}
	}
	if m.flag("async") {
		for _, p := range prints {
			if strings.HasPrefix(p, "Test262:AsyncTestFailure") {
				return t262outcome{why: p}
			}
		}
		for _, p := range prints {
			if p == "Test262:AsyncTestComplete" {
				return t262outcome{pass: true}
			}
		}
		return t262outcome{why: "$DONE was never called"}
	}
	return t262outcome{pass: true}
}

func judgePlain(m t262meta, o plainOutcome) t262outcome {
	other := ""
	switch {
	case o.timedOut:
		other = "timeout"
	case o.stalled:
		other = "the body's promise never settled"
	}
	return judge(m, o.threw, o.syntax, o.thrown, o.prints, other)
}

func judgeSandbox(m t262meta, res *Result, err error) t262outcome {
	var logs []string
	if res != nil {
		logs = res.Logs
	}
	if err == nil {
		return judge(m, false, false, "", logs, "")
	}
	var ee *ExecError
	if !errors.As(err, &ee) {
		return t262outcome{why: err.Error()}
	}
	switch ee.Kind {
	case KindJS:
		syntax := strings.HasPrefix(ee.Message, "SyntaxError")
		return judge(m, true, syntax, ee.Message, logs, "")
	case KindPendingPromise:
		return judge(m, false, false, "", logs, "the body's promise never settled")
	}
	return t262outcome{why: string(ee.Kind) + ": " + firstLine(ee.Message)}
}

func (s *t262suite) run(ctx context.Context, e *Executor, path string) ([]t262result, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "test", path))
	if err != nil {
		return nil, err
	}
	src := string(b)
	m, err := parseMeta(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	texts, stricts, err := s.texts(src, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []t262result
	for i, text := range texts {
		r := t262result{path: path, strict: stricts[i], module: m.flag("module")}
		if !r.module {
			r.global[0] = judgePlain(m, plainRun(text, false, conformanceLimits))
			res, err := e.runGlobal(ctx, text)
			r.global[1] = judgeSandbox(m, res, err)
			r.body[0] = judgePlain(m, plainRun(text, true, conformanceLimits))
			res, err = e.Run(ctx, text)
			r.body[1] = judgeSandbox(m, res, err)
			if r.body[0].pass && !r.body[1].pass {
				res, err = e.Run(ctx, text+"\nvoid 0;")
				r.bodyValue = judgeSandbox(m, res, err).pass
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// tally is one directory's counts.
type tally struct {
	tests, runs, nonApplicable             int
	globalPlain, globalSandbox             int
	bodyPlain, bodySandbox, bodyNotForBody int
	bodyValue                              int // n/a: the body's value, which Run returns
	both                                   int // failing on both engines in some shape
}

// known is testdata/conformance/known.txt: "path shape reason" per line.
func loadKnown(t *testing.T) map[string]string {
	known := map[string]string{}
	f, err := os.Open("testdata/conformance/known.txt")
	if errors.Is(err, fs.ErrNotExist) {
		return known
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 3 {
			t.Fatalf("known.txt: %q: want path, shape and reason", line)
		}
		known[fields[0]+" "+fields[1]] = fields[2]
	}
	return known
}

func TestConformance(t *testing.T) {
	dir := os.Getenv("CODEMODE_TEST262")
	if dir == "" {
		dir = "../shared/conformance/test262"
	}
	if _, err := os.Stat(filepath.Join(dir, "harness", "assert.js")); err != nil {
		t.Fatalf("test262 is not at %s (../shared/conformance beside the repository): %v", dir, err)
	}
	subset := 1
	if v := os.Getenv("CODEMODE_CONFORMANCE_SUBSET"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CODEMODE_CONFORMANCE_SUBSET=%q: want a positive number", v)
		}
		subset = n
	}
	var paths []string
	byDir := map[string][]string{}
	for _, top := range []string{"built-ins", "language"} {
		err := filepath.WalkDir(filepath.Join(dir, "test", top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") || strings.HasSuffix(p, "_FIXTURE.js") {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(dir, "test"), p)
			byDir[filepath.Dir(rel)] = append(byDir[filepath.Dir(rel)], rel)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, files := range byDir {
		sort.Strings(files)
		for i, f := range files {
			if i%subset == 0 {
				paths = append(paths, f)
			}
		}
	}
	sort.Strings(paths)

	e, err := New(WithLimits(conformanceLimits))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	suite := &t262suite{dir: dir}
	ctx := context.Background()
	start := time.Now()
	jobs := make(chan string)
	results := make(chan []t262result)
	var failed sync.Map // path -> error
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				r, err := suite.run(ctx, e, p)
				if err != nil {
					failed.Store(p, err)
				}
				results <- r
			}
		}()
	}
	go func() {
		for _, p := range paths {
			jobs <- p
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()

	known := loadKnown(t)
	tallies := map[string]*tally{}
	var diffs []string
	seenKnown := map[string]bool{}
	for rs := range results {
		for _, r := range rs {
			parts := strings.SplitN(r.path, string(filepath.Separator), 3)
			key := parts[0] + "/" + parts[1]
			if len(parts) == 2 { // a test directly in built-ins or language
				key = parts[0]
			}
			tl := tallies[key]
			if tl == nil {
				tl = &tally{}
				tallies[key] = tl
			}
			tl.runs++
			if r.module {
				tl.nonApplicable++
				continue
			}
			variant := " (non-strict)"
			if r.strict {
				variant = " (strict)"
			}
			count := func(o [2]t262outcome, plain, sandbox *int) {
				if o[0].pass {
					*plain++
				}
				if o[1].pass {
					*sandbox++
				}
				if !o[0].pass && !o[1].pass {
					tl.both++
				}
			}
			count(r.global, &tl.globalPlain, &tl.globalSandbox)
			switch {
			case r.global[0].pass && !r.body[0].pass:
				tl.bodyNotForBody++ // global-scope semantics a body cannot have
			case r.bodyValue:
				tl.bodyValue++ // Run returns the last expression's value
			default:
				count(r.body, &tl.bodyPlain, &tl.bodySandbox)
			}
			for _, shape := range []struct {
				name string
				o    [2]t262outcome
				skip bool
			}{{"global", r.global, false}, {"body", r.body, (r.global[0].pass && !r.body[0].pass) || r.bodyValue}} {
				if shape.skip || !shape.o[0].pass || shape.o[1].pass {
					if shape.o[1].pass && known[r.path+" "+shape.name] != "" {
						seenKnown[r.path+" "+shape.name] = true
						diffs = append(diffs, r.path+" "+shape.name+variant+": passes now; take it off known.txt")
					}
					continue
				}
				k := r.path + " " + shape.name
				if known[k] != "" {
					seenKnown[k] = true
					continue
				}
				diffs = append(diffs, k+variant+": "+shape.o[1].why)
			}
		}
	}
	elapsed := time.Since(start)
	files := map[string]bool{}
	for _, p := range paths {
		parts := strings.SplitN(p, string(filepath.Separator), 3)
		key := parts[0] + "/" + parts[1]
		if len(parts) == 2 {
			key = parts[0]
		}
		if !files[p] {
			files[p] = true
			if tl := tallies[key]; tl != nil {
				tl.tests++
			}
		}
	}
	failed.Range(func(k, v any) bool {
		t.Errorf("%s: %v", k, v)
		return true
	})

	keys := make([]string, 0, len(tallies))
	for k := range tallies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sum tally
	var b strings.Builder
	fmt.Fprintf(&b, "# test262: the plain engine and the sandbox (make conformance)\n\n")
	fmt.Fprintf(&b, "Runs (a test without a strictness flag runs twice) passed, by directory, as global code and as\n")
	fmt.Fprintf(&b, "Run's body; what is not applicable to a shape, by rule; what neither engine passes.\n")
	fmt.Fprintf(&b, "\n| directory | tests | runs | global: plain | global: sandbox | body: plain | body: sandbox | n/a: module | n/a: global scope | n/a: body's value | fail on both |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range keys {
		tl := tallies[k]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", k, tl.tests, tl.runs, tl.globalPlain,
			tl.globalSandbox, tl.bodyPlain, tl.bodySandbox, tl.nonApplicable, tl.bodyNotForBody, tl.bodyValue, tl.both)
		sum.tests += tl.tests
		sum.runs += tl.runs
		sum.globalPlain += tl.globalPlain
		sum.globalSandbox += tl.globalSandbox
		sum.bodyPlain += tl.bodyPlain
		sum.bodySandbox += tl.bodySandbox
		sum.nonApplicable += tl.nonApplicable
		sum.bodyNotForBody += tl.bodyNotForBody
		sum.bodyValue += tl.bodyValue
		sum.both += tl.both
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", sum.tests, sum.runs, sum.globalPlain,
		sum.globalSandbox, sum.bodyPlain, sum.bodySandbox, sum.nonApplicable, sum.bodyNotForBody, sum.bodyValue, sum.both)
	fmt.Fprintf(&b, "\ntest262 (1 in %d of every directory's tests): %d differences, %s\n", subset, len(diffs), elapsed.Round(time.Second))
	sort.Strings(diffs)
	if out := os.Getenv("CODEMODE_CONFORMANCE_REPORT"); out != "" {
		report := b.String() + "\n" + strings.Join(diffs, "\n") + "\n"
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	fmt.Print(b.String())
	for i, d := range diffs {
		if i == 200 {
			t.Errorf("... and %d more", len(diffs)-200)
			break
		}
		t.Error(d)
	}
	if subset == 1 {
		for k := range known {
			if !seenKnown[k] {
				t.Errorf("known.txt names %s, which no longer differs: take it off", k)
			}
		}
	}
}
