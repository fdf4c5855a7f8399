package state

// Folding the journal into the branch: the writes logged since the last
// fold become one commit, written as every commit is (one pack, the ref
// moved by compare-and-swap), whose message ends with the trailer
// "Journal-Seq: N", the last journal frame it holds (replay.go reads it).
// See the package documentation, "The journal".

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// seqTrailer ends the message of a fold commit.
const seqTrailer = "Journal-Seq: "

// Defaults of the fold's options.
const (
	defaultFoldBytes = 1 << 20
	defaultFoldIdle  = 200 * time.Millisecond
	foldRetry        = time.Second // after a failed fold
)

// pending is what the journal holds beyond the tip: the writes since the
// last fold. The leader and the fold change it under Store.jmu.
type pending struct {
	seq, folded uint64                // last frame written; last frame folded into the tip
	changes     map[string]pendChange // net change by path since the fold
	dirs        map[string]bool       // folders whose tree changed since the fold
	last        time.Time             // the last append
}

// pendChange is a path's change since the fold; existed says whether the
// tip holds the path.
type pendChange struct {
	hash             plumbing.Hash
	deleted, existed bool
}

func newPending(folded uint64) *pending {
	return &pending{seq: folded, folded: folded, changes: map[string]pendChange{}, dirs: map[string]bool{}}
}

// stage installs a logged batch (changes as keepChanges left them) into
// snap and the pending state; the caller holds jmu.
func (s *Store) stage(snap *snapshot, overlay map[string]*change, changes map[string]fileChange) error {
	newTrees, objs, err := buildTrees(snap.trees, changes)
	if err != nil {
		return err
	}
	s.install(snap, overlay, changes, newTrees, objs)
	return nil
}

// install is stage with the batch's trees built. The batch's records and
// trees are held in memory until the fold writes them to a pack: the next
// batch reads the trees on its paths from there.
func (s *Store) install(snap *snapshot, overlay map[string]*change, changes map[string]fileChange, newTrees map[string]*treeNode, objs []gitObject) {
	for p, c := range changes {
		pc, seen := s.pend.changes[p]
		if !seen {
			pc.existed = snap.files[p] != nil
		}
		pc.hash, pc.deleted = c.hash, c.deleted
		s.pend.changes[p] = pc
		if !c.deleted {
			s.blobs.putPending(c.hash, overlay[p].raw)
		}
	}
	s.stageTrees(newTrees, objs)
	s.apply(snap, snap.tip, overlay, newTrees)
}

// stageTrees keeps the trees a logged batch wrote, until the fold packs
// them, and marks their folders for the fold.
func (s *Store) stageTrees(newTrees map[string]*treeNode, objs []gitObject) {
	for _, o := range objs {
		s.blobs.putPending(o.hash, o.data)
	}
	for d := range newTrees {
		s.pend.dirs[d] = true
	}
}

// Checkpoint folds the writes the journal holds into a commit of the
// branch now, and returns when the branch holds them (or the fold's
// error). What reads the branch from git (a push, git itself) sees every
// write acknowledged before the call.
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.jmu.Lock()
	defer s.jmu.Unlock()
	return s.foldLocked()
}

// foldLocked folds the pending writes into one commit; the caller holds
// jmu. When the branch moved under the store it re-reads the tip, applies
// the pending writes on it again and retries.
func (s *Store) foldLocked() error {
	if s.pend.seq == s.pend.folded {
		return nil
	}
	start := time.Now()
	var commit plumbing.Hash
	var err error
	for attempt := 1; ; attempt++ {
		var lost bool
		commit, lost, err = s.tryFold()
		if err != nil || !lost {
			break
		}
		if attempt >= maxAttempts {
			err = fmt.Errorf("fold state journal: branch %s kept moving under the store (%d attempts)", RefName, attempt)
			break
		}
		s.log.Warn("state branch moved under the store; re-reading the tip and applying the journal on it", "attempt", attempt)
		if err = s.rebase(); err != nil {
			break
		}
	}
	s.foldErr = err
	if s.opts.Observe != nil {
		s.opts.Observe(time.Since(start), err)
	}
	if err != nil {
		return err
	}
	if s.opts.Committed != nil {
		s.opts.Committed(commit.String())
	}
	return nil
}

// tryFold writes the fold commit and moves the ref; lost when the ref on
// disk is not the tip the fold was built on.
func (s *Store) tryFold() (commit plumbing.Hash, lost bool, err error) {
	snap := s.snap
	objs, root, err := s.foldTrees(snap)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	msg := map[string]fileChange{}
	for _, p := range slices.Sorted(maps.Keys(s.pend.changes)) {
		c := s.pend.changes[p]
		if c.deleted {
			if c.existed {
				msg[p] = fileChange{deleted: true}
			}
			continue
		}
		raw, ok := s.blobs.pendingBlob(c.hash)
		if !ok {
			return plumbing.ZeroHash, false, fmt.Errorf("fold state journal: the JSON of %s (blob %s) is not in memory", p, c.hash)
		}
		objs = append(objs, gitObject{typ: plumbing.BlobObject, data: raw, hash: c.hash})
		msg[p] = fileChange{hash: c.hash}
	}
	c := newObject(plumbing.CommitObject, encodeFoldCommit(root, snap.tip, msg, s.pend.seq))
	pack, err := writeCommitPack(s.dir, dedupe(append(objs, c)))
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("fold state journal: %w", err)
	}
	s.addPack(pack)
	if lost, err := moveRef(s.dir, snap.tip, c.hash, false); err != nil || lost {
		if err != nil {
			err = fmt.Errorf("fold state journal: %w", err)
		}
		return plumbing.ZeroHash, lost, err
	}
	s.mu.Lock()
	snap.tip = c.hash
	s.mu.Unlock()
	s.pend = newPending(s.pend.seq)
	s.blobs.dropPending()
	s.jr.reset()
	return c.hash, false, nil
}

// foldTrees encodes the trees changed since the fold, as the tip holds
// them now, checking each against the hash the write path gave it, and
// returns the root's hash.
func (s *Store) foldTrees(snap *snapshot) ([]gitObject, plumbing.Hash, error) {
	var objs []gitObject
	for _, d := range slices.Sorted(maps.Keys(s.pend.dirs)) {
		n, err := snap.trees.tree(d)
		if err != nil {
			return nil, plumbing.ZeroHash, fmt.Errorf("fold state journal: %w", err)
		}
		if n == nil {
			continue // removed since
		}
		obj := newObject(plumbing.TreeObject, encodeTree(n.entries))
		if obj.hash != n.hash {
			return nil, plumbing.ZeroHash, fmt.Errorf("fold state journal: tree %q encodes as %s, not %s", d, obj.hash, n.hash)
		}
		objs = append(objs, obj)
	}
	root := snap.trees.root
	if root == emptyTree {
		objs = append(objs, newObject(plumbing.TreeObject, encodeTree(nil)))
	}
	return objs, root, nil
}

// encodeFoldCommit is encodeCommit with the trailer naming the last frame folded.
func encodeFoldCommit(tree, parent plumbing.Hash, changes map[string]fileChange, seq uint64) []byte {
	b := encodeCommit(tree, parent, changes)
	if len(changes) == 0 {
		b = append(b, "no net change\n"...)
	}
	return append(b, "\n"+seqTrailer+strconv.FormatUint(seq, 10)+"\n"...)
}

// rebase re-reads the branch moved under the store and applies the
// pending writes on it; the caller holds jmu.
func (s *Store) rebase() error {
	snap, problems, err := load(s.dir, nil, nil)
	if err != nil {
		return err
	}
	snap.useBlobs(s.blobs)
	overlay := map[string]*change{}
	for p, c := range s.pend.changes {
		if c.deleted {
			overlay[p] = &change{deleted: true}
			continue
		}
		raw, _ := s.blobs.pendingBlob(c.hash)
		val, err := decodeRecord(p, raw)
		if err != nil {
			return fmt.Errorf("rebase the state journal: %s: %w", p, err)
		}
		overlay[p] = &change{raw: raw, val: val}
	}
	pend := s.pend
	s.pend = newPending(pend.folded)
	s.pend.seq = pend.seq
	changes := keepChanges(snap, overlay)
	newTrees, objs, err := buildTrees(snap.trees, changes)
	if err != nil {
		return fmt.Errorf("rebase the state journal: %w", err)
	}
	for p, c := range changes {
		s.pend.changes[p] = pendChange{hash: c.hash, deleted: c.deleted, existed: snap.files[p] != nil}
	}
	s.stageTrees(newTrees, objs)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap, s.problems = snap, problems
	s.applyLocked(snap, snap.tip, overlay, newTrees)
	return nil
}

// folder folds the journal in the background: once it holds
// Options.FoldBytes, and once no write came for Options.FoldIdle. A failed
// fold is tried again after foldRetry.
func (s *Store) folder() {
	defer s.foldWG.Done()
	var retryAt time.Time // after a failed fold
	for {
		select {
		case <-s.foldStop:
			return
		case <-s.foldKick:
		}
		for {
			s.jmu.Lock()
			idle := time.Until(s.pend.last.Add(s.opts.FoldIdle))
			due := idle <= 0 || s.jr.off >= s.opts.FoldBytes
			due = due && !time.Now().Before(retryAt)
			var err error
			if due && s.pend.seq > s.pend.folded {
				if err = s.foldLocked(); err != nil {
					retryAt = time.Now().Add(foldRetry)
				}
			}
			more := s.pend.seq > s.pend.folded
			s.jmu.Unlock()
			if !more {
				break
			}
			wait := max(idle, time.Until(retryAt))
			select {
			case <-s.foldStop:
				return
			case <-time.After(max(wait, time.Millisecond)):
			case <-s.foldKick:
			}
		}
	}
}

// kickFolder tells the folder a write was logged.
func (s *Store) kickFolder() {
	select {
	case s.foldKick <- struct{}{}:
	default:
	}
}

// pendingBlobs holds the JSON of the records written since the fold, by
// blob hash: the packs do not hold them yet.
type pendingBlobs struct {
	mu    sync.RWMutex
	blobs map[plumbing.Hash][]byte
}

func (b *blobReader) putPending(h plumbing.Hash, raw []byte) {
	b.pending.mu.Lock()
	defer b.pending.mu.Unlock()
	if b.pending.blobs == nil {
		b.pending.blobs = map[plumbing.Hash][]byte{}
	}
	b.pending.blobs[h] = raw
}

// pendingBlob returns blob h when it was written since the fold (not a copy).
func (b *blobReader) pendingBlob(h plumbing.Hash) ([]byte, bool) {
	b.pending.mu.RLock()
	defer b.pending.mu.RUnlock()
	raw, ok := b.pending.blobs[h]
	return raw, ok
}

// dropPending forgets the blobs written since the fold, once the fold's
// pack holds them.
func (b *blobReader) dropPending() {
	b.pending.mu.Lock()
	defer b.pending.mu.Unlock()
	b.pending.blobs = nil
}
