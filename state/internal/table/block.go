package table

import (
	"bytes"
	"encoding/binary"
)

// blockDecoder decodes the entries of a block one at a time, checking
// each: it stays within the block, the first key is the index's, keys
// strictly increase and stay below the next block's first key, and the
// block holds the index's entry count. It also compares each key with a
// target key, until one is at least the target.
//
// Both comparisons are incremental: a key is the previous key's first
// shared bytes and then the rest, and the writer shares the longest common
// prefix, so knowing how many bytes the previous key shares with a key
// above it (limit or target) is enough to compare the next key with it
// from its rest alone.
type blockDecoder struct {
	data     []byte // the block's entries
	pos      int
	first    []byte // the index's first key
	limit    []byte // the next block's first key, nil for the last block
	limitLCP int    // length of the common prefix of key and limit
	target   []byte // the key compared with, or nil
	tgtLCP   int    // length of the common prefix of key and target
	cmp      int    // the current key compared with target, while below it
	n        int    // entries the index says the block holds
	i        int    // entries decoded
	key      []byte // current key, in a reused buffer
	value    []byte // current value, in data
	err      error
}

// reset starts d on a block's entries, to compare with target if not nil.
func (d *blockDecoder) reset(data, first, limit, target []byte, n int) {
	*d = blockDecoder{data: data, first: first, limit: limit, target: target, n: n, key: d.key[:0], cmp: -1}
}

// next decodes the next entry into d.key and d.value, and updates d.cmp
// while the keys are below d.target, and reports whether there was one; at
// the end of the block or at an error (in d.err) it returns false.
func (d *blockDecoder) next() bool {
	if d.err != nil {
		return false
	}
	if d.pos == len(d.data) {
		if d.i != d.n {
			d.err = corrupt("block holds %d entries, index says %d", d.i, d.n)
		}
		return false
	}
	if d.i == d.n {
		d.err = corrupt("block holds more than the %d entries its index says", d.n)
		return false
	}
	shared, unshared, valueLen, ok := d.header()
	rest := uint64(len(d.data) - d.pos)
	switch {
	case !ok || unshared > rest || valueLen > rest-unshared:
		d.err = corrupt("entry %d runs past the block", d.i)
	case shared > uint64(len(d.key)):
		d.err = corrupt("entry %d shares %d bytes with a key of %d", d.i, shared, len(d.key))
	case unshared == 0 || (shared < uint64(len(d.key)) && d.data[d.pos] <= d.key[shared]):
		d.err = corrupt("entry %d: key not above the previous key", d.i)
	case d.i > 0 && d.limit != nil && int(shared) <= d.limitLCP && // else below limit
		compareNext(d.limit, &d.limitLCP, int(shared), d.data[d.pos:d.pos+int(unshared)]) >= 0:
		d.err = corrupt("entry %d: key not below the next block's first key", d.i)
	}
	if d.err != nil {
		return false
	}
	end := d.pos + int(unshared)
	if d.i > 0 && d.cmp < 0 && d.target != nil && int(shared) <= d.tgtLCP { // else still below target
		d.cmp = compareNext(d.target, &d.tgtLCP, int(shared), d.data[d.pos:end])
	}
	d.key = append(d.key[:shared], d.data[d.pos:end]...)
	d.pos = end + int(valueLen)
	d.value = d.data[end:d.pos]
	if d.i == 0 {
		if !bytes.Equal(d.key, d.first) {
			d.err = corrupt("first key not the index's")
			return false
		}
		d.limitLCP = commonPrefix(d.key, d.limit) // the index has first below limit
		d.cmp, d.tgtLCP = bytes.Compare(d.key, d.target), commonPrefix(d.key, d.target)
	}
	d.i++
	return true
}

// compareNext compares with t the key made of the current key's first
// shared bytes and then rest, given that the current key is below t and
// shares *lcp bytes with it, and updates *lcp to the new key's. The new key
// is above the current key and shares the longest prefix it can with it.
func compareNext(t []byte, lcp *int, shared int, rest []byte) int {
	switch {
	case shared > *lcp:
		return -1 // the new key has the current key's byte at *lcp, below t's
	case shared < *lcp:
		return 1 // the new key's byte at shared is above the current key's, t's
	}
	tail := t[shared:]
	m := commonPrefix(rest, tail)
	*lcp = shared + m
	switch {
	case m == len(rest) && m == len(tail):
		return 0
	case m == len(rest):
		return -1 // the new key is a prefix of t
	case m == len(tail):
		return 1 // t is a prefix of the new key
	case rest[m] < tail[m]:
		return -1
	}
	return 1
}

// header decodes the three uvarints starting an entry at d.pos.
func (d *blockDecoder) header() (shared, unshared, valueLen uint64, ok bool) {
	if p := d.data[d.pos:]; len(p) >= 3 && (p[0]|p[1]|p[2]) < 0x80 { // the usual case
		d.pos += 3
		return uint64(p[0]), uint64(p[1]), uint64(p[2]), true
	}
	shared, ok1 := d.uvarint()
	unshared, ok2 := d.uvarint()
	valueLen, ok3 := d.uvarint()
	return shared, unshared, valueLen, ok1 && ok2 && ok3
}

// uvarint decodes a uvarint at d.pos.
func (d *blockDecoder) uvarint() (uint64, bool) {
	if d.pos < len(d.data) && d.data[d.pos] < 0x80 {
		d.pos++
		return uint64(d.data[d.pos-1]), true
	}
	v, n := binary.Uvarint(d.data[d.pos:])
	if n <= 0 {
		return 0, false
	}
	d.pos += n
	return v, true
}
