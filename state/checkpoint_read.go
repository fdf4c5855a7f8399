package state

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
)

// ckDecoder reads a checkpoint's records in order, checking every bound:
// a damaged checkpoint makes it fail, never read out of range.
type ckDecoder struct {
	data []byte // from the strings on, without the checksum
	off  int
	err  error
	strs []string
	prev string
	n    int     // records read
	rts  []Route // the routes of the mailbox read last (reused)
	nrt  int     // routes read
	text *arena  // where paths and unique strings are made (nil: allocated)
	base error   // what its errors wrap (nil: errCheckpoint)
}

// openCheckpoint checks a checkpoint and returns its header and a decoder
// positioned at its first record.
func openCheckpoint(data []byte) (ckHeader, *ckDecoder, error) {
	h, err := parseCkHeader(data)
	if err != nil {
		return h, nil, err
	}
	d := &ckDecoder{data: data[ckHeaderSize : len(data)-4], text: &arena{}}
	d.strs = make([]string, 0, h.strings)
	for range h.strings {
		d.strs = append(d.strs, string(d.raw()))
	}
	return h, d, d.err
}

func (d *ckDecoder) fail(what string) {
	if d.err != nil {
		return
	}
	if d.base != nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", d.base, d.off, what)
		return
	}
	d.err = ckErrorf("record %d at byte %d: %s", d.n, d.off, what)
}

func (d *ckDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

// varint reads a signed varint: encoding/binary's zig-zag form of uvarint.
func (d *ckDecoder) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *ckDecoder) take(n uint64) []byte {
	if d.err != nil || n > uint64(len(d.data)-d.off) {
		d.fail("runs past the end")
		return nil
	}
	b := d.data[d.off : d.off+int(n)]
	d.off += int(n)
	return b
}

func (d *ckDecoder) raw() []byte { return d.take(d.uvarint()) }

func (d *ckDecoder) byte() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

// str returns a string made in the arena (allocated when it has none).
func (d *ckDecoder) str() string {
	b := d.raw()
	if len(b) == 0 {
		return ""
	}
	if d.text == nil {
		return string(b)
	}
	return d.text.concat("", unsafe.String(&b[0], len(b)))
}

func (d *ckDecoder) ref() string {
	i := d.uvarint()
	if i >= uint64(len(d.strs)) {
		d.fail("string reference out of range")
		return ""
	}
	return d.strs[i]
}

// next reads the next record into e; false at the end or on damage
// (d.err says which).
func (d *ckDecoder) next(e *ckEntry) bool {
	if d.err != nil || d.off == len(d.data) {
		return false
	}
	shared := d.uvarint()
	suffix := d.raw()
	if shared > uint64(len(d.prev)) || len(suffix) == 0 {
		d.fail("bad path")
		return false
	}
	*e = ckEntry{path: d.text.concat(d.prev[:shared], unsafe.String(&suffix[0], len(suffix)))}
	if d.n > 0 && e.path <= d.prev {
		d.fail("paths out of order")
		return false
	}
	d.prev = e.path
	copy(e.hash[:], d.take(20))
	e.tag = d.byte()
	if e.tag >= ckTags || (e.tag != ckBlob && kindOf(e.path) != ckKinds[e.tag]) {
		d.fail("bad tag")
		return false
	}
	d.payload(e)
	d.n++
	return d.err == nil
}

// payload reads the payload of e's tag (e.path and e.tag set).
func (d *ckDecoder) payload(e *ckEntry) {
	switch e.tag {
	case ckMailbox:
		e.title, e.t, e.quarantined = d.str(), d.varint(), d.byte() != 0
		n := d.uvarint()
		if n > uint64(len(d.data)-d.off)/5 {
			d.fail("route count")
			return
		}
		d.nrt += int(n)
		routes := d.rts[:0]
		for range n {
			rt := Route{Forge: d.ref(), Owner: d.ref(), Project: d.ref(), By: RouteKind(d.ref())}
			rt.Value = d.str()
			routes = append(routes, rt)
		}
		e.routes, d.rts = routes, routes
	case ckRun:
		e.idName = d.byte() != 0
		e.id, e.t, e.day = d.str(), d.varint(), int32(d.varint())
		e.class = runClass{RunStatus(d.ref()), d.ref(), d.ref()}
	case ckSession:
		d.session(e)
	}
}

func (d *ckDecoder) session(e *ckEntry) {
	flags := d.byte()
	e.id, e.runID, e.adapter = d.str(), d.str(), d.ref()
	e.sec, e.nsec = d.varint(), int32(d.varint())
	if flags&ckResumeOf != 0 {
		s := d.str()
		e.resumeOf = &s
	}
	e.tot = totals{d.varint(), d.varint(), d.varint()}
	e.native, e.failed, e.fallback, e.idName = flags&ckNative != 0, flags&ckFailed != 0, flags&ckFallback != 0, flags&ckIDName != 0
}

// end checks the decoder stopped at the end of the records, having read
// as many as the header said.
func (d *ckDecoder) end(h ckHeader) error {
	if d.err != nil {
		return d.err
	}
	if d.off != len(d.data) || d.n != h.sizes.files || d.nrt != h.sizes.routes {
		return ckErrorf("%d records read of %d, %d routes of %d, %d bytes left", d.n, h.sizes.files, d.nrt, h.sizes.routes, len(d.data)-d.off)
	}
	return nil
}

// ckSlabs allocate a checkpoint's values a few thousand at a time.
type ckSlabs struct {
	recs     []record
	runs     []runLite
	sessions []sessionLite
	boxes    []mailboxLite
}

func take[T any](s *[]T) *T {
	if len(*s) == 0 {
		*s = make([]T, 1024)
	}
	v := &(*s)[0]
	*s = (*s)[1:]
	return v
}

// ckItem is a record decoded from a checkpoint, to index: its run class
// and routes (batch.routes[lo:hi]) are installed by the indexing goroutine,
// which owns the snapshot's maps.
type ckItem struct {
	path   string
	rec    *record
	class  runClass
	lo, hi int
}

type ckBatch struct {
	items  []ckItem
	routes []Route
}

// ckBatchSize is how many records the decoding goroutine hands over at a
// time; ckBatches how many it may be ahead (while Open sizes the
// snapshot's maps, it decodes).
const (
	ckBatchSize = 1024
	ckBatches   = 64
)

func newCkBatch() *ckBatch {
	return &ckBatch{items: make([]ckItem, 0, ckBatchSize), routes: make([]Route, 0, ckBatchSize/2)}
}

// value gives rec the value of entry e, as a full load would: a compact
// value from the entry (a run's class and a mailbox's routes left to the
// indexing goroutine), or the blob read and decoded.
func (sl *ckSlabs) value(tip string, b *ckBatch, e *ckEntry, rd *objectReader, in *interner) error {
	rec := take(&sl.recs)
	rec.hash = e.hash
	it := ckItem{path: e.path, rec: rec}
	switch e.tag {
	case ckBlob:
		raw, err := rd.read(e.hash, plumbing.BlobObject)
		if err != nil {
			return ckErrorf("read record %s (%s): %v", e.path, e.hash, err)
		}
		v, err := decodeRecordIn(e.path, raw, in)
		if err != nil {
			rec.err = &UnreadableError{Path: e.path, Commit: tip, Err: err}
		} else {
			rec.val = v
		}
	case ckMailbox:
		m := take(&sl.boxes)
		*m = mailboxLite{Title: e.title, t: e.t, quarantined: e.quarantined}
		rec.val = m
		it.lo = len(b.routes)
		b.routes = append(b.routes, e.routes...)
		it.hi = len(b.routes)
	case ckRun:
		r := take(&sl.runs)
		*r = runLite{ID: e.id, t: e.t, day: e.day}
		if e.idName {
			r.ID = recordName(e.path)
		}
		rec.val, it.class = r, e.class
	case ckSession:
		ls := take(&sl.sessions)
		*ls = sessionLite{path: e.path, ID: e.id, RunID: e.runID,
			AdapterID: e.adapter, sec: e.sec, nsec: e.nsec, ResumeOf: e.resumeOf, tot: e.tot,
			native: e.native, failed: e.failed, fallback: e.fallback}
		if e.idName {
			ls.ID = recordName(e.path)
		}
		rec.val = ls
	}
	b.items = append(b.items, it)
	return nil
}

// decodeAll decodes d's records into batches sent on out, which it closes;
// it stops early when stop is closed. Its error is d's, or a blob's.
func decodeAll(d *ckDecoder, tip string, rd *objectReader, out chan<- *ckBatch, stop <-chan struct{}) error {
	defer close(out)
	var sl ckSlabs
	in := newInterner()
	var e ckEntry
	b := newCkBatch()
	send := func() bool {
		select {
		case out <- b:
			b = newCkBatch()
			return true
		case <-stop:
			return false
		}
	}
	for d.next(&e) {
		if err := sl.value(tip, b, &e, rd, in); err != nil {
			return err
		}
		if len(b.items) == ckBatchSize && !send() {
			return nil
		}
	}
	if d.err == nil && len(b.items) > 0 {
		send()
	}
	return d.err
}

// loadCheckpoint builds the snapshot of commit tip from checkpoint data,
// reading through rd the records it holds no value of. It fails (wrapping
// errCheckpoint) when the checkpoint is not tip's or is damaged. One
// goroutine decodes the records while this one indexes them.
func loadCheckpoint(data []byte, tip plumbing.Hash, rd *objectReader) (*snapshot, []*UnreadableError, ckHeader, error) {
	h, d, err := openCheckpoint(data)
	if err != nil {
		return nil, nil, h, err
	}
	if h.tip != tip {
		return nil, nil, h, fmt.Errorf("%w: made at commit %s, the branch is at %s", errStaleCheckpoint, h.tip, tip)
	}
	batches, stop, done := make(chan *ckBatch, ckBatches), make(chan struct{}), make(chan error, 1)
	defer close(stop)
	go func() { done <- decodeAll(d, tip.String(), rd, batches, stop) }()
	snap := newSnapshot(h.sizes)
	snap.tip, snap.trees.root = tip, h.root
	paths := make([]string, 0, h.sizes.files)
	var problems []*UnreadableError
	snap.ov.bulk = true
	for b := range batches {
		for _, it := range b.items {
			if r, ok := it.rec.val.(*runLite); ok {
				r.class = snap.ov.classOf(it.class)
			}
			for _, rt := range b.routes[it.lo:it.hi] {
				snap.claimRoute(rt, it.path)
			}
			paths = append(paths, it.path)
			snap.files[it.path] = it.rec
			snap.index(it.path, it.rec)
			if it.rec.err != nil {
				problems = append(problems, it.rec.err)
			}
		}
	}
	if err := <-done; err != nil {
		return nil, nil, h, err
	}
	if err := d.end(h); err != nil {
		return nil, nil, h, err
	}
	snap.ov.endBulk()
	snap.paths = newPathSet(paths)
	return snap, problems, h, nil
}
