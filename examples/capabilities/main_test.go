package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCapabilities runs the example: the declarations it shows and the
// program's result.
func TestCapabilities(t *testing.T) {
	var b strings.Builder
	require.NoError(t, run(context.Background(), &b))
	assert.Contains(t, b.String(), "declare function get_user(args: GetUserInput): GetUserOutput;")
	assert.Contains(t, b.String(), `{"team":{"core":["Ada","Grace"],"infra":["Linus"]},"missing":"no user 9"} (4 host calls)`)
}
