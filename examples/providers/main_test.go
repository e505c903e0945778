package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProviders runs the example: the declarations and the result.
func TestProviders(t *testing.T) {
	var b strings.Builder
	require.NoError(t, run(context.Background(), &b))
	assert.Contains(t, b.String(), "  price(args: ShopPriceInput): Promise<ShopPriceOutput>;")
	assert.Contains(t, b.String(), `{"total":1.25,"shout":"DONE"} (3 tool calls)`)
}
