package state

import "github.com/go-git/go-git/v5/plumbing"

// ckCopier reads the records of the checkpoint already there when Close
// writes the tip's, so that those whose path and blob are unchanged are
// taken over without decoding them: their path is re-encoded (the new
// checkpoint's previous path differs), their payload's bytes are copied,
// and only its string references are renumbered into the new
// checkpoint's strings. Every length and reference is checked as the
// decoder checks it; a record that fails is left out and read from its
// blob.
type ckCopier struct {
	d       *ckDecoder
	path    []byte // the current record's path
	hash    plumbing.Hash
	tag     byte
	pending bool     // the current record's payload is not read yet
	remap   []uint32 // an old string's number in the new strings, plus one; 0: not known yet
	enc     *ckEncoder
	mark    int // where the payload's bytes not copied yet start
}

func newCkCopier(d *ckDecoder) *ckCopier {
	return &ckCopier{d: d, remap: make([]uint32, len(d.strs))}
}

// next moves to the next record, reading its path, hash and tag; false at
// the end or on damage.
func (c *ckCopier) next() bool {
	d := c.d
	if c.pending {
		c.payload(nil)
	}
	if d.err != nil || d.off == len(d.data) {
		return false
	}
	shared := d.uvarint()
	suffix := d.raw()
	if shared > uint64(len(c.path)) || len(suffix) == 0 {
		d.fail("bad path")
		return false
	}
	if d.n > 0 && string(suffix) <= string(c.path[shared:]) {
		d.fail("paths out of order")
		return false
	}
	c.path = append(c.path[:shared], suffix...)
	copy(c.hash[:], d.take(20))
	c.tag = d.byte()
	d.n++
	c.pending = d.err == nil
	return c.pending
}

// copyTo appends the current record, at path p, to enc; false (enc as it
// was) when the record is damaged, which ends the copier.
func (c *ckCopier) copyTo(enc *ckEncoder, p string) bool {
	if c.tag >= ckTags || (c.tag != ckBlob && kindOf(p) != ckKinds[c.tag]) {
		return false
	}
	recs, prev, sizes := len(enc.recs), enc.prev, enc.sizes
	enc.head(p, c.hash, c.tag)
	c.payload(enc)
	if c.d.err != nil {
		enc.recs, enc.prev, enc.sizes = enc.recs[:recs], prev, sizes
		return false
	}
	return true
}

// payload reads the current record's payload, copying it to enc unless
// enc is nil.
func (c *ckCopier) payload(enc *ckEncoder) {
	d := c.d
	c.pending, c.enc, c.mark = false, enc, d.off
	switch c.tag {
	case ckBlob, ckGeneric:
	case ckMailbox:
		d.raw()
		d.varint()
		d.byte()
		n := d.uvarint()
		if n > uint64(len(d.data)-d.off)/5 {
			d.fail("route count")
			return
		}
		if enc != nil {
			enc.sizes.routes += int(n)
		}
		for range n {
			c.ref()
			c.ref()
			c.ref()
			c.ref()
			d.raw()
		}
	case ckRun:
		d.byte()
		d.raw()
		d.varint()
		d.varint()
		c.ref()
		c.ref()
		c.ref()
	case ckSession:
		flags := d.byte()
		d.raw()
		d.raw()
		c.ref()
		d.varint()
		d.varint()
		if flags&ckResumeOf != 0 {
			d.raw()
		}
		d.varint()
		d.varint()
		d.varint()
	default:
		d.fail("bad tag")
	}
	if enc != nil && d.err == nil {
		enc.recs = append(enc.recs, d.data[c.mark:d.off]...)
	}
}

// ref reads a string reference, writing it renumbered when copying.
func (c *ckCopier) ref() {
	d := c.d
	start := d.off
	i := d.uvarint()
	if d.err != nil {
		return
	}
	if i >= uint64(len(d.strs)) {
		d.fail("string reference out of range")
		return
	}
	if c.enc == nil {
		return
	}
	c.enc.recs = append(c.enc.recs, d.data[c.mark:start]...)
	if c.remap[i] == 0 {
		c.remap[i] = c.enc.index(d.strs[i]) + 1
	}
	c.enc.uvarint(uint64(c.remap[i] - 1))
	c.mark = d.off
}
