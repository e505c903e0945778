package codemode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The web-platform-tests as the web globals' tests: every .any.js file in
// ../shared/conformance/wpt (its README names the sources and commits;
// CODEMODE_WPT names another copy) runs in a sandbox under
// testdata/wpt/harness.js, our stand-in for testharness.js, with the
// resources it fetches served from the same directory. A case passes or
// is named in testdata/wpt/known.jsonl with the reason it fails (a list
// that only shrinks: a named case that passes fails the test too).
//
// Node is the reference: where `node` is on the PATH (CI installs it),
// the same program runs there, on identical text, and every case named
// in known.jsonl under url/ or encoding/ must fail in Node too, unless its
// entry says Node passes it and why failing it here is right; the table
// of cases, sandbox passes and Node passes per file is logged.
// CODEMODE_WPT_KNOWN=write rewrites known.jsonl from the sandbox's
// failures (keeping the reasons already written).

// wptDrivers are programs WPT runs from an .any.js file this copy lacks,
// each made from the files here as upstream makes it.
var wptDrivers = map[string]func(root string) (string, error){
	// url-constructor.any.js's newer form reads both data files: the same
	// file, on the other one.
	"url/url-constructor-javascript-only.any.js": func(root string) (string, error) {
		b, err := os.ReadFile(filepath.Join(root, "url", "url-constructor.any.js"))
		return strings.ReplaceAll(string(b), "resources/urltestdata.json", "resources/urltestdata-javascript-only.json"), err
	},
	"dom/abort/abort-signal-any.any.js": func(string) (string, error) {
		return "// META: script=./resources/abort-signal-any-tests.js\n" +
			"abortSignalAnySignalOnlyTests(AbortSignal);\nabortSignalAnyTests(AbortSignal, AbortController);\n", nil
	},
	// gb18030-decoder.any.js's META script: index gb18030 ranges, each
	// pointer with its code point's text, as upstream generates it from the
	// index; here from the same index in gb18030-decoder.js, WPT's reference
	// decoder beside it (less its end sentinel).
	"encoding/legacy-mb-schinese/gb18030/resources/ranges.js": func(root string) (string, error) {
		b, err := os.ReadFile(filepath.Join(root, "encoding", "legacy-mb-schinese", "gb18030", "gb18030-decoder.js"))
		if err != nil {
			return "", err
		}
		m := regexp.MustCompile(`var gb18030Ranges = (\[\[[^\n]*\]\])`).FindSubmatch(b)
		var ranges [][2]int
		if m == nil || json.Unmarshal(m[1], &ranges) != nil || len(ranges) < 2 {
			return "", fmt.Errorf("gb18030-decoder.js: no gb18030Ranges")
		}
		var out strings.Builder
		out.WriteString("const ranges = [\n")
		for _, r := range ranges[:len(ranges)-1] {
			fmt.Fprintf(&out, "  [%d, String.fromCodePoint(%d)],\n", r[0], r[1])
		}
		out.WriteString("];\n")
		return out.String(), nil
	},
}

// wptSearch is location.search for a file with variants WPT runs
// separately, each on part of its cases: the variant the sandbox can run
// (single-byte-decoder's others decode through XMLHttpRequest and
// documents).
var wptSearch = map[string]string{
	"encoding/single-byte-decoder.any.js": "?TextDecoder",
}

// wptLimits: the largest file (IdnaTestV2, 2,670 cases over 310 KB of data)
// in any mode, ASan's included.
var wptLimits = Limits{Memory: 512 << 20, Stack: 1 << 20, Deadline: 2 * time.Minute, Payload: 16 << 20, Logs: 1 << 20}

type wptResult struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

type wptKnown struct {
	File   string `json:"file"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// NodePasses: the case passes in Node and its reason says why failing
	// it here is right (a data file older than the standard it tests).
	NodePasses bool `json:"nodePasses,omitempty"`
}

var (
	wptMeta     = regexp.MustCompile(`(?m)^// META: script=(\S+)\s*$`)
	wptResource = regexp.MustCompile(`"((?:\.\./)*[\w/.-]*resources/[\w.-]+\.json)"`)
)

// wptProgram is file's program: the stand-in harness, its META scripts,
// the file, and the resources it fetches; the body of an async function
// that returns the cases' outcomes.
func wptProgram(root, file, text string) (string, error) {
	harness, err := os.ReadFile("testdata/wpt/harness.js")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	search, err := json.Marshal(wptSearch[file])
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "let location = { search: %s };\n", search)
	var scripts []string
	for _, m := range wptMeta.FindAllStringSubmatch(text, -1) {
		p := m[1]
		if strings.HasPrefix(p, "/") {
			p = strings.TrimPrefix(p, "/")
		} else {
			p = path.Join(path.Dir(file), p)
		}
		s, err := wptText(root, p)
		if err != nil {
			return "", err
		}
		scripts = append(scripts, s)
	}
	resources := map[string]string{}
	for _, s := range append(scripts, text) {
		for _, m := range wptResource.FindAllStringSubmatch(s, -1) {
			data, err := os.ReadFile(filepath.Join(root, path.Dir(file), m[1]))
			if err != nil {
				return "", err
			}
			resources[m[1]] = string(data)
		}
	}
	res, err := json.Marshal(resources)
	if err != nil {
		return "", err
	}
	b.WriteString("const __wptResources = ")
	b.Write(res)
	b.WriteString(";\n")
	b.Write(harness)
	for _, s := range scripts {
		b.WriteString(s)
		b.WriteString("\n")
	}
	b.WriteString(text)
	b.WriteString("\nreturn await __wptResults();\n")
	return b.String(), nil
}

// wptText is a file under the WPT root, or a driver.
func wptText(root, file string) (string, error) {
	if d, ok := wptDrivers[file]; ok {
		return d(root)
	}
	b, err := os.ReadFile(filepath.Join(root, file))
	return string(b), err
}

// wptKeys names each case uniquely within its file: its name, and past its
// first occurrence, the occurrence.
func wptKeys(results []wptResult) map[string]wptResult {
	out := map[string]wptResult{}
	seen := map[string]int{}
	for _, r := range results {
		k := r.Name
		if n := seen[r.Name]; n > 0 {
			k = fmt.Sprintf("%s #%d", r.Name, n+1)
		}
		seen[r.Name]++
		out[k] = r
	}
	return out
}

// wptNode runs program under Node: its outcomes, or an error.
func wptNode(node, program string) ([]wptResult, error) {
	f, err := os.CreateTemp("", "codemode-wpt-*.js")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	wrapped := "(async () => {\n" + program + "\n})().then((r) => process.stdout.write(JSON.stringify(r), () => process.exit(0)), " +
		"(e) => { console.error(e); process.exit(1); });\n"
	if _, err := f.WriteString(wrapped); err != nil {
		return nil, err
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, f.Name()).Output()
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	var results []wptResult
	return results, json.Unmarshal(out, &results)
}

// wptNodeHeld: the files whose known failures must each fail in Node too
// or say why not (the web globals Node implements as the standards do).
func wptNodeHeld(file string) bool {
	return strings.HasPrefix(file, "url/") || strings.HasPrefix(file, "encoding/")
}

func loadWPTKnown(t *testing.T) map[string]map[string]wptKnown {
	known := map[string]map[string]wptKnown{}
	f, err := os.Open("testdata/wpt/known.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var k wptKnown
		if err := json.Unmarshal(sc.Bytes(), &k); err != nil {
			t.Fatalf("known.jsonl: %q: %v", sc.Text(), err)
		}
		if known[k.File] == nil {
			known[k.File] = map[string]wptKnown{}
		}
		if k.Reason == "" {
			t.Fatalf("known.jsonl: %s %q has no reason", k.File, k.Name)
		}
		known[k.File][k.Name] = k
	}
	require.NoError(t, sc.Err())
	return known
}

// TestWPT: the web-platform-tests' cases for URL, URLSearchParams,
// TextEncoder and TextDecoder (every encoding's), atob/btoa,
// structuredClone and AbortSignal, in a sandbox and (where Node is) in
// Node.
func TestWPT(t *testing.T) {
	t.Parallel()
	root := os.Getenv("CODEMODE_WPT")
	if root == "" {
		root = "../shared/conformance/wpt"
	}
	if _, err := os.Stat(filepath.Join(root, "url", "resources", "urltestdata.json")); err != nil {
		t.Fatalf("the web-platform-tests are not at %s (../shared/conformance beside the repository): %v", root, err)
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".any.js") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	require.NoError(t, err)
	for f := range wptDrivers {
		if strings.HasSuffix(f, ".any.js") {
			files = append(files, f)
		}
	}
	sort.Strings(files)

	node, _ := exec.LookPath("node")
	if node == "" {
		t.Log("node is not on the PATH: the sandbox's outcomes are not compared with Node's")
	}
	known := loadWPTKnown(t)
	write := os.Getenv("CODEMODE_WPT_KNOWN") == "write"
	var rewritten []wptKnown
	e := newExecutor(t, WithLimits(wptLimits))
	table := []string{"| file | cases | sandbox | Node |", "|---|---|---|---|"}
	for _, file := range files {
		text, err := wptText(root, file)
		require.NoError(t, err)
		program, err := wptProgram(root, file, text)
		require.NoError(t, err, file)
		res, err := e.Run(context.Background(), program)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		var results []wptResult
		require.NoError(t, json.Unmarshal(res.Value, &results), file)
		ours := wptKeys(results)
		var theirs map[string]wptResult
		if node != "" {
			nr, err := wptNode(node, program)
			require.NoError(t, err, file)
			theirs = wptKeys(nr)
		}
		pass, nodePass := 0, 0
		names := make([]string, 0, len(ours))
		for k := range ours {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			r := ours[k]
			entry, isKnown := known[file][k]
			nodePasses := theirs != nil && theirs[k].Status == "PASS"
			if r.Status == "PASS" {
				pass++
			}
			if nodePasses {
				nodePass++
			}
			switch {
			case write:
				if r.Status != "PASS" {
					if !isKnown {
						entry = wptKnown{File: file, Name: k, Reason: "TODO"}
					}
					if theirs != nil {
						entry.NodePasses = nodePasses
					}
					rewritten = append(rewritten, entry)
				}
			case r.Status == "PASS" && isKnown:
				t.Errorf("%s: %q passes now; take it out of testdata/wpt/known.jsonl", file, k)
			case r.Status != "PASS" && !isKnown:
				t.Errorf("%s: %q: %s: %s", file, k, r.Status, r.Message)
			case r.Status != "PASS" && theirs != nil && wptNodeHeld(file) && nodePasses != entry.NodePasses:
				if nodePasses {
					t.Errorf("%s: %q fails here (%s) and passes in Node", file, k, r.Message)
				} else {
					t.Errorf("%s: %q: known.jsonl says it passes in Node; it does not", file, k)
				}
			}
		}
		if !write {
			for k := range known[file] {
				if _, ok := ours[k]; !ok {
					t.Errorf("%s: testdata/wpt/known.jsonl names %q, which the file does not have", file, k)
				}
			}
		}
		nodeCol := "-"
		if theirs != nil {
			nodeCol = fmt.Sprint(nodePass)
		}
		table = append(table, fmt.Sprintf("| %s | %d | %d | %s |", file, len(ours), pass, nodeCol))
	}
	t.Log("\n" + strings.Join(table, "\n"))
	if write {
		var b strings.Builder
		for _, k := range rewritten {
			line, err := json.Marshal(k)
			require.NoError(t, err)
			b.Write(line)
			b.WriteByte('\n')
		}
		require.NoError(t, os.WriteFile("testdata/wpt/known.jsonl", []byte(b.String()), 0o644))
	}
}
