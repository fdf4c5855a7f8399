package state

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// RefName is the branch holding the records.
const RefName = plumbing.ReferenceName("refs/heads/alfred/state")

func openStorage(repo string) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(osfs.New(repo), cache.NewObjectLRU(4<<20),
		filesystem.Options{KeepDescriptors: true})
}

// readTip returns the commit the branch points at (zero when it does not exist).
func readTip(stor *filesystem.Storage) (plumbing.Hash, error) {
	ref, err := stor.Reference(RefName)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", RefName, err)
	}
	return ref.Hash(), nil
}

// load reads the branch tip: every tree walked (not kept: see tipTrees),
// every record decoded and indexed. A record that cannot be decoded is kept as unreadable and
// reported; it does not stop the load. Records come from packList (listed
// here when nil). With ck set, every record is added to it as well, for
// an open checkpoint.
func load(repo string, packList []packInfo, ck *ckEncoder) (*snapshot, []*UnreadableError, error) {
	stor := openStorage(repo)
	defer stor.Close()
	tip, err := readTip(stor)
	if err != nil || tip.IsZero() {
		return newSnapshot(snapSizes{}), nil, err
	}
	if packList == nil {
		if packList, err = listPacks(repo, false); err != nil {
			return nil, nil, err
		}
	}
	// Most objects sit in the largest pack: look there first.
	packList = slices.Clone(packList)
	slices.SortStableFunc(packList, func(a, b packInfo) int { return b.objects - a.objects })
	packs, err := openPacks(repo, packList)
	if err != nil {
		return nil, nil, err
	}
	defer closePacks(packs)
	l := &loader{tip: tip, rd: &objectReader{packs: packs, stor: stor}, names: newInterner()}
	if err := l.walk(); err != nil {
		return nil, nil, err
	}
	snap := newSnapshot(l.sizes)
	snap.tip, snap.trees.root = tip, l.root
	snap.paths = newPathSet(l.paths())
	var problems []*UnreadableError
	snap.ov.bulk = true
	defer snap.ov.endBulk()
	err = l.readBlobs(func(b blob) {
		if ck != nil {
			e := entryOf(b.path, b.rec.hash, b.rec.val, b.rec.err != nil)
			ck.add(&e)
		}
		snap.files[b.path] = b.rec
		snap.index(b.path, b.rec)
		if b.rec.err != nil {
			problems = append(problems, b.rec.err)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return snap, problems, nil
}

// loader holds what a load has read so far.
type loader struct {
	tip   plumbing.Hash
	rd    *objectReader
	names *interner // folder names
	root  plumbing.Hash
	blobs []blob
	sizes snapSizes
	slab  []record // records are allocated from it, a few thousand at a time
	text  arena    // the records' paths
}

// arena holds strings back to back in large blocks: a path costs its bytes,
// where an allocation of its own would round it up to a size class (a
// tenth more) and cost a malloc. A block stays while any of its strings
// does; only Open's paths are made here, so what deleted records leave is
// bounded by the tip Open read.
type arena struct{ block []byte }

// arenaBlock is the size of an arena's blocks.
const arenaBlock = 256 << 10

// concat returns x+y, made in the arena.
func (a *arena) concat(x, y string) string {
	n := len(x) + len(y)
	if n == 0 {
		return ""
	}
	if cap(a.block)-len(a.block) < n {
		a.block = make([]byte, 0, max(arenaBlock, n))
	}
	start := len(a.block)
	a.block = append(append(a.block, x...), y...)
	return unsafe.String(&a.block[start], n)
}

type blob struct {
	path string
	rec  *record
	read bool // read and decoded
}

// walk reads the tip's trees and lists its files.
func (l *loader) walk() error {
	raw, err := l.rd.read(l.tip, plumbing.CommitObject)
	if err != nil {
		return fmt.Errorf("read state commit %s: %w", l.tip, err)
	}
	if l.root, err = commitTree(raw); err != nil {
		return fmt.Errorf("read state commit %s: %w", l.tip, err)
	}
	return l.walkTree("", l.root)
}

// paths returns the paths walked, in byte order: a walk in git's tree order
// lists them so (a folder sorts as its name and '/', as its files' paths
// do), unless a tree was written out of order by another tool.
func (l *loader) paths() []string {
	out := make([]string, len(l.blobs))
	for i, b := range l.blobs {
		out[i] = b.path
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return slices.Compact(out)
}

func (l *loader) walkTree(dir string, h plumbing.Hash) error {
	data, err := l.rd.view(h, plumbing.TreeObject)
	if err != nil && errors.Is(err, errNotInPack) {
		data, err = l.rd.read(h, plumbing.TreeObject)
	}
	if err != nil {
		return fmt.Errorf("read tree %q (%s) at commit %s: %w", dir, h, l.tip, err)
	}
	entries, err := parseTree(data, l.names)
	if err != nil {
		return fmt.Errorf("read tree %q (%s) at commit %s: %w", dir, h, l.tip, err)
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	for _, e := range entries {
		if e.dir {
			if err := l.walkTree(prefix+e.name, e.hash); err != nil {
				return err
			}
			continue
		}
		p := l.text.concat(prefix, e.name)
		if len(l.slab) == 0 {
			l.slab = make([]record, 4096)
		}
		rec := &l.slab[0]
		l.slab = l.slab[1:]
		rec.hash = e.hash
		l.blobs = append(l.blobs, blob{path: p, rec: rec})
		l.sizes.count(p)
	}
	return nil
}

// blobChunk is how many records a worker reads and decodes at a time.
const blobChunk = 512

// readBlobs reads and decodes every record and hands each to index, in
// path order. Inflating and decoding dominate a cold open: workers do them
// over the CPUs, chunk by chunk, while this goroutine indexes the chunks
// done. Objects outside packs go through go-git, which is not safe for
// concurrent use: the workers leave them to this goroutine.
func (l *loader) readBlobs(index func(blob)) error {
	chunks := (len(l.blobs) + blobChunk - 1) / blobChunk
	done := make([]chan error, chunks)
	for c := range done {
		done[c] = make(chan error, 1)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait() // the packs are unmapped when load returns
	defer stop.Store(true)
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd, in := &objectReader{packs: l.rd.packs}, newInterner()
			for c := w; c < chunks; c += workers {
				var err error
				for i := c * blobChunk; i < min(len(l.blobs), (c+1)*blobChunk) && err == nil && !stop.Load(); i++ {
					err = l.readBlob(rd, in, &l.blobs[i], true)
				}
				done[c] <- err
			}
		}()
	}
	for c := range chunks {
		if err := <-done[c]; err != nil {
			return err
		}
		for i := c * blobChunk; i < min(len(l.blobs), (c+1)*blobChunk); i++ {
			b := &l.blobs[i]
			if !b.read {
				if err := l.readBlob(l.rd, nil, b, false); err != nil {
					return err
				}
			}
			index(*b)
		}
	}
	return nil
}

// readBlob reads one record and decodes it; with packedOnly, a record that
// is not an undeltified object in a pack is left unread.
func (l *loader) readBlob(rd *objectReader, in *interner, b *blob, packedOnly bool) error {
	var raw []byte
	var err error
	if packedOnly {
		raw, err = rd.readPacked(b.rec.hash, plumbing.BlobObject)
		if errors.Is(err, errNotInPack) {
			return nil
		}
	} else {
		raw, err = rd.read(b.rec.hash, plumbing.BlobObject)
	}
	if err != nil {
		return fmt.Errorf("read record %s (%s) at commit %s: %w", b.path, b.rec.hash, l.tip, err)
	}
	b.read = true
	v, err := decodeRecordIn(b.path, raw, in)
	if err != nil {
		b.rec.err = &UnreadableError{Path: b.path, Commit: l.tip.String(), Err: err}
		return nil
	}
	b.rec.val = v
	return nil
}
