package quickjs

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// upstreamInclude returns the directory holding the carrier's real quickjs.h.
func upstreamInclude(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", Carrier).Output()
	require.NoError(t, err, "go list -m %s", Carrier)
	dir := filepath.Join(strings.TrimSpace(string(out)), "deps", "quickjs")
	_, err = os.Stat(filepath.Join(dir, "quickjs.h"))
	require.NoError(t, err, "the carrier module has no deps/quickjs/quickjs.h")
	return dir
}

// compiler returns the C compiler cgo uses, as argv.
func compiler(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "CC").Output()
	require.NoError(t, err)
	cc := strings.Fields(string(out))
	if len(cc) == 0 {
		cc = []string{"gcc"}
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		t.Skipf("no C compiler %q: %v", cc[0], err)
	}
	return cc
}

// buildAndRun compiles src with the given flags and returns what it prints.
func buildAndRun(t *testing.T, src string, flags ...string) string {
	t.Helper()
	cc := compiler(t)
	bin := filepath.Join(t.TempDir(), "probe")
	args := append(append(cc[1:], flags...), "-std=gnu11", "-o", bin, src)
	out, err := exec.Command(cc[0], args...).CombinedOutput()
	require.NoError(t, err, "compile %s:\n%s", src, out)
	out, err = exec.Command(bin).Output()
	require.NoError(t, err)
	return string(out)
}

// TestLayoutMatchesUpstream compares sizes, offsets and constant values
// computed under the real header with those computed under ours.
func TestLayoutMatchesUpstream(t *testing.T) {
	probe, err := filepath.Abs("testdata/abi_probe.c")
	require.NoError(t, err)
	upstream := buildAndRun(t, probe, "-I", upstreamInclude(t), "-include", "quickjs.h")
	ours := buildAndRun(t, probe, "-I", ".", "-include", "quickjs_api.h")
	require.NotEmpty(t, upstream)
	upLines, ourLines := strings.Split(upstream, "\n"), strings.Split(ours, "\n")
	require.Len(t, ourLines, len(upLines))
	for i := range upLines {
		require.Equal(t, upLines[i], ourLines[i], "quickjs_api.h drifted from upstream quickjs.h")
	}
}

var (
	redundantDecl = regexp.MustCompile(`redundant redeclaration of '([A-Za-z0-9_]+)'`)
	prototypeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_ \*]*?\b((?:JS|js)_[A-Za-z0-9_]+)\(`)
)

// declaredPrototypes lists the functions quickjs_api.h declares outside its
// QUICKJS_H guard, i.e. the ones the compiler re-checks against upstream.
func declaredPrototypes(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("quickjs_api.h")
	require.NoError(t, err)
	defer f.Close()
	var names []string
	depth := 0 // nesting inside "#ifndef QUICKJS_H" blocks
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#ifndef QUICKJS_H"):
			depth++
		case strings.HasPrefix(line, "#endif /* !QUICKJS_H"):
			depth--
		case depth == 0:
			if m := prototypeName.FindStringSubmatch(line); m != nil {
				names = append(names, m[1])
			}
		}
	}
	require.NoError(t, sc.Err())
	sort.Strings(names)
	return names
}

// TestPrototypesMatchUpstream includes the real header and then ours in one
// translation unit: a prototype whose type drifted is a compile error, and a
// prototype upstream no longer declares is missing from the compiler's list
// of redundant redeclarations.
func TestPrototypesMatchUpstream(t *testing.T) {
	cc := compiler(t)
	src := filepath.Join(t.TempDir(), "both.c")
	require.NoError(t, os.WriteFile(src, []byte("#include \"quickjs.h\"\n#include \"quickjs_api.h\"\n"), 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	args := append(cc[1:], "-std=gnu11", "-fsyntax-only", "-Wredundant-decls",
		"-I", upstreamInclude(t), "-I", wd, src)
	cmd := exec.Command(cc[0], args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C") // plain quotes in diagnostics
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "our prototypes conflict with upstream quickjs.h:\n%s", out)

	seen := map[string]bool{}
	for _, m := range redundantDecl.FindAllSubmatch(out, -1) {
		seen[string(m[1])] = true
	}
	declared := declaredPrototypes(t)
	require.NotEmpty(t, declared)
	var missing []string
	for _, name := range declared {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	require.Empty(t, missing, "declared in quickjs_api.h but not by upstream quickjs.h")
}

// TestEngineVersion checks EngineVersion against the real header.
func TestEngineVersion(t *testing.T) {
	src := filepath.Join(t.TempDir(), "version.c")
	prog := `#include <stdio.h>
int main(void) { printf("%d.%d.%d%s", QJS_VERSION_MAJOR, QJS_VERSION_MINOR, QJS_VERSION_PATCH, QJS_VERSION_SUFFIX); return 0; }
`
	require.NoError(t, os.WriteFile(src, []byte(prog), 0o644))
	got := buildAndRun(t, src, "-I", upstreamInclude(t), "-include", "quickjs.h")
	require.Equal(t, EngineVersion, string(bytes.TrimSpace([]byte(got))))
}
