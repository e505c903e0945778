package jspos

import (
	"os"
	"testing"
)

// BenchmarkInstrument parses and instruments the 50-line golden script,
// the work a new source costs before it compiles.
func BenchmarkInstrument(b *testing.B) {
	src, err := os.ReadFile("../../testdata/golden/realistic.js")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if m := Instrument(string(src), Body); m.Markers() == 0 {
			b.Fatal("no markers")
		}
	}
}
