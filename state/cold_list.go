package state

import (
	"iter"
)

// The overview's lists of the cold mailboxes are tables of the cold file
// (coldMailboxes, coldRunsByTime, all and by project); the queries merge
// them with memory's, newest first, skipping the mailboxes made warm.

// coldSource is one cold list: its entries, newest first.
type coldSource = iter.Seq2[coldListEntry, error]

// coldLists returns the cold lists of table name a query reads: the one of
// all projects, or those of the projects selected.
func (s *snapshot) coldLists(name string, sel projSel, after *ovKey) []coldSource {
	if s.cold == nil {
		return nil
	}
	if sel.all {
		return []coldSource{s.cold.file.list(name, "", after)}
	}
	var out []coldSource
	for _, p := range sel.list {
		if p.cold > 0 {
			out = append(out, s.cold.file.list(name, p.key, after))
		}
	}
	return out
}

// coldMailboxEntry is the overview entry of a cold mailbox list entry
// (false for a mailbox made warm). Its record holds the values of the
// entry, not its blob: row reads the record.
func (s *snapshot) coldMailboxEntry(ce coldListEntry) (*mbEntry, bool) {
	if s.cold.warm[mailboxDirOf(ce.path)] {
		return nil, false
	}
	r := &record{val: &mailboxLite{Title: ce.title, t: ce.k.t, quarantined: ce.quarantined}}
	return &mbEntry{r: r, path: ce.path, proj: s.ov.projects[projectKey(ce.k.id)], k: ce.k}, true
}

// coldRunEntry is the overview entry of a cold run list entry (false for
// a run of a mailbox made warm or of an unknown class).
func (s *snapshot) coldRunEntry(ce coldListEntry) (*runEntry, bool) {
	c, ok := s.ov.classIDs[ce.class]
	if !ok || s.cold.warm[mailboxDirOf(ce.path)] {
		return nil, false
	}
	mbID, _, _ := mailboxIDOf(ce.path)
	return &runEntry{r: &runLite{ID: ce.k.id, t: ce.k.t, class: c}, path: ce.path, proj: s.ov.projects[projectKey(mbID)], k: ce.k}, true
}

// mergeDesc yields the entries of hot and of the cold lists, each newest
// first, newest first; mk makes an entry of a cold one (false: skip it).
func mergeDesc[T keyed](hot iter.Seq[T], cold []coldSource, mk func(coldListEntry) (T, bool)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		if len(cold) == 0 {
			for x := range hot {
				if !yield(x, nil) {
					return
				}
			}
			return
		}
		type head struct {
			x  T
			ok bool
		}
		nextHot, stopHot := iter.Pull(hot)
		defer stopHot()
		nexts := make([]func() (coldListEntry, error, bool), len(cold))
		for i, c := range cold {
			next, stop := iter.Pull2(c)
			defer stop()
			nexts[i] = next
		}
		heads := make([]head, 1+len(cold))
		var zero T
		advance := func(i int) error {
			if i == 0 {
				x, ok := nextHot()
				heads[0] = head{x, ok}
				return nil
			}
			for {
				ce, err, ok := nexts[i-1]()
				if err != nil {
					return err
				}
				if !ok {
					heads[i] = head{zero, false}
					return nil
				}
				if x, use := mk(ce); use {
					heads[i] = head{x, true}
					return nil
				}
			}
		}
		for i := range heads {
			if err := advance(i); err != nil {
				yield(zero, err)
				return
			}
		}
		for {
			best := -1
			for i, h := range heads {
				if h.ok && (best < 0 || heads[best].x.key().less(h.x.key())) {
					best = i
				}
			}
			if best < 0 || !yield(heads[best].x, nil) {
				return
			}
			if err := advance(best); err != nil {
				yield(zero, err)
				return
			}
		}
	}
}
