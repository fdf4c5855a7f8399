package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/go-git/go-git/v5/plumbing"
)

// The open checkpoint, {repo}/alfred.index, holds for one commit of the
// branch what a full load computes of each record: its path, its blob and
// the compact value memory keeps (runLite, sessionLite, a finished
// mailbox's mailboxLite and routes), so that Open need not inflate and
// decode every record (see the package documentation, "The open
// checkpoint"). Its layout, integers little-endian:
//
//	header: magic "ALFREDIX", version u32, tip [20], root tree [20],
//	        folded journal sequence u64, records u32, mailboxes u32,
//	        runs u32, sessions u32, routes u32, strings u32, and the cold
//	        file it goes with: its size u64 and the checksum its last four
//	        bytes hold u32 (0 and 0: none; then it holds every record)
//	strings: each a uvarint length and its bytes (the repeated ones:
//	        adapters, statuses, phases, forges, owners, projects)
//	records, in path order (those the cold file holds left out): uvarint bytes shared with the previous path,
//	        the rest (uvarint length, bytes), blob hash [20], tag, payload
//	CRC-32C (Castagnoli) of all the above, u32
const (
	checkpointName    = "alfred.index"
	checkpointMagic   = "ALFREDIX"
	checkpointVersion = 3
	ckHeaderSize      = 8 + 4 + 20 + 20 + 8 + 6*4 + 8 + 4
	ckMinRecord       = 1 + 1 + 20 + 1 // shared, suffix length, hash, tag
	ckMinRoute        = 5              // four string references, a value's length
	ckMaxSize         = 1 << 32        // a checkpoint larger is not read
)

// Record tags: how a record's value is had.
const (
	ckBlob    byte = iota // decoded from its blob at Open (open mailboxes, unreadable records, installations, settings)
	ckGeneric             // a readable generic record: no value
	ckMailbox             // a finished mailbox: its mailboxLite and its routes
	ckRun                 // a run's runLite, its class spelled out
	ckSession             // an llm session's sessionLite
	ckTags
)

// ckKinds are the record kinds (kindOf) each tag is valid for; ckBlob is
// valid for every kind.
var ckKinds = [ckTags]string{ckGeneric: "", ckMailbox: "mailbox", ckRun: "run", ckSession: "llm_session"}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// ckHeader is a checkpoint's header.
type ckHeader struct {
	tip, root plumbing.Hash
	folded    uint64
	sizes     snapSizes
	strings   int
	cold      coldID
}

// coldID names a cold file: its size and the checksum its last four bytes
// hold (the zero coldID: none).
type coldID struct {
	size int64
	sum  uint32
}

// ckEntry is one record of a checkpoint, whatever its tag.
type ckEntry struct {
	path        string
	hash        plumbing.Hash
	tag         byte
	id          string // run or llm session id ("" when idName)
	idName      bool   // the id is the record's name
	title       string // mailbox
	t           int64  // mailbox: timeKey(UpdatedAt); run: timeKey(CreatedAt)
	quarantined bool
	routes      []Route
	day         int32 // run
	class       runClass
	runID       string // llm session
	adapter     string
	sec         int64
	nsec        int32
	resumeOf    *string
	tot         totals
	native      bool
	failed      bool
	fallback    bool
}

// Session flags.
const (
	ckNative = 1 << iota
	ckFailed
	ckFallback
	ckResumeOf
	ckIDName
)

// entryOf returns the checkpoint entry of a record at path decoded from
// its blob (val, or why it is unreadable), as a full load keeps it.
func entryOf(path string, hash plumbing.Hash, val any, bad bool) ckEntry {
	e := ckEntry{path: path, hash: hash, tag: ckBlob}
	if bad {
		return e
	}
	switch v := val.(type) {
	case nil:
		if kindOf(path) == "" {
			e.tag = ckGeneric
		}
	case *Mailbox:
		if v.Finished() {
			e.tag, e.title, e.t, e.quarantined, e.routes = ckMailbox, v.Title, timeKey(v.UpdatedAt), len(v.Quarantined) > 0, routesOf(v)
		}
	case *Run:
		e.tag, e.id, e.t = ckRun, v.ID, timeKey(v.CreatedAt)
		e.day = int32(max(min(dayOf(v.CreatedAt), math.MaxInt32), math.MinInt32))
		e.class = runClass{v.Status, v.Phase, v.AdapterID}
	case *LLMSession:
		e.tag, e.id, e.runID, e.adapter = ckSession, v.ID, v.RunID, v.AdapterID
		e.sec, e.nsec, e.resumeOf, e.tot = v.CreatedAt.Unix(), int32(v.CreatedAt.Nanosecond()), v.ResumeOf, sessionTotals(v)
		e.native, e.failed, e.fallback = v.NativeSessionID != nil, v.Outcome == "failed", v.ResumeFallback != nil
	}
	if (e.tag == ckRun || e.tag == ckSession) && e.id == recordName(path) {
		e.id, e.idName = "", true
	}
	return e
}

// ckEncoder builds a checkpoint, record by record in path order.
type ckEncoder struct {
	recs  []byte
	strs  map[string]uint32
	list  []string
	prev  string
	sizes snapSizes
}

func newCkEncoder() *ckEncoder { return &ckEncoder{strs: map[string]uint32{}} }

func (c *ckEncoder) uvarint(v uint64) { c.recs = binary.AppendUvarint(c.recs, v) }
func (c *ckEncoder) varint(v int64)   { c.recs = binary.AppendVarint(c.recs, v) }
func (c *ckEncoder) str(s string)     { c.uvarint(uint64(len(s))); c.recs = append(c.recs, s...) }

func (c *ckEncoder) ref(s string) { c.uvarint(uint64(c.index(s))) }

// index returns the number of string s in the checkpoint's strings,
// adding it.
func (c *ckEncoder) index(s string) uint32 {
	i, ok := c.strs[s]
	if !ok {
		i = uint32(len(c.list))
		c.strs[s] = i
		c.list = append(c.list, s)
	}
	return i
}

func bit(on bool, b byte) byte {
	if on {
		return b
	}
	return 0
}

func (c *ckEncoder) flag(b bool) {
	if b {
		c.recs = append(c.recs, 1)
	} else {
		c.recs = append(c.recs, 0)
	}
}

// head appends a record's path, blob hash and tag; records come in path
// order.
func (c *ckEncoder) head(path string, hash plumbing.Hash, tag byte) {
	shared := 0
	for shared < len(c.prev) && shared < len(path) && c.prev[shared] == path[shared] {
		shared++
	}
	c.uvarint(uint64(shared))
	c.str(path[shared:])
	c.prev = path
	c.sizes.count(path)
	c.recs = append(append(c.recs, hash[:]...), tag)
}

// add appends a record; records come in path order.
func (c *ckEncoder) add(e *ckEntry) {
	c.head(e.path, e.hash, e.tag)
	c.payload(e)
}

// payload appends the payload of e's tag: its compact value.
func (c *ckEncoder) payload(e *ckEntry) {
	switch e.tag {
	case ckMailbox:
		c.str(e.title)
		c.varint(e.t)
		c.flag(e.quarantined)
		c.uvarint(uint64(len(e.routes)))
		c.sizes.routes += len(e.routes)
		for _, rt := range e.routes {
			c.ref(rt.Forge)
			c.ref(rt.Owner)
			c.ref(rt.Project)
			c.ref(string(rt.By))
			c.str(rt.Value)
		}
	case ckRun:
		c.flag(e.idName)
		c.str(e.id)
		c.varint(e.t)
		c.varint(int64(e.day))
		c.ref(string(e.class.status))
		c.ref(e.class.phase)
		c.ref(e.class.adapter)
	case ckSession:
		c.addSession(e)
	}
}

func (c *ckEncoder) addSession(e *ckEntry) {
	c.recs = append(c.recs, bit(e.native, ckNative)|bit(e.failed, ckFailed)|bit(e.fallback, ckFallback)|bit(e.resumeOf != nil, ckResumeOf)|bit(e.idName, ckIDName))
	c.str(e.id)
	c.str(e.runID)
	c.ref(e.adapter)
	c.varint(e.sec)
	c.varint(int64(e.nsec))
	if e.resumeOf != nil {
		c.str(*e.resumeOf)
	}
	c.varint(e.tot.in)
	c.varint(e.tot.out)
	c.varint(e.tot.cost)
}

// bytes returns the checkpoint of the records added, for commit tip (root
// its tree) whose journal trailer says folded.
func (c *ckEncoder) bytes(tip, root plumbing.Hash, folded uint64, cold coldID) []byte {
	out := make([]byte, 0, ckHeaderSize+len(c.recs)+16*len(c.list)+4)
	out = append(out, checkpointMagic...)
	out = binary.LittleEndian.AppendUint32(out, checkpointVersion)
	out = append(append(out, tip[:]...), root[:]...)
	out = binary.LittleEndian.AppendUint64(out, folded)
	for _, n := range []int{c.sizes.files, c.sizes.mailboxes, c.sizes.runs, c.sizes.sessions, c.sizes.routes, len(c.list)} {
		out = binary.LittleEndian.AppendUint32(out, uint32(n))
	}
	out = binary.LittleEndian.AppendUint64(out, uint64(cold.size))
	out = binary.LittleEndian.AppendUint32(out, cold.sum)
	for _, s := range c.list {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	out = append(out, c.recs...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crc32c))
}

// errCheckpoint wraps why a checkpoint is not used.
var errCheckpoint = errors.New("open checkpoint not usable")

// errStaleCheckpoint is a checkpoint of another commit than the tip (the
// branch moved since it was written: a crash, or git).
var errStaleCheckpoint = fmt.Errorf("%w: stale", errCheckpoint)

func ckErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCheckpoint, fmt.Sprintf(format, args...))
}

// parseCkHeader checks a checkpoint whole (size, checksum, magic, version
// and counts against its size) and returns its header and the offset of
// its strings.
func parseCkHeader(data []byte) (ckHeader, error) {
	var h ckHeader
	if len(data) < ckHeaderSize+4 || int64(len(data)) > ckMaxSize {
		return h, ckErrorf("size %d", len(data))
	}
	body := data[:len(data)-4]
	if sum := binary.LittleEndian.Uint32(data[len(body):]); sum != crc32.Checksum(body, crc32c) {
		return h, ckErrorf("checksum mismatch")
	}
	if string(body[:8]) != checkpointMagic {
		return h, ckErrorf("bad magic")
	}
	if v := binary.LittleEndian.Uint32(body[8:]); v != checkpointVersion {
		return h, ckErrorf("format version %d, this code reads %d", v, checkpointVersion)
	}
	copy(h.tip[:], body[12:32])
	copy(h.root[:], body[32:52])
	h.folded = binary.LittleEndian.Uint64(body[52:])
	var n [6]int
	for i := range n {
		n[i] = int(binary.LittleEndian.Uint32(body[60+4*i:]))
	}
	h.sizes = snapSizes{files: n[0], mailboxes: n[1], runs: n[2], sessions: n[3], routes: n[4]}
	h.strings = n[5]
	h.cold = coldID{size: int64(binary.LittleEndian.Uint64(body[84:])), sum: binary.LittleEndian.Uint32(body[92:])}
	if h.cold.size < 0 {
		return h, ckErrorf("cold file size %d", h.cold.size)
	}
	room := len(body) - ckHeaderSize
	if h.sizes.files > room/ckMinRecord || h.strings > room || h.sizes.mailboxes+h.sizes.runs+h.sizes.sessions > h.sizes.files ||
		h.sizes.routes > room/ckMinRoute {
		return h, ckErrorf("counts %v and %d strings do not fit its %d bytes", n[:5], h.strings, len(data))
	}
	return h, nil
}
