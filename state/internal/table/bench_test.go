package table

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

// benchFile is a file of one table of a million entries shaped like a
// store's run records, built once.
var benchFile = sync.OnceValues(func() ([]byte, [][]byte) {
	keys := make([][]byte, 0, 1_000_000)
	for i := range cap(keys) {
		iid := 100_000 + i/16
		keys = append(keys, fmt.Appendf(nil, "mailboxes/forgejo/acme/p%d/issue/%02d/%06d/runs/run-%06d-%d.json",
			i%4, iid/100%100, iid, iid, i/4%4))
	}
	slices.SortFunc(keys, bytes.Compare)
	var buf bytes.Buffer
	w := NewWriter(&buf, 4096)
	if err := w.Begin("records"); err != nil {
		panic(err)
	}
	for i, k := range keys {
		if err := w.Add(k, fmt.Appendf(nil, `{"state":"done","attempt":%012d}`, i)); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes(), keys
})

// indexBytes approximates the memory an open File holds.
func (f *File) indexBytes() int {
	n := int(unsafe.Sizeof(*f))
	for _, t := range f.tables {
		n += int(unsafe.Sizeof(*t)) + len(t.name) + cap(t.keys) + cap(t.blocks)*int(unsafe.Sizeof(blockRef{}))
	}
	return n
}

// benchReaders returns the file through a bytes.Reader and an *os.File.
func benchReaders(b *testing.B, data []byte) map[string]io.ReaderAt {
	path := filepath.Join(b.TempDir(), "table")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	osf, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { osf.Close() })
	return map[string]io.ReaderAt{"memory": bytes.NewReader(data), "osfile": osf}
}

func BenchmarkGet(b *testing.B) {
	data, keys := benchFile()
	probes := make([][]byte, 1<<16)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range probes {
		probes[i] = keys[rng.IntN(len(keys))]
	}
	for _, name := range []string{"memory", "osfile"} {
		b.Run(name, func(b *testing.B) {
			f, err := Open(benchReaders(b, data)[name], int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			tb := f.Table("records")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, ok, err := tb.Get(probes[i%len(probes)]); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			b.ReportMetric(float64(f.indexBytes()), "index-bytes")
			b.ReportMetric(float64(len(data)), "file-bytes")
			b.ReportMetric(float64(len(tb.blocks)), "blocks")
		})
	}
}

func BenchmarkAscend(b *testing.B) {
	data, _ := benchFile()
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	tb := f.Table("records")
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range tb.Ascend(nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != tb.Len() {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tb.Len()), "ns/entry")
}

func BenchmarkOpen(b *testing.B) {
	data, _ := benchFile()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
