package table

import (
	"bytes"
	"testing"
)

// FuzzOpen opens arbitrary bytes and, when they open, reads every table.
// With fix set, the checksums are recomputed first, so that damaged
// indexes and blocks reach the decoding checks.
func FuzzOpen(f *testing.F) {
	for _, blockSize := range []int{1, 64, 4096} {
		data := write(f, blockSize, small()...)
		f.Add(data, false)
		f.Add(data, true)
	}
	f.Add(write(f, 0), false)
	f.Add(write(f, 0, spec{"t", numbered("k", 3, 1)}), true)
	f.Add([]byte{}, false)
	f.Add(bytes.Repeat([]byte{0xff}, footerSize), true)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = fixChecksums(bytes.Clone(data))
		}
		exercise(t, data)
	})
}
