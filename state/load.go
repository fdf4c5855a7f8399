package state

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
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

// load reads the branch tip with go-git: every tree into memory, every
// record decoded and indexed. A record that cannot be decoded is kept as
// unreadable and reported; it does not stop the load.
func load(repo string) (*snapshot, []*UnreadableError, error) {
	stor := openStorage(repo)
	defer stor.Close()
	snap := newSnapshot()
	tip, err := readTip(stor)
	if err != nil || tip.IsZero() {
		return snap, nil, err
	}
	commit, err := object.GetCommit(stor, tip)
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
		t, err := object.GetTree(stor, h)
		if err != nil {
			return fmt.Errorf("read tree %q (%s) at commit %s: %w", dir, h, tip, err)
		}
		node := &treeNode{hash: h, entries: make([]treeEntry, 0, len(t.Entries))}
		snap.trees[dir] = node
		for _, e := range t.Entries {
			p := e.Name
			if dir != "" {
				p = dir + "/" + e.Name
			}
			isDir := e.Mode == filemode.Dir
			node.entries = append(node.entries, treeEntry{name: e.Name, dir: isDir, hash: e.Hash})
			if isDir {
				if err := walk(p, e.Hash); err != nil {
					return err
				}
				continue
			}
			blobs = append(blobs, blob{path: p, rec: &record{hash: e.Hash}})
		}
		return nil
	}
	if err := walk("", commit.TreeHash); err != nil {
		return nil, nil, err
	}
	for _, b := range blobs {
		obj, err := stor.EncodedObject(plumbing.BlobObject, b.rec.hash)
		if err != nil {
			return nil, nil, fmt.Errorf("read record %s (%s) at commit %s: %w", b.path, b.rec.hash, tip, err)
		}
		r, err := obj.Reader()
		if err != nil {
			return nil, nil, fmt.Errorf("read record %s at commit %s: %w", b.path, tip, err)
		}
		b.rec.raw, err = io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read record %s at commit %s: %w", b.path, tip, err)
		}
	}
	// Decoding JSON dominates a cold open: spread it over the CPUs.
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(blobs); i += workers {
				b := blobs[i]
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
