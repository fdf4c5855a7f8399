package state

// Opening the journal: Open replays the frames the branch does not hold yet
// (after the trailer of its newest fold commit), then a writable store
// folds them (see the package documentation, "The journal").

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// foldedSeq is the last journal frame the branch holds: the trailer of
// the newest fold commit on the first-parent chain from tip, looked for
// among maxTrailerWalk commits (commits made by git on top of the store's
// fold no trailer); 0 when none has one. Beside a writer (a read-only
// store) a merge may remove a pack while go-git reads: it is tried afresh.
func foldedSeq(repo string, tip plumbing.Hash) (seq uint64, err error) {
	for try := range readTries {
		if try > 0 {
			time.Sleep(readPause)
		}
		if seq, err = walkTrailer(repo, tip); err == nil {
			return seq, nil
		}
	}
	return 0, err
}

func walkTrailer(repo string, tip plumbing.Hash) (uint64, error) {
	stor := openStorage(repo)
	defer stor.Close()
	return trailerWalk(tip, func(h plumbing.Hash) (*object.Commit, error) { return object.GetCommit(stor, h) })
}

// foldedSeqIn is foldedSeq reading the commits through the store's own
// pack reader (go-git's storage decodes every pack index it opens).
func (s *Store) foldedSeqIn(tip plumbing.Hash) (uint64, error) {
	return trailerWalk(tip, func(h plumbing.Hash) (*object.Commit, error) {
		raw, err := s.blobs.readObject(h, plumbing.CommitObject)
		if err != nil {
			return nil, err
		}
		obj := &plumbing.MemoryObject{}
		obj.SetType(plumbing.CommitObject)
		if _, err := obj.Write(raw); err != nil {
			return nil, err
		}
		c := &object.Commit{}
		return c, c.Decode(obj)
	})
}

// trailerWalk is foldedSeq's walk, reading each commit by read.
func trailerWalk(tip plumbing.Hash, read func(plumbing.Hash) (*object.Commit, error)) (uint64, error) {
	for h, i := tip, 0; !h.IsZero() && i < maxTrailerWalk; i++ {
		c, err := read(h)
		if err != nil {
			return 0, fmt.Errorf("read commit %s: %w", h, err)
		}
		if seq, ok, err := trailerSeq(c.Message); ok || err != nil {
			if err != nil {
				err = fmt.Errorf("commit %s: %w", h, err)
			}
			return seq, err
		}
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return 0, nil
}

// maxTrailerWalk bounds foldedSeq's walk.
const maxTrailerWalk = 1000

// trailerSeq reads the Journal-Seq trailer of a commit message.
func trailerSeq(msg string) (uint64, bool, error) {
	msg = strings.TrimRight(msg, "\n")
	i := strings.LastIndex(msg, "\n"+seqTrailer)
	if i < 0 {
		return 0, false, nil
	}
	seq, err := strconv.ParseUint(msg[i+1+len(seqTrailer):], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("trailer %q: %w", msg[i+1:], err)
	}
	return seq, true, nil
}

// startJournal replays the journal into the loaded state; a writable
// store then folds what it replayed, opens the journal for its appends and
// starts the folder. When that fold fails (a full disk) the store opens
// all the same: appends go after the frames replayed, and the folder tries
// the fold again.
func (s *Store) startJournal() error {
	end, err := s.replay()
	if err != nil || s.opts.ReadOnly {
		return err
	}
	if !s.opts.Journal {
		return s.retireJournal()
	}
	if s.jr, err = openJournal(s.dir, s.opts.FoldBytes+s.opts.FoldBytes/4); err != nil {
		return err
	}
	s.foldKick, s.foldStop = make(chan struct{}, 1), make(chan struct{})
	if err := s.foldLocked(); err != nil {
		s.log.Warn("fold the replayed state journal fails; it is tried again in the background", "err", err)
		s.jr.off = end
		s.kickFolder()
	}
	s.foldWG.Add(1)
	go s.folder()
	return nil
}

// retireJournal folds what a journal left (a server that ran with
// Options.Journal and stopped before folding) for a store that commits
// each batch, and removes the journal: its commits carry no trailer.
func (s *Store) retireJournal() error {
	if s.pend.seq > s.pend.folded {
		if err := s.foldLocked(); err != nil {
			return fmt.Errorf("fold the state journal left: %w", err)
		}
	}
	err := os.Remove(journalPath(s.dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove the state journal: %w", err)
	}
	return syncDirFD(s.dir)
}

// replay applies the journal's frames after the tip's trailer to the
// loaded state and returns the offset after the last one. A read-only
// store, reading beside a writer, takes the frames before a damaged one.
func (s *Store) replay() (int64, error) {
	folded, err := s.ckFolded, error(nil)
	if !s.ckFoldedOK {
		folded, err = foldedSeq(s.dir, s.snap.tip)
	}
	if err != nil {
		return 0, err
	}
	s.pend = newPending(folded)
	data, err := readJournal(s.dir)
	if err != nil {
		return 0, err
	}
	frames, end, err := scanJournal(data, folded)
	if err != nil && s.opts.ReadOnly {
		s.log.Warn("the state journal reads as damaged (a writer may be writing it); its frames before are shown", "err", err)
	} else if err != nil {
		return 0, fmt.Errorf("%s: %w", journalPath(s.dir), err)
	}
	for _, f := range frames {
		overlay := map[string]*change{}
		for _, e := range f.entries {
			c := &change{raw: e.raw, deleted: e.deleted}
			if !e.deleted {
				if c.val, err = decodeRecord(e.path, e.raw); err != nil {
					return 0, fmt.Errorf("%s: frame %d: %s: %w", journalPath(s.dir), f.seq, e.path, err)
				}
			}
			overlay[e.path] = c
		}
		if err := s.warm(s.snap, overlay); err != nil {
			return 0, fmt.Errorf("%s: frame %d: %w", journalPath(s.dir), f.seq, err)
		}
		if err := s.stage(s.snap, overlay, keepChanges(s.snap, overlay)); err != nil {
			return 0, fmt.Errorf("%s: frame %d: %w", journalPath(s.dir), f.seq, err)
		}
		s.pend.seq = f.seq
	}
	if len(frames) > 0 && !s.opts.ReadOnly {
		s.log.Info("replayed the state journal", "frames", len(frames), "from", folded+1, "to", s.pend.seq)
	}
	return end, nil
}

func journalPath(repo string) string { return filepath.Join(repo, journalName) }

// foldForGit folds the journal of a writable store before a read of the
// branch from git (its history); a read-only store shows the branch as the
// writer last folded it (at most FoldIdle behind its last write).
func (s *Store) foldForGit(ctx context.Context) error {
	if s.opts.ReadOnly {
		return nil
	}
	return s.Checkpoint(ctx)
}

// foldLeftJournal folds a journal a stopped server left in repo (Compact
// rewrites the branch from git): a writable Open replays and folds it.
func foldLeftJournal(ctx context.Context, repo string) error {
	if _, err := os.Stat(journalPath(repo)); err != nil {
		return nil // no journal: nothing written since the store had one
	}
	s, err := Open(ctx, repo, Options{Logger: slog.New(slog.DiscardHandler)})
	if errors.Is(err, ErrLocked) {
		return fmt.Errorf("compact: %w: %w", ErrCompactRunning, err)
	}
	if err != nil {
		return fmt.Errorf("compact: fold the journal: %w", err)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("compact: fold the journal: %w", err)
	}
	return nil
}
