package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/codemode-go/codemode/internal/hostile"
)

// TestHostileSources: `codemode run` on the sources that once ended it (200,000
// nested `[` in a .ts file: esbuild's parser overflowed the Go stack, exit
// status 2) or held it for minutes ends with the script's own status (1, or
// 3 for a limit) and an error on stdout that says why, in-process: a crash
// would take the test binary down.
func TestHostileSources(t *testing.T) {
	dir := t.TempDir()
	for name, src := range hostile.Sources() {
		for _, ext := range []string{".js", ".ts"} {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+ext)
			if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), []string{"run", "--deadline", "10s", file}, strings.NewReader(""), &stdout, &stderr)
			assert.Contains(t, []int{exitOK, exitScript, exitLimit}, code, "codemode run %s: %s%s", file, stdout.String(), stderr.String())
			if code == exitLimit {
				assert.NotContains(t, stdout.String(), `"timeout"`, "codemode run %s", file)
			}
		}
	}
}
