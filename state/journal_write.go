package state

// The journal's write path (Options.Journal): a batch's changes become one
// frame appended to the journal and synced; the in-memory state changes
// and the callers are answered. fold.go makes commits of them.

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// commitLogged makes a batch durable: one journal frame, appended and
// synced (logBatch), then answers its callers and tells the folder.
func (s *Store) commitLogged(batch []*request) {
	start := time.Now()
	results := make([]error, len(batch))
	s.jmu.Lock()
	logged, err := s.logBatch(batch, results)
	quiet := err == nil && s.foldErr != nil // the store is not healthy until a fold succeeds
	s.jmu.Unlock()
	s.answer(batch, results, err)
	if (logged || err != nil) && !quiet && s.opts.Observe != nil {
		s.opts.Observe(time.Since(start), err)
	}
	if !logged {
		return
	}
	// A journal past FoldBytes is folded by the leader, its callers answered:
	// the writers waiting meanwhile queue into the next batch.
	s.jmu.Lock()
	full := s.jr.off >= s.opts.FoldBytes && s.foldErr == nil
	if full {
		s.foldLocked() // its error goes to Observe; the folder tries again
	}
	s.jmu.Unlock()
	s.kickFolder()
}

// logBatch applies the batch to a fresh overlay, appends its changes to
// the journal as one frame and installs them; the caller holds jmu. It
// returns whether it logged a frame (not when the batch changes nothing).
// When the frame does not fit in the journal, the journal is folded first
// and the batch run again on the tip the fold left.
func (s *Store) logBatch(batch []*request, results []error) (bool, error) {
	for attempt := 0; ; attempt++ {
		snap := s.snap // only the leader and the fold, under jmu, replace or mutate it
		overlay := runBatch(snap, batch, results)
		if err := s.warm(snap, overlay); err != nil {
			return false, fmt.Errorf("commit state: %w", err)
		}
		changes := keepChanges(snap, overlay)
		if len(changes) == 0 {
			return false, nil
		}
		entries := make([]journalEntry, 0, len(overlay))
		for _, p := range slices.Sorted(maps.Keys(overlay)) {
			c := overlay[p]
			entries = append(entries, journalEntry{path: p, raw: c.raw, deleted: c.deleted})
		}
		newTrees, objs, err := buildTrees(snap.trees, changes)
		if err != nil {
			return false, fmt.Errorf("commit state: %w", err)
		}
		frame := encodeFrame(s.pend.seq+1, entries)
		if attempt == 0 && !s.jr.fits(len(frame)) && s.pend.seq > s.pend.folded {
			if err := s.foldLocked(); err != nil {
				return false, fmt.Errorf("commit state: the journal is full and its fold failed: %w", err)
			}
			continue
		}
		if err := s.jr.appendFrame(frame); err != nil {
			return false, fmt.Errorf("commit state: %w", err)
		}
		s.pend.seq++
		s.pend.last = time.Now()
		s.install(snap, overlay, changes, newTrees, objs)
		return true, nil
	}
}
