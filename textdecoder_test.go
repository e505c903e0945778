package codemode

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// whatwgIndex reads the Encoding Standard's index-<name>.txt from dir:
// pointer to code point.
func whatwgIndex(t *testing.T, dir, name string) map[int]rune {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "index-"+name+".txt"))
	require.NoError(t, err)
	defer f.Close()
	index := map[int]rune{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Split(line, "\t")
		require.GreaterOrEqual(t, len(fields), 2, "index-%s.txt: %q", name, line)
		p, err := strconv.Atoi(strings.TrimSpace(fields[0]))
		require.NoError(t, err)
		cp, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(fields[1]), "0x"), 16, 32)
		require.NoError(t, err)
		index[p] = rune(cp)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, index, "index-%s.txt", name)
	return index
}

// TestTextIndexes: every index the legacy decoders read (x/text's tables
// with the standard's values where they differ) is the Encoding
// Standard's, pointer by pointer, against its index files (whatwg/encoding
// at a985b62: CODEMODE_WHATWG_ENCODING names the directory, by default
// ../shared/conformance/encoding).
func TestTextIndexes(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("CODEMODE_WHATWG_ENCODING")
	if dir == "" {
		dir = "../shared/conformance/encoding"
	}
	if _, err := os.Stat(filepath.Join(dir, "index-gb18030.txt")); err != nil {
		t.Skipf("the Encoding Standard's index files are not at %s (CODEMODE_WHATWG_ENCODING): %v", dir, err)
	}
	for _, te := range textEncodings() {
		if te.kind != kindSingleByte {
			continue
		}
		t.Run(te.name, func(t *testing.T) {
			t.Parallel()
			file := te.name
			if file == "iso-8859-8-i" {
				file = "iso-8859-8" // the standard's index single-byte for both
			}
			want := whatwgIndex(t, dir, file)
			for b := 0x80; b <= 0xff; b++ {
				cp, ok := want[b-0x80]
				if !ok {
					cp = -1
				}
				assert.Equal(t, cp, te.single[b-0x80], "%s byte %#x", te.name, b)
			}
		})
	}
	// A two-byte index: every pointer the decoder reaches, null (0) where
	// the standard's index has none.
	tables := []struct {
		name string
		n    int
		get  func(p int) rune
	}{
		{"gb18030", 23940, func(p int) rune { return rune(gb18030Index()[p]) }},
		{"big5", 19782, func(p int) rune { return big5Index()[p] }},
		{"jis0208", 11280, func(p int) rune { return rune(jis0208Index()[p]) }},
		{"jis0212", 8836, func(p int) rune { return rune(jis0212Index()[p]) }},
		{"euc-kr", 23940, func(p int) rune { return rune(eucKRIndex()[p]) }},
	}
	for _, tt := range tables {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := whatwgIndex(t, dir, tt.name)
			for p := range tt.n {
				assert.Equal(t, want[p], tt.get(p), "index %s pointer %d", tt.name, p)
			}
			for p := range want {
				assert.Less(t, p, tt.n, "index %s has pointer %d, past the decoder's table", tt.name, p)
			}
		})
	}
	t.Run("gb18030 ranges", func(t *testing.T) {
		t.Parallel()
		ranges := whatwgIndex(t, dir, "gb18030-ranges")
		pointers := make([]int, 0, len(ranges))
		for p := range ranges {
			pointers = append(pointers, p)
		}
		spec := func(p int) rune { // the standard's index gb18030 ranges code point
			if (p > 39419 && p < 189000) || p > 1237575 {
				return -1
			}
			if p == 7457 {
				return 0xe7c7
			}
			offset := -1
			for _, q := range pointers {
				if q <= p && q > offset {
					offset = q
				}
			}
			return ranges[offset] + rune(p-offset)
		}
		for p := 0; p <= 1237600; p++ {
			if p > 39500 && p < 188900 {
				p = 188900
			}
			if p > 189100 && p < 1237500 && p%997 != 0 {
				continue
			}
			require.Equal(t, spec(p), gb18030RangesCodePoint(p), "pointer %d", p)
		}
	})
}

// textCorpus is random input for encoding kind: bytes drawn mostly from
// those its decoder treats specially (leads, trails, escapes, ASCII that
// an error restores), so that errors, restored bytes and states at a
// chunk's end are common.
func textCorpus(r *rand.Rand, kind textKind, n int) []byte {
	special := map[textKind][]byte{
		kindGB18030:   {0x80, 0x81, 0x84, 0x90, 0xe3, 0xfe, 0xff, 0x30, 0x35, 0x39, 0x40, 0x7f, 0xa1, 0x41},
		kindBig5:      {0x81, 0x87, 0x88, 0x62, 0xa3, 0xa4, 0xfe, 0xff, 0x40, 0x7e, 0x7f, 0xa1, 0x41},
		kindEUCJP:     {0x8e, 0x8f, 0xa1, 0xa4, 0xb0, 0xdf, 0xfe, 0xff, 0x41, 0x80},
		kindISO2022JP: {0x1b, 0x24, 0x28, 0x40, 0x42, 0x4a, 0x49, 0x21, 0x30, 0x5c, 0x7e, 0x0e, 0x0f, 0x80},
		kindShiftJIS:  {0x80, 0x81, 0x82, 0x9f, 0xa0, 0xa1, 0xe0, 0xf0, 0xfa, 0xfc, 0xfd, 0x40, 0x7f, 0xa0, 0x3f},
		kindEUCKR:     {0x81, 0xa1, 0xb0, 0xc9, 0xfe, 0xff, 0x41, 0x5a, 0x80},
	}[kind]
	b := make([]byte, n)
	for i := range b {
		if len(special) > 0 && r.IntN(4) > 0 {
			b[i] = special[r.IntN(len(special))]
		} else {
			b[i] = byte(r.IntN(256))
		}
	}
	return b
}

// decodeAll decodes in with encoding id in chunks of the given sizes (the
// last one takes the rest), as a stream, from a new decoder.
func decodeAll(t *testing.T, id int, in []byte, fatal bool, sizes ...int) (string, bool) {
	t.Helper()
	var out strings.Builder
	var state uint32
	for {
		k := len(in)
		if len(sizes) > 0 {
			k = min(sizes[0], len(in))
			sizes = sizes[1:]
		}
		flush := k == len(in)
		buf := make([]byte, textDecodeBound(k))
		n, next, ok, err := textDecode(id, state, in[:k], flush, fatal, buf)
		require.NoError(t, err)
		require.True(t, utf8.Valid(buf[:n]), "the decoded text is UTF-8")
		out.Write(buf[:n])
		if !ok {
			return out.String(), false
		}
		state, in = next, in[k:]
		if flush {
			require.Zero(t, next, "a flush leaves a new decoder")
			return out.String(), true
		}
	}
}

// TestTextDecodeStreams: a decode's output is the same whole, split at any
// point and byte by byte (the state between calls is all a stream keeps);
// its output stays within textDecodeBound; fatal stops where the
// replacement decoder would first write U+FFFD for an error, and decodes
// the same when there is none.
func TestTextDecodeStreams(t *testing.T) {
	t.Parallel()
	for id, te := range textEncodings() {
		if te.kind == kindUTF || te.kind == kindReplacement {
			continue
		}
		t.Run(te.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(id), 47))
			for range 200 {
				in := textCorpus(r, te.kind, r.IntN(40))
				whole, ok := decodeAll(t, id, in, false)
				require.True(t, ok)
				for cut := 0; cut <= len(in); cut++ {
					got, _ := decodeAll(t, id, in, false, cut)
					require.Equal(t, whole, got, "% x split at %d", in, cut)
				}
				ones := make([]int, len(in))
				for i := range ones {
					ones[i] = 1
				}
				got, _ := decodeAll(t, id, in, false, ones...)
				require.Equal(t, whole, got, "% x byte by byte", in)
				if fatal, ok := decodeAll(t, id, in, true); ok {
					require.Equal(t, whole, fatal, "% x: fatal decoded it all", in)
				} else {
					require.True(t, strings.HasPrefix(whole, fatal), "% x: fatal's text is the start of the replacement decoder's", in)
				}
			}
		})
	}
}

// TestTextDecodeRefuses: what the sandbox could never hand Go (an unknown
// id, UTF-8's, a short output) is an error, not a panic or a write past
// the buffer.
func TestTextDecodeRefuses(t *testing.T) {
	t.Parallel()
	utf8ID, _ := textLabel("utf-8")
	sjis, name := textLabel("sjis")
	require.Equal(t, "shift_jis", name)
	for _, tt := range []struct {
		name string
		id   int
		out  int
	}{
		{"unknown id", len(textEncodings()), 64},
		{"negative id", -1, 64},
		{"UTF-8", utf8ID, 64},
		{"short output", sjis, textDecodeBound(4) - 1},
	} {
		_, _, _, err := textDecode(tt.id, 0, []byte{0x82, 0xa0, 0x41, 0x42}, true, false, make([]byte, tt.out))
		assert.Error(t, err, tt.name)
	}
	for _, label := range []string{"", " sjis", "SJIS", "sjis\x00", "\u212aoi8-r", strings.Repeat("a", 65), "utf-32"} {
		id, _ := textLabel(label)
		assert.Equal(t, -1, id, "textLabel(%q)", label)
	}
}

// FuzzTextDecode: no input, state or split makes a decoder fail, write
// past its bound, or decode a split stream differently from a whole one.
func FuzzTextDecode(f *testing.F) {
	f.Add(uint8(0), uint32(0), []byte{0x81, 0x30, 0x81, 0x30}, uint8(2))
	f.Add(uint8(1), uint32(0x1b), []byte{0x1b, 0x24, 0x42, 0x30, 0x21}, uint8(3))
	f.Fuzz(func(t *testing.T, which uint8, state uint32, in []byte, cut uint8) {
		var legacy []int
		for id, te := range textEncodings() {
			if te.kind != kindUTF && te.kind != kindReplacement {
				legacy = append(legacy, id)
			}
		}
		id := legacy[int(which)%len(legacy)]
		buf := make([]byte, textDecodeBound(len(in)))
		n, _, _, err := textDecode(id, state, in, true, false, buf) // any state: the decoder reads it within range
		require.NoError(t, err)
		require.True(t, utf8.Valid(buf[:n]))
		whole, _ := decodeAll(t, id, in, false)
		split, _ := decodeAll(t, id, in, false, int(cut))
		require.Equal(t, whole, split)
	})
}
