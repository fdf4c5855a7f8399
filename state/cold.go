package state

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// The cold file, {repo}/alfred.cold, holds the finished mailboxes (see
// Mailbox.Finished) of one commit of the branch, so that memory need not:
// each one's records with the compact values a full load computes, and
// the indexes the queries ask of them, as tables of state/internal/table
// (docs/design.md §7, "The cold tier"). A mailbox is cold whole or not at
// all: its mailbox record, runs and llm sessions together. Its tables:
//
//	meta             "commit": the commit and its root tree [20][20]
//	records          path -> blob hash [20], tag, payload (appendColdValue)
//	runs             a run's record name -> its path
//	routes           routeKey + the path of a mailbox record claiming the
//	                 route -> nothing
//	mailboxes        listKey(UpdatedAt, mailbox id) -> the mailbox's path,
//	                 title and whether it holds quarantined events
//	mailboxes/{p}    the same for project p (escaped "forge/owner/project")
//	runs-by-time     listKey(CreatedAt, run id) -> the run's path and class
//	runs-by-time/{p} the same for project p
//	days             dayKey(project, day, class) -> runs and the totals of
//	                 their llm sessions (varints)
//	strings          the number of a string (u32, big-endian) -> the string:
//	                 what the records' values refer to
//
// The list keys order newest first, as the overview's pages read.
const (
	coldName        = "alfred.cold"
	coldVersion     = 1
	coldMeta        = "meta"
	coldRecords     = "records"
	coldRuns        = "runs"
	coldRoutes      = "routes"
	coldMailboxes   = "mailboxes"
	coldRunsByTime  = "runs-by-time"
	coldDays        = "days"
	coldStrings     = "strings"
	coldCommitKey   = "commit"
	coldVersionKey  = "version"
	coldMaxValueLen = 1 << 20 // a value longer is damage
)

// descTime appends t so that later times sort first.
func descTime(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, ^(uint64(t) ^ 1<<63))
}

// descBytes appends s so that, after the same prefix, greater strings sort
// first: s escaped to stay ordered without being a prefix of another
// (0x00 as 0x00 0xFF, then 0x00 0x00), every byte inverted.
func descBytes(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0xFF, 0x00)
			continue
		}
		b = append(b, ^s[i])
	}
	return append(b, 0xFF, 0xFF)
}

// listKey is the key of an overview entry: newest first, then the
// greatest id, as the overview's lists descend.
func listKey(k ovKey) []byte {
	return descBytes(descTime(make([]byte, 0, 8+len(k.id)+2), k.t), k.id)
}

// routeKey is the prefix of the keys of a route's claims: the route's
// fields, each a uvarint length and its bytes; a claim's key adds the
// claiming mailbox record's path.
func routeKey(rt Route) []byte {
	b := make([]byte, 0, len(rt.Forge)+len(rt.Owner)+len(rt.Project)+len(rt.By)+len(rt.Value)+5)
	for _, s := range []string{rt.Forge, rt.Owner, rt.Project, string(rt.By), rt.Value} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// splitClaim returns the route and the mailbox path of a claim's key.
func splitClaim(k []byte) (Route, string, error) {
	r := coldReader{b: k}
	rt := Route{Forge: r.str(), Owner: r.str(), Project: r.str(), By: RouteKind(r.str()), Value: r.str()}
	if r.err != nil || len(r.b) == 0 {
		return Route{}, "", fmt.Errorf("%w: route claim key", errCold)
	}
	return rt, string(r.b), nil
}

// dayKey is the key of a day's aggregate of one project and run class.
func dayKey(project string, day int64, c runClass) []byte {
	b := append([]byte(project), 0)
	b = binary.BigEndian.AppendUint64(b, uint64(day)^1<<63)
	for _, s := range []string{string(c.status), c.phase} {
		b = append(append(b, s...), 0)
	}
	return append(b, c.adapter...)
}

// coldWriter appends the fields of a value.
type coldWriter []byte

func (w *coldWriter) uvarint(v uint64) { *w = binary.AppendUvarint(*w, v) }
func (w *coldWriter) varint(v int64)   { *w = binary.AppendVarint(*w, v) }
func (w *coldWriter) str(s string)     { w.uvarint(uint64(len(s))); *w = append(*w, s...) }
func (w *coldWriter) byte(b byte)      { *w = append(*w, b) }

// newColdValues returns the encoder of the records table's values over
// the strings table strs (an old file's, kept in order: its values are
// copied as they are).
func newColdValues(strs []string) *ckEncoder {
	enc := newCkEncoder()
	for _, s := range strs {
		enc.index(s)
	}
	return enc
}

// coldValue is the value of a record entry of the records table: its blob
// hash, tag and the tag's payload as the checkpoint writes it, the strings
// records repeat (forges, owners, projects, statuses, phases, adapters)
// as references into the strings table.
func coldValue(enc *ckEncoder, e *ckEntry) []byte {
	enc.recs = append(append(enc.recs[:0], e.hash[:]...), e.tag)
	enc.payload(e)
	return bytes.Clone(enc.recs)
}

// parseColdValue reads the value of the record at path, as coldValue
// wrote it, strs the file's strings table.
func parseColdValue(path string, b []byte, strs []string) (ckEntry, error) {
	d := &ckDecoder{data: b, strs: strs, base: errCold}
	e := ckEntry{path: path}
	copy(e.hash[:], d.take(20))
	e.tag = d.byte()
	if d.err == nil && (e.tag >= ckTags || (e.tag != ckBlob && kindOf(path) != ckKinds[e.tag])) {
		d.fail("bad tag")
	}
	if d.err == nil {
		d.payload(&e)
	}
	if d.err == nil && d.off != len(d.data) {
		d.fail("bytes left")
	}
	if d.err != nil {
		return ckEntry{}, fmt.Errorf("cold record %s: %w", path, d.err)
	}
	if e.idName {
		e.id = recordName(path)
	}
	return e, nil
}

// coldReader reads the fields of a list entry, a day or a route claim,
// every bound checked.
type coldReader struct {
	b   []byte
	err error
}

func (r *coldReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errCold, what)
	}
	r.b = nil
}

func (r *coldReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads a signed varint: encoding/binary's zig-zag form of uvarint.
func (r *coldReader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *coldReader) take(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.fail("runs past the end")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *coldReader) str() string { return string(r.take(r.uvarint())) }

func (r *coldReader) byte() byte {
	if b := r.take(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

// coldListValue is the value of an overview list entry: the record's
// path, then a mailbox's title and quarantined flag or a run's class.
type coldListValue struct {
	path        string
	title       string
	quarantined bool
	class       runClass
}

func appendMailboxListValue(b []byte, path, title string, quarantined bool) []byte {
	w := coldWriter(b)
	w.str(path)
	w.str(title)
	w.byte(bit(quarantined, 1))
	return w
}

func appendRunListValue(b []byte, path string, c runClass) []byte {
	w := coldWriter(b)
	w.str(path)
	for _, s := range []string{string(c.status), c.phase, c.adapter} {
		w.str(s)
	}
	return w
}

func parseMailboxListValue(b []byte) (coldListValue, error) {
	r := coldReader{b: b}
	v := coldListValue{path: r.str(), title: r.str(), quarantined: r.byte() != 0}
	return v, r.done("mailbox list entry")
}

func parseRunListValue(b []byte) (coldListValue, error) {
	r := coldReader{b: b}
	v := coldListValue{path: r.str(), class: runClass{RunStatus(r.str()), r.str(), r.str()}}
	return v, r.done("run list entry")
}

// done is the reader's error, naming what it read, when it failed or left
// bytes unread.
func (r *coldReader) done(what string) error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("bytes left")
	}
	if r.err != nil {
		return fmt.Errorf("cold %s: %w", what, r.err)
	}
	return nil
}

// dayValue is a day's aggregate: runs and the totals of their sessions.
type dayValue struct {
	runs int64
	tot  totals
}

func appendDayValue(b []byte, v dayValue) []byte {
	w := coldWriter(b)
	w.varint(v.runs)
	w.varint(v.tot.in)
	w.varint(v.tot.out)
	w.varint(v.tot.cost)
	return w
}

func parseDayValue(b []byte) (dayValue, error) {
	r := coldReader{b: b}
	v := dayValue{runs: r.varint(), tot: totals{r.varint(), r.varint(), r.varint()}}
	return v, r.done("day")
}

// errCold wraps why the cold file cannot be read.
var errCold = fmt.Errorf("cold file damaged")

// coldCommit is the meta table's value: commit and root tree.
func coldCommit(tip, root plumbing.Hash) []byte {
	return append(append([]byte{}, tip[:]...), root[:]...)
}
