package state

import (
	"iter"
	"slices"
)

// runSessions maps a run id to the paths of its llm sessions. Most runs
// have one: its path is the value of one (16 bytes a run, where a slice
// would take 24 and an allocation); the rare runs with more keep the
// others in more.
type runSessions struct {
	one  map[string]string
	more map[string][]string // the second path on
}

func newRunSessions(runs int) runSessions {
	return runSessions{one: make(map[string]string, runs), more: map[string][]string{}}
}

// add records path as a session of run; it does nothing when it is one.
func (r runSessions) add(run, path string) {
	first, ok := r.one[run]
	switch {
	case !ok:
		r.one[run] = path
	case first != path && !slices.Contains(r.more[run], path):
		r.more[run] = append(r.more[run], path)
	}
}

// remove forgets path as a session of run.
func (r runSessions) remove(run, path string) {
	if first, ok := r.one[run]; !ok {
		return
	} else if first != path {
		if more := slices.DeleteFunc(r.more[run], func(p string) bool { return p == path }); len(more) > 0 {
			r.more[run] = more
		} else {
			delete(r.more, run)
		}
		return
	}
	more := r.more[run]
	if len(more) == 0 {
		delete(r.one, run)
		return
	}
	r.one[run] = more[0]
	if more = more[1:]; len(more) > 0 {
		r.more[run] = more
	} else {
		delete(r.more, run)
	}
}

// of yields the session paths of run, in no particular order.
func (r runSessions) of(run string) iter.Seq[string] {
	return func(yield func(string) bool) {
		first, ok := r.one[run]
		if !ok || !yield(first) {
			return
		}
		for _, p := range r.more[run] {
			if !yield(p) {
				return
			}
		}
	}
}

// all yields every run and session path.
func (r runSessions) all() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for run := range r.one {
			for p := range r.of(run) {
				if !yield(run, p) {
					return
				}
			}
		}
	}
}
