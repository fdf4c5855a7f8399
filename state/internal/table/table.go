package table

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"iter"
	"sync"
)

// Entry is a key and its value.
type Entry struct {
	Key, Value []byte
}

// Len returns the number of entries in the table.
func (t *Table) Len() int {
	return t.n
}

// Name returns the table's name.
func (t *Table) Name() string {
	return t.name
}

// Get returns the value of key: a copy the caller owns, and ok false when
// the table does not hold key. It reads the one block that could hold key
// and decodes it up to key, checking the entries it decodes (Ascend and
// Verify check every entry of the blocks they read).
func (t *Table) Get(key []byte) (value []byte, ok bool, err error) {
	i := t.search(key)
	if i < 0 {
		return nil, false, nil
	}
	s := scratchPool.Get().(*scratch)
	defer s.release()
	data, err := t.readBlock(i, &s.block)
	if err != nil {
		return nil, false, err
	}
	d := &s.dec
	t.decode(d, i, data, key)
	for d.next() {
		if d.cmp >= 0 {
			if d.cmp == 0 {
				value, ok = bytes.Clone(d.value), true
			}
			break
		}
	}
	if d.err != nil {
		return nil, false, t.blockErr(i, d.err)
	}
	return value, ok, nil
}

// Ascend returns the entries whose key is at least from (all of them when
// from is empty), in key order. It reads one block at a time and stops at
// the first error, which it yields once with an empty Entry.
//
// An Entry's Key and Value point into buffers the iteration reuses: they
// are valid only until the next iteration step, and must not be modified.
// Callers copy what they keep.
func (t *Table) Ascend(from []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		i := 0
		if len(from) > 0 {
			i = max(t.search(from), 0)
		}
		var buf []byte
		var d blockDecoder
		started := false // whether an entry at least from was reached
		for ; i < len(t.blocks); i++ {
			data, err := t.readBlock(i, &buf)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			var target []byte
			if len(from) > 0 && !started {
				target = from
			}
			t.decode(&d, i, data, target)
			for d.next() {
				if d.cmp < 0 && target != nil {
					continue
				}
				started = true
				k, v := d.key, d.value
				if !yield(Entry{Key: k[:len(k):len(k)], Value: v[:len(v):len(v)]}, nil) {
					return
				}
			}
			if d.err != nil {
				yield(Entry{}, t.blockErr(i, d.err))
				return
			}
		}
	}
}

// Prefix returns the entries whose key starts with p, in key order, as
// Ascend does (with the same rules for the Entry's slices).
func (t *Table) Prefix(p []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for e, err := range t.Ascend(p) {
			if err == nil && !bytes.HasPrefix(e.Key, p) {
				return
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// search returns the last block whose first key is at most key, or -1.
func (t *Table) search(key []byte) int {
	lo, hi := 0, len(t.blocks) // blocks before lo start at most at key, from hi above it
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(t.firstKey(m), key) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// firstKey returns the first key of block i.
func (t *Table) firstKey(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = t.blocks[i-1].keyEnd
	}
	return t.keys[start:t.blocks[i].keyEnd]
}

// readBlock reads block i into *buf (grown as needed), checks its checksum
// and returns its entries.
func (t *Table) readBlock(i int, buf *[]byte) ([]byte, error) {
	b := t.blocks[i]
	if cap(*buf) < int(b.size) {
		*buf = make([]byte, b.size)
	}
	p := (*buf)[:b.size]
	if err := readFull(t.f.r, p, b.off); err != nil {
		return nil, t.blockErr(i, err)
	}
	data, err := checkBlock(p)
	if err != nil {
		return nil, t.blockErr(i, err)
	}
	return data, nil
}

// checkBlock checks the checksum ending block b and returns its entries.
func checkBlock(b []byte) ([]byte, error) {
	data := b[:len(b)-4]
	want := binary.LittleEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(data, castagnoli); got != want {
		return nil, corrupt("checksum %#08x, want %#08x", got, want)
	}
	return data, nil
}

// decode starts d on data, the entries of block i, to compare them with
// target if not nil.
func (t *Table) decode(d *blockDecoder, i int, data, target []byte) {
	var limit []byte
	if i+1 < len(t.blocks) {
		limit = t.firstKey(i + 1)
	}
	d.reset(data, t.firstKey(i), limit, target, int(t.blocks[i].n))
}

// blockErr adds the table and block to err.
func (t *Table) blockErr(i int, err error) error {
	return fmt.Errorf("table %q: block %d at offset %d: %w", t.name, i, t.blocks[i].off, err)
}

// scratch is what a Get reuses from one call to the next.
type scratch struct {
	block []byte
	dec   blockDecoder
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// release returns s to the pool, dropping large buffers.
func (s *scratch) release() {
	if cap(s.block) > 64<<10 {
		s.block = nil
	}
	if cap(s.dec.key) > 64<<10 {
		s.dec.key = nil
	}
	s.dec.data, s.dec.first, s.dec.limit, s.dec.target, s.dec.value = nil, nil, nil, nil, nil
	scratchPool.Put(s)
}
