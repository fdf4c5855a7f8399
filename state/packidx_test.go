package state

import (
	"crypto/sha1"
	"encoding/binary"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestPackIndexFind: an index the store encodes finds every object it
// lists, at its offset (64-bit ones included), and no other.
func TestPackIndexFind(t *testing.T) {
	var entries []idxEntry
	for i := range 5000 {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(i))
		e := idxEntry{hash: plumbing.Hash(sha1.Sum(b[:])), off: uint64(12 + i*100), crc: uint32(i)}
		if i%1000 == 7 {
			e.off = 1<<32 + uint64(i)
		}
		entries = append(entries, e)
	}
	want := map[plumbing.Hash]idxEntry{}
	for _, e := range entries {
		want[e.hash] = e
	}
	raw, err := encodeIdx(entries, plumbing.Hash{1})
	if err != nil {
		t.Fatal(err)
	}
	x, err := checkIdx(raw)
	if err != nil || x.count() != len(want) {
		t.Fatalf("checkIdx: %v, %d objects", err, x.count())
	}
	for h, e := range want {
		if off, ok := x.find(h); !ok || off != int64(e.off) {
			t.Fatalf("find(%s) = %d %v, want %d", h, off, ok, e.off)
		}
	}
	for i := range 2000 {
		h := plumbing.Hash(sha1.Sum([]byte{byte(i), byte(i >> 8), 'x'}))
		if _, ok := x.find(h); ok {
			t.Fatalf("find(%s) found an object not in the index", h)
		}
	}
	for i := range x.count() {
		if e := want[plumbing.Hash(x.name(i))]; x.crc(i) != e.crc {
			t.Fatalf("crc of %s = %d, want %d", e.hash, x.crc(i), e.crc)
		}
	}
}
