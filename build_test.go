package codemode

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuildWithoutCgo: without cgo the package fails to build with one
// error that says what it needs, not with the undefined names of the files
// cgo leaves out.
func TestBuildWithoutCgo(t *testing.T) {
	t.Parallel()
	gocmd, err := exec.LookPath("go")
	require.NoError(t, err)
	cmd := exec.Command(gocmd, "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a build without cgo must fail")
	assert.Equal(t, "# github.com/codemode-go/codemode\n"+
		"./nocgo.go:9:9: undefined: codemode_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler_such_as_gcc_or_clang\n",
		string(out))
}
