package state

import (
	"errors"
	"fmt"
	"sort"
)

// Queries read the committed tip from memory under a read lock; they never
// touch the disk. Records come back as copies. A query that meets an
// unreadable record returns the readable ones together with an error that
// wraps each *UnreadableError (use errors.As).

// Tip returns the commit the branch points at ("" for an empty branch).
func (s *Store) Tip() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.snap.tip.IsZero() {
		return ""
	}
	return s.snap.tip.String()
}

// Problems lists the unreadable records of the tip, by path.
func (s *Store) Problems() []*UnreadableError {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := append([]*UnreadableError(nil), s.problems...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Get returns the raw JSON of the record at path.
func (s *Store) Get(path string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.snap.rec(path)
	if r == nil {
		return nil, fmt.Errorf("get %s: %w", path, ErrNotFound)
	}
	if r.err != nil {
		return nil, r.err
	}
	raw, err := s.snap.body(r)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", path, err)
	}
	return raw, nil
}

// List returns the record paths under dir, recursively, in path order.
func (s *Store) List(dir string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.snap.listFiles(dir, true)
}

// Len returns how many records the tip holds.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := len(s.snap.files)
	if s.snap.cold != nil {
		n += s.snap.cold.n
	}
	return n
}

// valueLocked returns the typed value at path; the caller holds s.mu.
func (s *Store) valueLocked(path string) (any, error) {
	r, err := s.recordLocked(path)
	if err != nil {
		return nil, err
	}
	return r.val, nil
}

// recordLocked returns the readable record at path; the caller holds s.mu.
func (s *Store) recordLocked(path string) (*record, error) {
	r := s.snap.rec(path)
	if r == nil {
		return nil, fmt.Errorf("get %s: %w", path, ErrNotFound)
	}
	if r.err != nil {
		return nil, r.err
	}
	return r, nil
}

// runLocked returns the whole run at path; the caller holds s.mu.
func (s *Store) runLocked(path string) (Run, error) {
	r, err := s.recordLocked(path)
	if err != nil {
		return Run{}, err
	}
	return s.snap.run(path, r)
}

// Mailbox returns the mailbox with key k (forge, owner, project, kind, iid).
func (s *Store) Mailbox(k MailboxKey) (Mailbox, error) {
	if err := k.validate(); err != nil {
		return Mailbox{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mailboxLocked(k.dir() + "/mailbox.json")
}

// mailboxLocked returns the whole mailbox at path; the caller holds s.mu.
func (s *Store) mailboxLocked(path string) (Mailbox, error) {
	r, err := s.recordLocked(path)
	if err != nil {
		return Mailbox{}, err
	}
	return s.snap.wholeMailbox(path, r)
}

// Routed returns the issue mailbox that rt names, from an index: routing an
// event costs the same however many mailboxes there are.
func (s *Store) Routed(rt Route) (Mailbox, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.snap.routed(rt)
	if !ok {
		return Mailbox{}, false, nil
	}
	m, err := s.mailboxLocked(p)
	if err != nil {
		return Mailbox{}, false, err
	}
	return m, true, nil
}

// Mailboxes returns every mailbox record, in path order.
func (s *Store) Mailboxes() ([]Mailbox, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	// From the index of mailbox records: walking the mailboxes tree would
	// visit every run and llm session too. The cold file's are read from
	// its records in order.
	paths := s.snap.coldMailboxPaths()
	for p := range s.snap.mailboxFiles {
		paths = append(paths, p)
	}
	return s.mailboxesLocked(paths)
}

// OpenMailboxes returns the mailboxes that are not finished (see
// Mailbox.Finished), in path order, from an index kept as records change:
// its cost follows the open mailboxes, not all of them. An unreadable
// mailbox record might be open: its error is returned with the others.
func (s *Store) OpenMailboxes() ([]Mailbox, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	paths := make([]string, 0, len(s.snap.openMailboxes))
	for p := range s.snap.openMailboxes {
		paths = append(paths, p)
	}
	return s.mailboxesLocked(paths)
}

// mailboxesLocked returns the mailboxes at paths, in path order; the
// caller holds s.mu.
func (s *Store) mailboxesLocked(paths []string) ([]Mailbox, error) {
	sort.Strings(paths)
	var out []Mailbox
	var errs []error
	for _, p := range paths {
		m, err := s.mailboxLocked(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// Runs returns the runs of a mailbox ordered by CreatedAt, then ID.
func (s *Store) Runs(mailboxID string) ([]Run, error) {
	dir, err := mailboxDir(mailboxID)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Run
	var errs []error
	for _, p := range s.snap.listFiles(dir+"/runs", false) {
		run, err := s.runLocked(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, run)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, errors.Join(errs...)
}

// RunWithSessions returns a run by id and its llm sessions ordered by
// CreatedAt, then ID.
func (s *Store) RunWithSessions(runID string) (Run, []LLMSession, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.snap.runPath(escapeSegment(runID))
	if !ok {
		return Run{}, nil, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	run, err := s.runLocked(p)
	if err != nil {
		return Run{}, nil, err
	}
	var sessions []LLMSession
	var errs []error
	paths, err := s.snap.sessionsOfRun(runID, p)
	if err != nil {
		errs = append(errs, err)
	}
	for _, sp := range paths {
		ls, err := s.snap.session(sp, s.snap.rec(sp))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sessions = append(sessions, ls)
	}
	sort.Slice(sessions, func(i, j int) bool { return llmSessionLess(&sessions[i], &sessions[j]) })
	// Sessions of this mailbox that cannot be read might belong to the run.
	if mbID, _, ok := mailboxIDOf(p); ok {
		if m := s.snap.mailboxes[mbID]; m != nil {
			for _, e := range m.bad {
				errs = append(errs, e)
			}
		}
	}
	return run, sessions, errors.Join(errs...)
}

// PriorSession returns the latest llm session of the mailbox for adapterID
// with a native session id, ignoring those of run excludeRunID (the run
// asking). found is false when there is none. An error wrapping
// *UnreadableError comes with the result when some llm session of the
// mailbox cannot be read, since it might be the latest.
func (s *Store) PriorSession(mailboxID, adapterID, excludeRunID string) (ls LLMSession, found bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, err := s.snap.mailboxIndexOf(mailboxID)
	if m == nil {
		return LLMSession{}, false, err
	}
	for i := len(m.sessions) - 1; i >= 0; i-- {
		x := m.sessions[i]
		if x.AdapterID == adapterID && x.native && x.RunID != excludeRunID {
			if ls, err = s.snap.session(x.path, s.snap.rec(x.path)); err != nil {
				return LLMSession{}, false, err
			}
			found = true
			break
		}
	}
	if len(m.bad) > 0 {
		err = m.badErr()
	}
	return ls, found, err
}

// FailedResumes counts the latest llm sessions of the mailbox for
// adapterID, newest first, that tried to resume nativeID and failed without
// falling back (a failure the adapter did not recognise), ignoring run
// excludeRunID; it stops at the first that did anything else.
func (s *Store) FailedResumes(mailboxID, adapterID, nativeID, excludeRunID string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, _ := s.snap.mailboxIndexOf(mailboxID) // a cold mailbox that cannot be read has no failure to count
	if m == nil {
		return 0
	}
	n := 0
	for i := len(m.sessions) - 1; i >= 0; i-- {
		x := m.sessions[i]
		if x.AdapterID != adapterID || x.RunID == excludeRunID {
			continue
		}
		if x.ResumeOf == nil || *x.ResumeOf != nativeID || !x.failed || x.fallback {
			break
		}
		n++
	}
	return n
}

// OtherAdapterSession reports whether an adapter other than adapterID has an
// llm session with a native session id in the mailbox.
func (s *Store) OtherAdapterSession(mailboxID, adapterID string) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, err := s.snap.mailboxIndexOf(mailboxID)
	if m == nil {
		return false, err
	}
	if len(m.bad) > 0 {
		err = m.badErr()
	}
	for _, x := range m.sessions {
		if x.AdapterID != adapterID && x.native {
			return true, err
		}
	}
	return false, err
}

func (m *mailboxIndex) badErr() error {
	errs := make([]error, 0, len(m.bad))
	for _, e := range m.bad {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// Installations returns the detected agent installations in path order.
func (s *Store) Installations() ([]AgentInstallation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []AgentInstallation
	var errs []error
	for _, p := range s.snap.listFiles("installations", true) {
		v, err := s.valueLocked(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *v.(*AgentInstallation))
	}
	return out, errors.Join(errs...)
}

// Settings returns the overrides set at one scope: organization (forge,
// owner; project empty) or project (forge, owner, project), by key.
func (s *Store) Settings(scope, forge, owner, project string) ([]SettingOverride, error) {
	dir, err := settingsDir(scope, forge, owner, project)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []SettingOverride
	var errs []error
	for _, p := range s.snap.listFiles(dir, false) {
		v, err := s.valueLocked(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o := *v.(*SettingOverride)
		o.Value = append([]byte(nil), o.Value...)
		out = append(out, o)
	}
	return out, errors.Join(errs...)
}
