package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSession runs the example: the second step's failure is rolled back.
func TestSession(t *testing.T) {
	var b strings.Builder
	require.NoError(t, run(context.Background(), &b))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "1", lines[0])
	assert.Contains(t, lines[1], "error: ")
	assert.Contains(t, lines[1], "a failed step changes nothing")
	assert.Equal(t, `{"count":2,"notes":["first","third"]}`, lines[2])
}
