package codemode

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDomainToASCII: the URL Standard's domain to ASCII for domains past
// ASCII, with the values the standard's examples and WPT's toascii.json
// give.
func TestDomainToASCII(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"bücher.de":   "xn--bcher-kva.de",
		"faß.de":      "xn--fa-hia.de", // nontransitional
		"ＥＸＡＭＰＬＥ．ｃｏｍ": "example.com",
		"1.ي":         "1.xn--mhb", // the Bidi rule holds right-to-left labels only
		"a†--":        "xn--a---kp0a",
		"-x.ß":        "-x.xn--zca", // CheckHyphens false
		"x..ß":        "x..xn--zca",
	} {
		got, err := domainToASCII(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"a\u200cb", "xn--tešla", "1ي"} {
		_, err := domainToASCII(in)
		assert.Error(t, err, in)
	}
}

// TestDomainToASCIIBound: a label past maxIDNALabel is refused at once,
// whatever its length (Punycode is quadratic and runs uninterruptibly).
func TestDomainToASCIIBound(t *testing.T) {
	t.Parallel()
	_, err := domainToASCII(strings.Repeat("é", maxIDNALabel))
	require.NoError(t, err)
	_, err = domainToASCII(strings.Repeat("é", maxIDNALabel) + "。" + strings.Repeat("ü", maxIDNALabel))
	require.NoError(t, err, "the bound is per label, full stops of every form separating them")
	for _, n := range []int{maxIDNALabel + 1, 1 << 20} {
		_, err = domainToASCII("a." + strings.Repeat("é", n))
		assert.ErrorIs(t, err, errIDNALabel)
	}
}
