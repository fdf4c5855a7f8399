package state

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// blobReader reads record bodies on demand, by blob hash, from the packs on
// disk: the in-memory state keeps each record's decoded value and hash, not
// its JSON, which only Get, Show, Export, Verify and Tx.Get need. It maps
// the packs it meets and, on a miss, looks at the pack folder afresh (a
// commit added a pack, a merge replaced some), unmapping the packs gone;
// objects outside the store's undeltified packs (a `git gc`'s deltas,
// loose objects) go through go-git. Reads are serialized: they are rare
// next to the queries, which read the decoded values.
type blobReader struct {
	dir   string
	mu    sync.Mutex
	packs map[string]*mappedPack // by base name
	rd    objectReader
	// pending holds what the journal logged since the last fold (fold.go).
	pending pendingBlobs
}

func newBlobReader(dir string) *blobReader {
	return &blobReader{dir: dir, packs: map[string]*mappedPack{}}
}

// read returns a copy of blob h. A merge may remove the pack an object was
// in between the listing of the packs and their reading (by this reader or
// by go-git, which lists them once when opened): the read is then tried
// afresh, readTries times at most, readPause apart.
func (b *blobReader) read(h plumbing.Hash) ([]byte, error) {
	return b.readObject(h, plumbing.BlobObject)
}

// readObject returns a copy of object h of type typ, as read does.
// An object the journal logged since the last fold (a blob or a tree) is
// not in the packs yet: it is read from memory.
func (b *blobReader) readObject(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, error) {
	if raw, ok := b.pendingBlob(h); ok {
		return slices.Clone(raw), nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	for try := range readTries {
		if try > 0 {
			time.Sleep(readPause)
		}
		var data []byte
		if data, err = b.readOnce(h, typ); err == nil {
			return data, nil
		}
	}
	return nil, err
}

// readTries and readPause bound read's tries.
const (
	readTries = 5
	readPause = 5 * time.Millisecond
)

// readOnce reads object h from the packs it maps, else through go-git.
func (b *blobReader) readOnce(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, error) {
	// A merge writes its pack before it removes the ones it replaces, so a
	// second look finds an object the first missed between the two.
	for range 3 {
		data, err := b.rd.readPacked(h, typ)
		if !errors.Is(err, errNotInPack) {
			return data, err
		}
		if changed, err := b.refresh(); err != nil || !changed {
			break
		}
	}
	return b.readOther(h, typ)
}

// readOther reads h through go-git, with a storage opened afresh when the
// one it has does not find it (go-git lists the packs once).
func (b *blobReader) readOther(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, error) {
	if b.rd.stor != nil {
		if data, err := b.rd.read(h, typ); err == nil {
			return data, nil
		}
		b.rd.stor.Close()
	}
	b.rd.stor = openStorage(b.dir)
	data, err := b.rd.read(h, typ)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	return data, nil
}

// refresh maps the packs that appeared in the pack folder and unmaps those
// gone; it reports whether the set changed.
func (b *blobReader) refresh() (bool, error) {
	ents, err := os.ReadDir(packDir(b.dir))
	if err != nil {
		return false, fmt.Errorf("list packs: %w", err)
	}
	onDisk := map[string]bool{}
	changed := false
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || strings.HasPrefix(base, "tmp_") {
			continue
		}
		onDisk[base] = true
		if b.packs[base] != nil {
			continue
		}
		mp, err := mapPack(filepath.Join(packDir(b.dir), base))
		if err != nil {
			continue // merged away since, or not ours to read: go-git reads it
		}
		b.packs[base], changed = mp, true
	}
	for base, mp := range b.packs {
		if !onDisk[base] {
			closePacks([]*mappedPack{mp})
			delete(b.packs, base)
			changed = true
		}
	}
	b.rd.packs = b.rd.packs[:0]
	for _, mp := range b.packs {
		b.rd.packs = append(b.rd.packs, mp)
	}
	// Most objects sit in the largest pack: look there first.
	slices.SortFunc(b.rd.packs, func(x, y *mappedPack) int { return y.idx.count() - x.idx.count() })
	return changed, nil
}

// close unmaps the packs and closes go-git's storage; a later read maps
// them again.
func (b *blobReader) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for base, mp := range b.packs {
		closePacks([]*mappedPack{mp})
		delete(b.packs, base)
	}
	b.rd.packs = nil
	if b.rd.stor != nil {
		b.rd.stor.Close()
		b.rd.stor = nil
	}
}

// body returns the JSON of record r.
func (s *snapshot) body(r *record) ([]byte, error) {
	if s.blobs == nil {
		return nil, errors.New("read record: the store has no packs open")
	}
	return s.blobs.read(r.hash)
}

// runLite is what memory keeps of a run: what the overview's indexes and
// filters ask of it, in 32 bytes. Its status, phase and adapter are the
// snapshot's run class number class (overview.classes). The queries
// returning runs read the whole run from its body (snapshot.run).
type runLite struct {
	ID    string
	t     int64  // timeKey(CreatedAt)
	day   int32  // dayOf(CreatedAt), clamped (a JSON time has a 4-digit year)
	class uint32 // overview.classes[class] is its status, phase and adapter
}

// lighten replaces the value of the run at path by its runLite.
func (o *overview) lighten(path string, r *record) {
	run, ok := r.val.(*Run)
	if !ok || r.err != nil {
		return
	}
	day := max(min(dayOf(run.CreatedAt), math.MaxInt32), math.MinInt32)
	r.val = &runLite{ID: sharedName(path, run.ID), t: timeKey(run.CreatedAt), day: int32(day),
		class: o.classOf(runClass{run.Status, run.Phase, run.AdapterID})}
}

// run returns the whole run at path, read from its body when memory keeps
// its runLite.
func (s *snapshot) run(path string, r *record) (Run, error) {
	if run, ok := r.val.(*Run); ok {
		return *run, nil
	}
	raw, err := s.body(r)
	if err != nil {
		return Run{}, fmt.Errorf("read run %s: %w", path, err)
	}
	v, err := decodeRecord(path, raw)
	if err != nil {
		return Run{}, fmt.Errorf("read run %s: %w", path, err)
	}
	return *v.(*Run), nil
}

// sessionLite is what memory keeps of an llm session: what the session
// resolver (PriorSession, FailedResumes, OtherAdapterSession) and the
// overview's totals ask of it. The queries returning sessions read the
// whole session from its body (snapshot.session).
type sessionLite struct {
	path                 string // the record, for its body
	ID, RunID, AdapterID string
	sec                  int64 // CreatedAt, in Unix seconds and nanoseconds
	ResumeOf             *string
	tot                  totals
	nsec                 int32
	native               bool // NativeSessionID set
	failed               bool // Outcome "failed"
	fallback             bool // ResumeFallback set
}

// lightenSession replaces an llm session's value by its sessionLite.
func lightenSession(path string, r *record) {
	ls, ok := r.val.(*LLMSession)
	if !ok || r.err != nil {
		return
	}
	r.val = &sessionLite{path: path, ID: sharedName(path, ls.ID), RunID: ls.RunID, AdapterID: ls.AdapterID,
		sec: ls.CreatedAt.Unix(), nsec: int32(ls.CreatedAt.Nanosecond()),
		ResumeOf: ls.ResumeOf, tot: sessionTotals(ls), native: ls.NativeSessionID != nil, failed: ls.Outcome == "failed",
		fallback: ls.ResumeFallback != nil}
}

// sharedName returns id, as the bytes of the record's file name at path
// when they spell it (a record is named by its escaped id), so that memory
// holds the id once.
func sharedName(path, id string) string {
	if name := recordName(path); name == id {
		return name
	}
	return id
}

// session returns the whole llm session at path, read from its body when
// memory keeps its sessionLite.
func (s *snapshot) session(path string, r *record) (LLMSession, error) {
	if ls, ok := r.val.(*LLMSession); ok {
		return *ls, nil
	}
	raw, err := s.body(r)
	if err != nil {
		return LLMSession{}, fmt.Errorf("read llm session %s: %w", path, err)
	}
	v, err := decodeRecord(path, raw)
	if err != nil {
		return LLMSession{}, fmt.Errorf("read llm session %s: %w", path, err)
	}
	ls, ok := v.(*LLMSession)
	if !ok {
		return LLMSession{}, fmt.Errorf("read llm session %s: not an llm session", path)
	}
	return *ls, nil
}
