package state

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// record is one file of the branch tip: its blob and decoded value (nil for
// generic records), or why it could not be decoded. Its JSON stays in the
// packs (snapshot.body reads it). A run's value is its runLite and an llm
// session's its sessionLite: the queries returning them whole read them
// from their bodies (snapshot.run, snapshot.session).
type record struct {
	hash plumbing.Hash
	val  any
	err  *UnreadableError
}

// snapshot is the committed tip: files, their paths in order, the root
// tree and the indexes derived from them. The committer mutates it only
// under Store.mu, after the ref moved.
type snapshot struct {
	tip   plumbing.Hash
	blobs *blobReader // reads the records' JSON
	files map[string]*record
	paths *pathSet  // the keys of files, in order
	trees *tipTrees // read from the packs by the committer

	mailboxes     map[string]*mailboxIndex // by mailbox id
	mailboxFiles  map[string]struct{}      // paths of mailbox records
	openMailboxes map[string]struct{}      // paths of the mailbox records not finished (unreadable ones too)
	runs          map[string]string        // run id -> path
	sessionsByRun runSessions              // run id -> llm session paths (a run has a few)
	routes        map[Route]string         // how events find an issue mailbox -> its path (routes.go)
	routeClaims   map[Route][]string       // the other mailboxes claiming a route
	ov            overview                 // the overview's lists and totals (list.go)
	cold          *coldTier                // the finished mailboxes kept on disk (nil: none)
}

// Route is what an event without an issue number names an issue mailbox
// by, within one project: its merge request, its branch or its head commit.
type Route struct {
	Forge, Owner, Project string
	By                    RouteKind
	Value                 string
}

// RouteKind says what a Route's value is.
type RouteKind string

// Route kinds.
const (
	ByMergeRequest RouteKind = "merge_request" // the number, in decimal
	ByBranch       RouteKind = "branch"
	ByHead         RouteKind = "head"
)

// routesOf are the routes to an issue mailbox.
func routesOf(m *Mailbox) []Route {
	if m.Kind != KindIssue {
		return nil
	}
	var out []Route
	add := func(by RouteKind, v string) {
		if v != "" {
			out = append(out, Route{Forge: m.Forge, Owner: m.Owner, Project: m.Project, By: by, Value: v})
		}
	}
	if m.MergeRequestIID != 0 {
		add(ByMergeRequest, strconv.FormatInt(m.MergeRequestIID, 10))
	}
	add(ByBranch, m.BranchName)
	add(ByHead, m.HeadSHA)
	return out
}

// mailboxIndex holds what the session resolver asks of one mailbox.
type mailboxIndex struct {
	sessions []*sessionLite              // ordered by (CreatedAt, ID)
	bad      map[string]*UnreadableError // unreadable llm sessions by path
}

// snapSizes are how many records of each kind a snapshot is made for.
// routes, when known (an open checkpoint says), is how many routes.
type snapSizes struct{ files, mailboxes, runs, sessions, routes int }

func (z *snapSizes) count(path string) {
	z.files++
	switch kindOf(path) {
	case "mailbox":
		z.mailboxes++
	case "run":
		z.runs++
	case "llm_session":
		z.sessions++
	}
}

// newSnapshot returns an empty snapshot whose maps are sized for z.
func newSnapshot(z snapSizes) *snapshot {
	return &snapshot{
		files:         make(map[string]*record, z.files),
		paths:         newPathSet(nil),
		trees:         &tipTrees{root: emptyTree},
		mailboxes:     make(map[string]*mailboxIndex, z.mailboxes),
		mailboxFiles:  make(map[string]struct{}, z.mailboxes),
		openMailboxes: map[string]struct{}{},
		runs:          make(map[string]string, z.runs),
		sessionsByRun: newRunSessions(z.runs),
		routes:        make(map[Route]string, max(z.mailboxes, z.routes)),
		routeClaims:   map[Route][]string{},
		ov:            newOverview(z),
	}
}

// mailboxIDOf returns the mailbox id of a path under mailboxes/, built from
// its escaped segments: mailboxes/{forge}/{owner}/{project}/{kind}/{bucket}/{iid}/...
func mailboxIDOf(path string) (id, rest string, ok bool) {
	var cut [7]int // where the first seven slashes are
	n := 0
	for i := 0; i < len(path) && n < len(cut); i++ {
		if path[i] == '/' {
			cut[n] = i
			n++
		}
	}
	if n < len(cut) || path[:cut[0]] != "mailboxes" {
		return "", "", false
	}
	return path[cut[0]+1:cut[4]] + path[cut[5]:cut[6]], path[cut[6]+1:], true
}

// lastSegment returns the file name of path without ".json".
func recordName(path string) string {
	_, base := parentDir(path)
	return strings.TrimSuffix(base, ".json")
}

// sessionLess orders llm sessions by (CreatedAt, ID).
func sessionLess(a, b *sessionLite) bool {
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.ID < b.ID
}

// llmSessionLess is sessionLess for whole sessions.
func llmSessionLess(a, b *LLMSession) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

func (s *snapshot) mailbox(id string) *mailboxIndex {
	m := s.mailboxes[id]
	if m == nil {
		m = &mailboxIndex{}
		s.mailboxes[id] = m
	}
	return m
}

// index adds the record at path to the indexes.
func (s *snapshot) index(path string, r *record) {
	kind := kindOf(path)
	var mbID string
	if kind == "mailbox" || kind == "run" || kind == "llm_session" {
		mbID, _, _ = mailboxIDOf(path)
	}
	defer s.ovIndex(path, mbID, r)
	switch kind {
	case "mailbox":
		s.mailboxFiles[path] = struct{}{}
		m, ok := r.val.(*Mailbox)
		if !ok || r.err != nil {
			if _, done := r.val.(*mailboxLite); !done || r.err != nil {
				s.openMailboxes[path] = struct{}{} // a finished one comes lightened from an open checkpoint, its routes set
			}
			return
		}
		if !m.Finished() {
			s.openMailboxes[path] = struct{}{}
		}
		for _, rt := range routesOf(m) {
			s.claimRoute(rt, path)
		}
		lightenMailbox(r)
	case "run":
		if cur, ok := s.runs[recordName(path)]; !ok || path > cur { // of two runs of one id, the greatest path, as routes
			s.runs[recordName(path)] = path
		}
		s.ov.lighten(path, r)
	case "llm_session":
		if mbID == "" {
			return
		}
		m := s.mailbox(mbID)
		if r.err != nil {
			if m.bad == nil {
				m.bad = map[string]*UnreadableError{}
			}
			m.bad[path] = r.err
			return
		}
		lightenSession(path, r)
		ls := r.val.(*sessionLite)
		i := sort.Search(len(m.sessions), func(i int) bool { return sessionLess(ls, m.sessions[i]) })
		m.sessions = append(m.sessions, nil)
		copy(m.sessions[i+1:], m.sessions[i:])
		m.sessions[i] = ls
		s.sessionsByRun.add(ls.RunID, path)
	}
}

// unindex removes the record at path from the indexes.
func (s *snapshot) unindex(path string, r *record) {
	defer s.ovUnindex(path, r)
	switch kindOf(path) {
	case "mailbox":
		delete(s.mailboxFiles, path)
		delete(s.openMailboxes, path)
		s.unrouteMailbox(path, r)
	case "run":
		if s.runs[recordName(path)] == path {
			delete(s.runs, recordName(path))
		}
	case "llm_session":
		mbID, _, ok := mailboxIDOf(path)
		m := s.mailboxes[mbID]
		if !ok || m == nil {
			return
		}
		if r.err != nil {
			delete(m.bad, path)
		} else {
			ls := r.val.(*sessionLite)
			for i, x := range m.sessions {
				if x == ls {
					m.sessions = append(m.sessions[:i], m.sessions[i+1:]...)
					break
				}
			}
			s.sessionsByRun.remove(ls.RunID, path)
		}
		if len(m.sessions) == 0 && len(m.bad) == 0 {
			delete(s.mailboxes, mbID)
		}
	}
}

// useBlobs makes the snapshot read the records' JSON and the trees through
// b, with a tree cache of its own.
func (s *snapshot) useBlobs(b *blobReader) {
	s.blobs = b
	s.trees.cache = newTreeCache(func(h plumbing.Hash) ([]byte, error) { return b.readObject(h, plumbing.TreeObject) })
}

// setFile installs record r at path in files and paths (not the indexes).
func (s *snapshot) setFile(path string, r *record) {
	if _, ok := s.files[path]; !ok {
		s.paths.add(path)
	}
	s.files[path] = r
}

// deleteFile removes path from files and paths (not the indexes).
func (s *snapshot) deleteFile(path string) {
	if _, ok := s.files[path]; ok {
		s.paths.remove(path)
		delete(s.files, path)
	}
}

// setTrees installs a commit's trees: its root, and the trees it wrote,
// cached for the next commit, which likely writes in the same folders.
func (s *snapshot) setTrees(changed map[string]*treeNode) {
	for _, n := range changed {
		s.trees.cache.put(n.hash, n.entries)
	}
	s.trees.root = changed[""].hash
}

// now is the clock of record timestamps.
var now = func() time.Time { return time.Now().UTC() }

// mailboxLite is what memory keeps of a finished mailbox (Mailbox.Finished):
// what the overview's filters and order ask of it. Its status is
// MailboxDone and it has no run in progress; the queries returning it read
// it whole from its body (snapshot.wholeMailbox).
type mailboxLite struct {
	Title       string
	t           int64 // timeKey(UpdatedAt)
	quarantined bool  // it holds quarantined events
}

// lightenMailbox replaces the value of a finished mailbox by its
// mailboxLite.
func lightenMailbox(r *record) {
	m, ok := r.val.(*Mailbox)
	if !ok || r.err != nil || !m.Finished() {
		return
	}
	r.val = &mailboxLite{Title: m.Title, t: timeKey(m.UpdatedAt), quarantined: len(m.Quarantined) > 0}
}

// mailbox returns a copy of the whole mailbox at path, read from its body
// when memory keeps its mailboxLite.
func (s *snapshot) wholeMailbox(path string, r *record) (Mailbox, error) {
	if m, ok := r.val.(*Mailbox); ok {
		c := *m
		c.Labels = slices.Clone(m.Labels)
		c.Quarantined = slices.Clone(m.Quarantined)
		return c, nil
	}
	raw, err := s.body(r)
	if err != nil {
		return Mailbox{}, fmt.Errorf("read mailbox %s: %w", path, err)
	}
	v, err := decodeRecord(path, raw)
	if err != nil {
		return Mailbox{}, fmt.Errorf("read mailbox %s: %w", path, err)
	}
	m, ok := v.(*Mailbox)
	if !ok {
		return Mailbox{}, fmt.Errorf("read mailbox %s: not a mailbox", path)
	}
	return *m, nil
}

// mailboxFacts are what the overview's mailbox filters ask of a
// mailbox's value in memory (a *Mailbox or a finished one's *mailboxLite).
func mailboxFacts(v any) (status, title string, quarantined bool) {
	switch m := v.(type) {
	case *Mailbox:
		return m.Status, m.Title, len(m.Quarantined) > 0
	case *mailboxLite:
		return MailboxDone, m.Title, m.quarantined
	}
	return "", "", false
}

// unrouteMailbox removes the routes to the mailbox at path, whose record
// r is leaving the tip. A finished mailbox's routes are read from its body,
// or, when that fails, found by a pass over the routes.
func (s *snapshot) unrouteMailbox(path string, r *record) {
	if r.err != nil {
		return
	}
	if _, ok := r.val.(*mailboxLite); ok {
		m, err := s.wholeMailbox(path, r)
		if err != nil {
			for rt, p := range s.routes {
				if p == path {
					s.unclaimRoute(rt, path)
				}
			}
			for rt, others := range s.routeClaims {
				if slices.Contains(others, path) {
					s.unclaimRoute(rt, path)
				}
			}
			return
		}
		r = &record{val: &m}
	}
	if m, ok := r.val.(*Mailbox); ok {
		for _, rt := range routesOf(m) {
			s.unclaimRoute(rt, path)
		}
	}
}

// mailboxTime is the overview's time key of a mailbox's value in memory:
// timeKey(UpdatedAt).
func mailboxTime(v any) int64 {
	if m, ok := v.(*mailboxLite); ok {
		return m.t
	}
	return timeKey(v.(*Mailbox).UpdatedAt)
}
