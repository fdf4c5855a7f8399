package state

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// Making mailboxes cold: at Close (saveCheckpoint), and in the background
// once memory holds enough finished mailboxes (coldFreezeAt). A freeze
// reads what it takes under the read lock, writes the new cold file with
// no lock held (a background one removes the open checkpoint first: the
// next Close writes it again), and the leader installs it before its next
// batch: the mailboxes it took that no write changed since leave memory;
// the others, and those made warm meanwhile, stay warm.

// coldFreezeAt is how many finished mailboxes memory may hold before a
// background freeze, at least: an eighth of the cold ones above that.
var coldFreezeAt = 1000

// freezing is a freeze under way: what it read of snap.
type freezing struct {
	snap      *snapshot
	tip, root plumbing.Hash // the snapshot's then
	old       *coldFile
	warm      map[string]bool      // the tier's warm mailboxes then
	groups    []coldGroup          // the finished mailboxes it takes
	recs      []map[string]*record // each group's records then, by path
	file      *coldFile            // the file written; nil until then
}

// captureFreeze reads what a freeze of snap takes; the caller holds the
// store's lock (read or write).
func captureFreeze(snap *snapshot) (*freezing, error) {
	groups, err := snap.finishedGroups()
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", coldName, err)
	}
	f := &freezing{snap: snap, tip: snap.tip, root: snap.trees.root, groups: groups, warm: map[string]bool{}}
	if snap.cold != nil {
		f.old = snap.cold.file
		for d := range snap.cold.warm {
			f.warm[d] = true
		}
	}
	for _, g := range groups {
		recs := make(map[string]*record, len(g.entries))
		for _, e := range g.entries {
			recs[e.path] = snap.files[e.path]
		}
		f.recs = append(f.recs, recs)
	}
	return f, nil
}

// write writes the cold file of f into repo. A background freeze first
// removes the open checkpoint (dropCk): it names the file this one
// replaces, and a store that stops before its Close writes the next one
// (a crash) reads every record at its next Open, as after any crash that
// moved the branch.
func (f *freezing) write(repo string, dropCk bool) error {
	path := filepath.Join(repo, coldName)
	if dropCk {
		if err := os.Remove(checkpointPath(repo)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("write %s: remove the checkpoint naming the last one: %w", coldName, err)
		}
		if err := syncDirFD(repo); err != nil {
			return fmt.Errorf("write %s: %w", coldName, err)
		}
	}
	if err := writeColdFile(path, f.tip, f.root, f.old, f.warm, f.groups); err != nil {
		return err
	}
	file, err := openColdFile(path, false)
	if err != nil {
		return fmt.Errorf("write %s: read it back: %w", coldName, err)
	}
	f.file = file
	return nil
}

// install makes f's file the snapshot's tier; the caller holds the store's
// write lock, and no write runs.
func (f *freezing) install() error {
	snap := f.snap
	warm := map[string]bool{}
	if snap.cold != nil {
		for d := range snap.cold.warm {
			if !f.warm[d] { // made warm since: the new file holds it as it was
				warm[d] = true
			}
		}
	}
	var frozen []coldGroup
	for i, g := range f.groups {
		if f.unchanged(i) {
			frozen = append(frozen, g)
		} else {
			warm[g.dir] = true
		}
	}
	n := f.file.f.Table(coldRecords).Len()
	for d := range warm {
		for _, err := range f.file.paths(d + "/") {
			if err != nil {
				return fmt.Errorf("install %s: %w", coldName, err)
			}
			n--
		}
	}
	if f.old != nil {
		f.old.Close()
	}
	snap.cold = &coldTier{file: f.file, warm: warm}
	snap.freeze(frozen)
	snap.cold.n = n
	return nil
}

// unchanged reports whether group i is as f read it: the same records,
// the mailbox still finished.
func (f *freezing) unchanged(i int) bool {
	g := &f.groups[i]
	paths := f.snap.listFiles(g.dir, true)
	if len(paths) != len(f.recs[i]) {
		return false
	}
	for _, p := range paths {
		if r := f.snap.files[p]; r == nil || r != f.recs[i][p] {
			return false
		}
	}
	_, open := f.snap.openMailboxes[g.dir+"/mailbox.json"]
	return !open
}

// writeColdFile writes the cold file at path: to a temporary file, synced
// and renamed, the folder synced.
func writeColdFile(path string, tip, root plumbing.Hash, old *coldFile, gone map[string]bool, groups []coldGroup) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", coldName, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = writeCold(w, tip, root, old, gone, groups)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", coldName, err)
	}
	return syncDirFD(filepath.Dir(path))
}

// freezeCold writes what f read and installs it at once; no write runs
// (Close).
func (s *Store) freezeCold(f *freezing) error {
	if err := f.write(s.dir, false); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return f.install()
}

// hotFinished is how many finished mailboxes memory holds; the caller
// leads or holds the lock.
func (s *snapshot) hotFinished() int {
	return len(s.mailboxFiles) - len(s.openMailboxes)
}

// maybeFreeze starts a background freeze when memory holds enough finished
// mailboxes and none is under way; the leader calls it after a batch.
func (s *Store) maybeFreeze() {
	if !useCheckpoint || s.opts.ReadOnly || s.freezeRunning.Load() {
		return
	}
	s.mu.RLock() // the folder may change the snapshot meanwhile
	cold := 0
	if s.snap.cold != nil {
		cold = s.snap.cold.file.f.Table(coldMailboxes).Len()
	}
	due := s.snap.hotFinished() >= max(coldFreezeAt, cold/8)
	s.mu.RUnlock()
	if !due {
		return
	}
	s.freezeMu.Lock()
	defer s.freezeMu.Unlock()
	if s.freezeStopped { // Close has begun: no file is written after it
		return
	}
	s.freezeRunning.Store(true)
	s.freezeWG.Add(1)
	go func() {
		defer s.freezeWG.Done()
		s.mu.RLock()
		f, err := captureFreeze(s.snap)
		s.mu.RUnlock()
		if err == nil {
			err = f.write(s.dir, true)
		}
		if err != nil {
			s.log.Warn("making finished state mailboxes cold fails; they stay in memory", "err", err)
			s.freezeRunning.Store(false)
			return
		}
		s.freezeMu.Lock()
		s.freezeDone = f
		s.freezeMu.Unlock()
	}()
}

// stopFreezes lets no background freeze start and waits for the one under
// way; Close calls it before it installs that freeze and writes its own.
func (s *Store) stopFreezes() {
	s.freezeMu.Lock()
	s.freezeStopped = true
	s.freezeMu.Unlock()
	s.freezeWG.Wait()
}

// installFreeze installs a background freeze that ended; the leader calls
// it before a batch, and Close before its checkpoint.
func (s *Store) installFreeze() {
	s.freezeMu.Lock()
	f := s.freezeDone
	s.freezeDone = nil
	s.freezeMu.Unlock()
	if f == nil {
		return
	}
	defer s.freezeRunning.Store(false)
	if s.jr != nil {
		s.jmu.Lock()
		defer s.jmu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap != f.snap { // the tip was read again since: the file names mailboxes of another snapshot
		f.file.Close()
		return
	}
	if err := f.install(); err != nil {
		s.log.Warn("making finished state mailboxes cold fails; they stay in memory", "err", err)
	}
}
