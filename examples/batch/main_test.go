package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBatch runs the example: outcomes in input order, each its job's.
func TestBatch(t *testing.T) {
	var b strings.Builder
	require.NoError(t, run(context.Background(), &b))
	assert.Equal(t, "\"sum\" ok 6\n\"throws\" js\n\"loops\" timeout\n\"json\" ok {\"ok\":true}\n", b.String())
}
