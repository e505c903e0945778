//go:build cgo

package codemode_test

import (
	"testing"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/spectest"
)

// TestSpecExamples runs every example of the providers-and-dispatch
// protocol (docs/PROTOCOL.md) with its expected output (internal/spectest,
// which the remote client's tests run too).
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	e, err := codemode.New()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	spectest.Examples(t, e)
}
