package state

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

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

// load reads the branch tip: every tree into memory, every record decoded
// and indexed. A record that cannot be decoded is kept as unreadable and
// reported; it does not stop the load.
func load(repo string) (*snapshot, []*UnreadableError, error) {
	stor := openStorage(repo)
	defer stor.Close()
	snap := newSnapshot()
	tip, err := readTip(stor)
	if err != nil || tip.IsZero() {
		return snap, nil, err
	}
	packs, err := openPacks(repo)
	if err != nil {
		return nil, nil, err
	}
	defer closePacks(packs)
	rd := &objectReader{packs: packs, stor: stor}
	raw, err := rd.read(tip, plumbing.CommitObject)
	if err != nil {
		return nil, nil, fmt.Errorf("read state commit %s: %w", tip, err)
	}
	root, err := commitTree(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("read state commit %s: %w", tip, err)
	}
	snap.tip = tip
	type blob struct {
		path string
		rec  *record
	}
	var blobs []blob
	var walk func(dir string, h plumbing.Hash) error
	walk = func(dir string, h plumbing.Hash) error {
		data, err := rd.read(h, plumbing.TreeObject)
		if err != nil {
			return fmt.Errorf("read tree %q (%s) at commit %s: %w", dir, h, tip, err)
		}
		entries, err := parseTree(data)
		if err != nil {
			return fmt.Errorf("read tree %q (%s) at commit %s: %w", dir, h, tip, err)
		}
		snap.trees[dir] = &treeNode{hash: h, entries: entries}
		for _, e := range entries {
			p := e.name
			if dir != "" {
				p = dir + "/" + e.name
			}
			if e.dir {
				if err := walk(p, e.hash); err != nil {
					return err
				}
				continue
			}
			blobs = append(blobs, blob{path: p, rec: &record{hash: e.hash}})
		}
		return nil
	}
	if err := walk("", root); err != nil {
		return nil, nil, err
	}
	// Inflating and decoding dominate a cold open: spread them over the
	// CPUs. Objects outside packs go through go-git, which is not safe for
	// concurrent use, so those are read first by this goroutine.
	for _, b := range blobs {
		if !rd.packed(b.rec.hash) {
			var err error
			if b.rec.raw, err = rd.read(b.rec.hash, plumbing.BlobObject); err != nil {
				return nil, nil, fmt.Errorf("read record %s (%s) at commit %s: %w", b.path, b.rec.hash, tip, err)
			}
		}
	}
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wr := &objectReader{packs: packs}
			for i := w; i < len(blobs); i += workers {
				b := blobs[i]
				if b.rec.raw == nil {
					raw, err := wr.readPacked(b.rec.hash, plumbing.BlobObject)
					if err != nil {
						errs[w] = fmt.Errorf("read record %s (%s) at commit %s: %w", b.path, b.rec.hash, tip, err)
						return
					}
					b.rec.raw = raw
				}
				v, err := decodeRecord(b.path, b.rec.raw)
				if err != nil {
					b.rec.err = &UnreadableError{Path: b.path, Commit: tip.String(), Err: err}
					continue
				}
				b.rec.val = v
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	var problems []*UnreadableError
	for _, b := range blobs {
		snap.files[b.path] = b.rec
		snap.index(b.path, b.rec)
		if b.rec.err != nil {
			problems = append(problems, b.rec.err)
		}
	}
	return snap, problems, nil
}
