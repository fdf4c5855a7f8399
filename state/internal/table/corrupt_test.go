package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// small returns the tables of a file of about a kilobyte, in several blocks.
func small() []spec {
	return []spec{
		{"a", numbered("mailboxes/a/", 20, 3)},
		{"empty", nil},
		{"b", []Entry{
			{Key: []byte("x"), Value: bytes.Repeat([]byte("v"), 100)},
			{Key: []byte("xy"), Value: nil},
			{Key: []byte("y"), Value: []byte("last")},
		}},
	}
}

func wantCorrupt(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
	}
}

// checkDamaged checks a damaged copy of the file of tables: Open fails,
// or Verify and Checksum fail and every read returns the right data or an error
// wrapping ErrCorrupt.
func checkDamaged(t testing.TB, data []byte, tables []spec) {
	t.Helper()
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		wantCorrupt(t, "Open", err)
		return
	}
	if err := f.Verify(); err == nil {
		t.Fatal("Verify found no damage")
	} else {
		wantCorrupt(t, "Verify", err)
	}
	if err := f.Checksum(); err == nil {
		t.Fatal("Checksum found no damage")
	} else {
		wantCorrupt(t, "Checksum", err)
	}
	if len(f.Names()) != len(tables) {
		t.Fatalf("Names() = %q", f.Names())
	}
	for _, s := range tables {
		tb := f.Table(s.name)
		if tb == nil || tb.Len() != len(s.entries) {
			t.Fatalf("table %q missing or of the wrong length", s.name)
		}
		for _, e := range s.entries {
			v, ok, err := tb.Get(e.Key)
			wantCorrupt(t, "Get", err)
			if err == nil && (!ok || !bytes.Equal(v, e.Value)) {
				t.Fatalf("Get(%q) = %q, %v", e.Key, v, ok)
			}
			if _, ok, err := tb.Get(append(bytes.Clone(e.Key), 0)); ok {
				t.Fatalf("Get of an absent key found it")
			} else {
				wantCorrupt(t, "Get", err)
			}
		}
		got, err := collect(tb.Ascend(nil))
		wantCorrupt(t, "Ascend", err)
		if len(got) > len(s.entries) || !equalEntries(got, s.entries[:len(got)]) ||
			(err == nil && len(got) != len(s.entries)) {
			t.Fatalf("Ascend(nil) = %d entries, %v; not those written", len(got), err)
		}
	}
}

func TestCorruptEveryByte(t *testing.T) {
	tables := small()
	data := write(t, 64, tables...)
	t.Logf("%d bytes", len(data))
	for i := range data {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			damaged := bytes.Clone(data)
			damaged[i] ^= x
			checkDamaged(t, damaged, tables)
		}
	}
}

func TestCorruptSample(t *testing.T) {
	tables := sample()
	data := write(t, 512, tables...)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 30
	}
	for range n {
		damaged := bytes.Clone(data)
		damaged[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		checkDamaged(t, damaged, tables)
	}
	// The footer and the region before it, every byte.
	for i := len(data) - 200; i < len(data); i++ {
		damaged := bytes.Clone(data)
		damaged[i] ^= 0x55
		checkDamaged(t, damaged, tables)
	}
}

func TestTruncated(t *testing.T) {
	data := write(t, 64, small()...)
	for n := range len(data) {
		_, err := Open(bytes.NewReader(data[:n]), int64(n))
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open of the first %d of %d bytes: %v, want ErrCorrupt", n, len(data), err)
		}
		// A size beyond what the reader holds.
		_, err = Open(bytes.NewReader(data[:n]), int64(len(data)))
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open of %d bytes as %d: %v, want ErrCorrupt", n, len(data), err)
		}
	}
	for _, extra := range [][]byte{{0}, []byte("trailing garbage"), make([]byte, 100)} {
		long := append(bytes.Clone(data), extra...)
		if _, err := Open(bytes.NewReader(long), int64(len(long))); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open with %d bytes appended: %v, want ErrCorrupt", len(extra), err)
		}
		long = append(bytes.Clone(extra), data...)
		if _, err := Open(bytes.NewReader(long), int64(len(long))); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open with %d bytes prepended: %v, want ErrCorrupt", len(extra), err)
		}
	}
}

// TestCorruptStructure damages every byte of a file and then recomputes
// its checksums, so the damage reaches the decoding checks.
func TestCorruptStructure(t *testing.T) {
	data := write(t, 64, small()...)
	for i := range data {
		for _, x := range []byte{0x01, 0x40, 0xff} {
			damaged := bytes.Clone(data)
			damaged[i] ^= x
			exercise(t, fixChecksums(damaged))
		}
	}
}

// exercise reads everything in a file, which may be damaged in any way:
// errors must wrap ErrCorrupt, and what reads return must be consistent.
func exercise(t testing.TB, data []byte) {
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		wantCorrupt(t, "Open", err)
		return
	}
	wantCorrupt(t, "Verify", f.Verify())
	for _, name := range f.Names() {
		tb := f.Table(name)
		var entries []Entry
		var err error
		for e, eErr := range tb.Ascend(nil) {
			if err = eErr; err != nil {
				wantCorrupt(t, "Ascend", err)
				break
			}
			if len(entries) > 0 && bytes.Compare(e.Key, entries[len(entries)-1].Key) <= 0 {
				t.Fatalf("table %q: Ascend: %q after %q", name, e.Key, entries[len(entries)-1].Key)
			}
			entries = append(entries, Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
		}
		if err == nil && len(entries) != tb.Len() {
			t.Fatalf("table %q: Ascend yielded %d entries, Len() = %d", name, len(entries), tb.Len())
		}
		complete := err == nil // else Get fails on the entries of the block Ascend failed in
		for _, e := range entries {
			v, ok, err := tb.Get(e.Key)
			if !complete && errors.Is(err, ErrCorrupt) {
				continue
			}
			if err != nil || !ok || !bytes.Equal(v, e.Value) {
				t.Fatalf("table %q: Get(%q) = %q, %v, %v; Ascend yielded %q", name, e.Key, v, ok, err, e.Value)
			}
			_, _, err = tb.Get(append(bytes.Clone(e.Key), 0))
			wantCorrupt(t, "Get", err)
		}
		for _, p := range [][]byte{nil, {0}, {'m'}, {0xff}} {
			_, _, err := tb.Get(p)
			wantCorrupt(t, "Get", err)
			_, err = collect(tb.Ascend(p))
			wantCorrupt(t, "Ascend", err)
			_, err = collect(tb.Prefix(p))
			wantCorrupt(t, "Prefix", err)
		}
	}
}

// fixChecksums sets the checksums of data, as far as its footer and
// indexes let it find them, to those of its bytes.
func fixChecksums(data []byte) []byte {
	if len(data) < footerSize {
		return data
	}
	fixFooter(data)
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return data
	}
	for _, t := range f.tables {
		for _, b := range t.blocks {
			p := data[b.off : b.off+int64(b.size)]
			binary.LittleEndian.PutUint32(p[len(p)-4:], crc32.Checksum(p[:len(p)-4], castagnoli))
		}
	}
	fixFooter(data)
	return data
}

func fixFooter(data []byte) {
	ft := data[len(data)-footerSize:]
	if off := binary.LittleEndian.Uint64(ft[16:]); off <= uint64(len(data)-8) {
		binary.LittleEndian.PutUint32(ft[40:], crc32.Checksum(data[off:len(data)-8], castagnoli))
	}
	binary.LittleEndian.PutUint32(ft[44:], crc32.Checksum(data[:len(data)-4], castagnoli))
}

// failReader fails every read once fail is set.
type failReader struct {
	r    *bytes.Reader
	fail bool
}

var errRead = errors.New("i/o error")

func (r *failReader) ReadAt(p []byte, off int64) (int, error) {
	if r.fail {
		return 0, errRead
	}
	return r.r.ReadAt(p, off)
}

func TestReadErrors(t *testing.T) {
	data := write(t, 64, small()...)
	r := &failReader{r: bytes.NewReader(data), fail: true}
	if _, err := Open(r, int64(len(data))); !errors.Is(err, errRead) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want %v", err, errRead)
	}
	r.fail = false
	f, err := Open(r, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	r.fail = true
	tb := f.Table("a")
	if _, _, err := tb.Get([]byte("mailboxes/a/000003")); !errors.Is(err, errRead) || errors.Is(err, ErrCorrupt) {
		t.Errorf("Get: %v, want %v", err, errRead)
	}
	if _, err := collect(tb.Ascend(nil)); !errors.Is(err, errRead) || errors.Is(err, ErrCorrupt) {
		t.Errorf("Ascend: %v, want %v", err, errRead)
	}
	if err := f.Verify(); !errors.Is(err, errRead) || errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify: %v, want %v", err, errRead)
	}
}

// rawEntry is an entry as a block encodes it.
type rawEntry struct {
	shared   uint64
	unshared string
	value    string
}

// rawBlock is a block with the first key and entry count its index lists.
type rawBlock struct {
	first   string
	n       uint64
	entries []rawEntry
	raw     []byte // the entries' bytes, instead of entries
}

// craft returns a file holding one table "t" of blocks, encoded as given
// with correct checksums, whatever they hold.
func craft(n uint64, blocks ...rawBlock) []byte {
	var data, index []byte
	index = binary.AppendUvarint(index, uint64(len(blocks)))
	for _, b := range blocks {
		off := len(data)
		data = append(data, b.raw...)
		for _, e := range b.entries {
			data = binary.AppendUvarint(data, e.shared)
			data = binary.AppendUvarint(data, uint64(len(e.unshared)))
			data = binary.AppendUvarint(data, uint64(len(e.value)))
			data = append(data, e.unshared...)
			data = append(data, e.value...)
		}
		data = binary.LittleEndian.AppendUint32(data, crc32.Checksum(data[off:], castagnoli))
		index = binary.AppendUvarint(index, uint64(len(b.first)))
		index = append(index, b.first...)
		index = binary.AppendUvarint(index, uint64(off))
		index = binary.AppendUvarint(index, uint64(len(data)-off))
		index = binary.AppendUvarint(index, b.n)
	}
	indexOff := uint64(len(data))
	data = append(data, index...)
	dir := []byte{1, 1, 't'}
	dir = binary.AppendUvarint(dir, n)
	dir = binary.AppendUvarint(dir, indexOff)
	dir = binary.AppendUvarint(dir, uint64(len(index)))
	dirOff := uint64(len(data))
	data = append(data, dir...)
	data = append(data, magic[:]...)
	data = binary.LittleEndian.AppendUint32(data, formatVersion)
	data = binary.LittleEndian.AppendUint32(data, 0)
	data = binary.LittleEndian.AppendUint64(data, indexOff)
	data = binary.LittleEndian.AppendUint64(data, dirOff)
	data = binary.LittleEndian.AppendUint64(data, uint64(len(dir)))
	data = append(data, make([]byte, 8)...)
	fixFooter(data)
	return data
}

func blk(first string, n uint64, entries ...rawEntry) rawBlock {
	return rawBlock{first: first, n: n, entries: entries}
}

func ent(shared uint64, unshared, value string) rawEntry {
	return rawEntry{shared: shared, unshared: unshared, value: value}
}

// TestCraftedBlocks checks the block decoding checks on files whose
// checksums are right.
func TestCraftedBlocks(t *testing.T) {
	ab := blk("a", 2, ent(0, "a", "1"), ent(0, "b", "2"))
	tests := []struct {
		name   string
		n      uint64
		blocks []rawBlock
		keys   []string // what Ascend yields before its error
	}{
		{"valid", 4, []rawBlock{ab, blk("c", 2, ent(0, "c", "3"), ent(1, "d", "4"))}, []string{"a", "b", "c", "cd"}},
		{"fewer entries than the index says", 3, []rawBlock{blk("a", 3, ent(0, "a", "long value"), ent(0, "b", ""))}, []string{"a", "b"}},
		{"more entries than the index says", 1, []rawBlock{blk("a", 1, ab.entries...)}, []string{"a"}},
		{"key reaching the next block's first", 3, []rawBlock{blk("a", 2, ent(0, "a", ""), ent(0, "c", "")), blk("c", 1, ent(0, "c", ""))}, []string{"a"}},
		{"key beyond the next block's first", 3, []rawBlock{blk("a", 2, ent(0, "a", ""), ent(0, "d", "")), blk("c", 1, ent(0, "c", ""))}, []string{"a"}},
		{"key above a prefix of the next block's first", 3, []rawBlock{blk("a", 2, ent(0, "a", ""), ent(1, "b", "")), blk("ab", 1, ent(0, "ab", ""))}, []string{"a"}},
		{"first key not the index's", 2, []rawBlock{blk("a", 2, ent(0, "b", ""), ent(0, "c", ""))}, nil},
		{"key shares less than it could", 2, []rawBlock{blk("ab", 2, ent(0, "ab", ""), ent(1, "bc", ""))}, []string{"ab"}},
		{"key below the previous", 2, []rawBlock{blk("b", 2, ent(0, "b", ""), ent(0, "a", ""))}, []string{"b"}},
		{"key sharing more than the previous holds", 2, []rawBlock{blk("b", 2, ent(0, "b", ""), ent(2, "a", ""))}, []string{"b"}},
		{"key equal to the previous", 2, []rawBlock{blk("b", 2, ent(0, "b", ""), ent(1, "", "value"))}, []string{"b"}},
		{"first entry sharing", 1, []rawBlock{blk("b", 1, ent(1, "b", ""))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := craft(tt.n, tt.blocks...)
			f := mustOpen(t, data)
			var keys []string
			var err error
			for e, eErr := range f.Table("t").Ascend(nil) {
				if err = eErr; err != nil {
					break
				}
				keys = append(keys, string(e.Key))
			}
			if !slices.Equal(keys, tt.keys) {
				t.Errorf("Ascend yielded %q, want %q", keys, tt.keys)
			}
			verr := f.Verify()
			if tt.name == "valid" {
				if err != nil || verr != nil {
					t.Fatalf("Ascend: %v; Verify: %v", err, verr)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) || !errors.Is(verr, ErrCorrupt) {
				t.Fatalf("Ascend: %v; Verify: %v; want ErrCorrupt", err, verr)
			}
			t.Log(err)
		})
	}
}

// TestCraftedRunsPastBlock checks entries whose lengths run past their block.
func TestCraftedRunsPastBlock(t *testing.T) {
	for _, raw := range [][]byte{
		{0, 1, 5, 'a', 'v'},          // value runs past
		{0, 9, 0, 'a', 'v'},          // key runs past
		{0, 1, 0x80, 'a', 'v'},       // varint runs past
		{0, 1, 0xff, 0xff, 'a', 'v'}, // varint runs past
		{0, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f, 'a'}, // varint overflows
	} {
		f := mustOpen(t, craft(1, rawBlock{first: "a", n: 1, raw: raw}))
		if _, err := collect(f.Table("t").Ascend(nil)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("block %x: Ascend: %v, want ErrCorrupt", raw, err)
		}
		if _, _, err := f.Table("t").Get([]byte("a")); !errors.Is(err, ErrCorrupt) {
			t.Errorf("block %x: Get: %v, want ErrCorrupt", raw, err)
		}
	}
}

func TestDuplicateNameInDirectory(t *testing.T) {
	data := write(t, 0, spec{"a", numbered("k", 2, 1)}, spec{"b", nil})
	dirOff := binary.LittleEndian.Uint64(data[len(data)-footerSize+24:])
	dir := data[dirOff : len(data)-footerSize]
	i := bytes.LastIndex(dir, []byte{1, 'b'})
	dir[i+1] = 'a'
	fixFooter(data)
	_, err := Open(bytes.NewReader(data), int64(len(data)))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("Open: %v, want a table listed twice", err)
	}
}
