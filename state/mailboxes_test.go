package state

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestMailboxesIndex lists mailbox records, not their runs and sessions,
// through writes, deletes and a reopen.
func TestMailboxesIndex(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state.git")
	s := openStore(t, dir)
	err := s.Update(ctx, func(tx *Tx) error {
		for iid := int64(1); iid <= 3; iid++ {
			m := testMailbox(iid)
			if err := tx.PutMailbox(m); err != nil {
				return err
			}
			id := m.Key().ID()
			if err := tx.PutRun(Run{ID: "r", MailboxID: id, Status: RunSucceeded}); err != nil {
				return err
			}
			if err := tx.PutLLMSession(LLMSession{ID: "s", RunID: "r", MailboxID: id, AdapterID: "fake"}); err != nil {
				return err
			}
		}
		return tx.DeleteMailbox(testMailbox(2).Key())
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		mbs, err := s.Mailboxes()
		if err != nil || len(mbs) != 2 || mbs[0].IID != 1 || mbs[1].IID != 3 {
			t.Fatalf("Mailboxes() = %+v, %v; want issues 1 and 3", mbs, err)
		}
	}
	check(s)
	s.Close()
	check(openStore(t, dir))
}

// TestRouted finds an issue mailbox by its merge request, branch or head
// through writes, a moved head, a delete and a reopen.
func TestRouted(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state.git")
	s := openStore(t, dir)
	m := testMailbox(7)
	m.MergeRequestIID, m.BranchName, m.HeadSHA = 12, "agent/issue-7-x", "aaaa"
	other := testMailbox(8)
	put := func(ms ...Mailbox) {
		t.Helper()
		if err := s.Update(ctx, func(tx *Tx) error {
			for _, m := range ms {
				if err := tx.PutMailbox(m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(m, other)
	route := func(by RouteKind, v string) Route {
		return Route{Forge: m.Forge, Owner: m.Owner, Project: m.Project, By: by, Value: v}
	}
	check := func(s *Store, rt Route, want int64) {
		t.Helper()
		got, ok, err := s.Routed(rt)
		switch {
		case err != nil:
			t.Fatalf("Routed(%+v): %v", rt, err)
		case want == 0 && ok:
			t.Errorf("Routed(%+v) = issue %d, want none", rt, got.IID)
		case want != 0 && (!ok || got.IID != want):
			t.Errorf("Routed(%+v) = %d, %v; want issue %d", rt, got.IID, ok, want)
		}
	}
	for _, tc := range []struct {
		rt   Route
		want int64
	}{
		{route(ByMergeRequest, "12"), 7},
		{route(ByBranch, "agent/issue-7-x"), 7},
		{route(ByHead, "aaaa"), 7},
		{route(ByMergeRequest, "13"), 0},
		{Route{Forge: m.Forge, Owner: m.Owner, Project: "elsewhere", By: ByMergeRequest, Value: "12"}, 0},
	} {
		check(s, tc.rt, tc.want)
	}
	m.HeadSHA = "bbbb"
	put(m)
	check(s, route(ByHead, "aaaa"), 0)
	check(s, route(ByHead, "bbbb"), 7)
	s.Close()
	s = openStore(t, dir)
	check(s, route(ByHead, "bbbb"), 7)
	check(s, route(ByBranch, "agent/issue-7-x"), 7)
	if err := s.Update(ctx, func(tx *Tx) error { return tx.DeleteMailbox(m.Key()) }); err != nil {
		t.Fatal(err)
	}
	check(s, route(ByMergeRequest, "12"), 0)
}

// TestMailboxFinished says which mailboxes are finished: in status
// MailboxDone with no run in progress, whatever else they hold.
func TestMailboxFinished(t *testing.T) {
	for _, c := range []struct {
		status, activeRun string
		want              bool
	}{
		{"", "", false},
		{"functional_analysis", "", false},
		{"waiting_validation", "", false},
		{"in_ci", "", false},
		{"in_review", "", false},
		{"blocked", "", false},
		{"paused", "", false},
		{"done", "", true},
		{"done", "r1", false}, // a run still to apply
		{"Done", "", false},
	} {
		m := testMailbox(1)
		m.Status, m.ActiveRunID = c.status, c.activeRun
		if got := m.Finished(); got != c.want {
			t.Errorf("status %q, active run %q: Finished() = %v, want %v", c.status, c.activeRun, got, c.want)
		}
	}
}

// TestOpenMailboxes keeps the index of the mailboxes not finished through
// puts that finish and reopen them, deletes and a reopen of the store,
// with and without the journal.
func TestOpenMailboxes(t *testing.T) {
	ctx := context.Background()
	for _, journal := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "state.git")
		opts := Options{Journal: journal}
		s, err := Open(ctx, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		put := func(statuses map[int64]string) {
			t.Helper()
			if err := s.Update(ctx, func(tx *Tx) error {
				for iid, st := range statuses {
					m := testMailbox(iid)
					m.Status = st
					if st == "done-running" {
						m.Status, m.ActiveRunID = MailboxDone, "r"
					}
					if err := tx.PutMailbox(m); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		check := func(s *Store, want ...int64) {
			t.Helper()
			mbs, err := s.OpenMailboxes()
			var got []int64
			for _, m := range mbs {
				got = append(got, m.IID)
			}
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("journal %v: OpenMailboxes() = %v, %v; want %v", journal, got, err, want)
			}
		}
		put(map[int64]string{1: "in_ci", 2: "done", 3: "blocked", 4: "done-running", 5: ""})
		check(s, 1, 3, 4, 5)
		put(map[int64]string{1: "done", 2: "in_development", 4: "done"}) // finish 1 and 4, reopen 2
		check(s, 2, 3, 5)
		if err := s.Update(ctx, func(tx *Tx) error {
			if err := tx.DeleteMailbox(testMailbox(3).Key()); err != nil {
				return err
			}
			return tx.DeleteMailbox(testMailbox(4).Key())
		}); err != nil {
			t.Fatal(err)
		}
		check(s, 2, 5)
		if all, err := s.Mailboxes(); err != nil || len(all) != 3 {
			t.Fatalf("Mailboxes() = %d mailboxes, %v; want 3", len(all), err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = Open(ctx, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		check(s, 2, 5)
		s.Close()
	}
}

// TestMailboxesWhole: memory keeps a finished mailbox's mailboxLite (its
// title, time and whether it holds quarantined events), not the rest;
// every query that returns mailboxes must give them whole, whether the
// mailbox was indexed by a commit or by Open, with or without the journal.
// Its routes go with it when it is deleted.
func TestMailboxesWhole(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	done := testMailbox(5)
	done.Title, done.Status, done.Phase, done.Flow, done.Author = "Fix the Frobnicator", MailboxDone, "development", "task", "alice"
	done.Labels, done.BranchName, done.HeadSHA, done.MergeRequestIID = []string{"status::done", "type::bug"}, "agent/issue-5", "cafe", 9
	done.IssueURL, done.MergeRequestURL, done.ReviewSeenID, done.CIFixAttempts = "https://f/i/5", "https://f/mr/9", 77, 2
	done.Quarantined = []QuarantinedEvent{{Path: "events/q.json", Delivery: "d1", Type: "issue_comment", Error: "boom", At: at}}
	done.Budget = &Budget{Tokens: 1000, Steps: 1}
	done.Validated = &Validation{PlanCommentID: 3, PlanSHA256: "p", BodySHA256: "b", By: "bob", At: at}
	done.End = &MailboxEnd{How: EndMerged, By: "bob", At: at}
	done.Trial = &Trial{Arm: "codex", Adapter: "codex", Setting: "codex,claude"}
	done.PlannedAt, done.MergeRequestAt, done.StatusSince = at, at.Add(time.Hour), at.Add(2*time.Hour)
	open := testMailbox(6)
	open.Status, open.Title = "in_ci", "Open one"
	for _, journal := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "state.git")
		opts := Options{Journal: journal}
		s, err := Open(ctx, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]Mailbox{}
		err = s.Update(ctx, func(tx *Tx) error {
			for _, m := range []Mailbox{done, open} {
				if err := tx.PutMailbox(m); err != nil {
					return err
				}
				if want[m.IID], err = tx.Mailbox(m.Key()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, when := range []string{"committed", "reopened"} {
			if when == "reopened" {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if s, err = Open(ctx, dir, opts); err != nil {
					t.Fatal(err)
				}
			}
			if v := s.snap.rec(done.Key().dir() + "/mailbox.json").val; reflect.TypeOf(v) != reflect.TypeFor[*mailboxLite]() {
				t.Fatalf("%s: a finished mailbox is kept as %T", when, v)
			}
			checkMailboxReads(t, fmt.Sprintf("journal %v, %s", journal, when), s, want)
		}
		if err := s.Update(ctx, func(tx *Tx) error { return tx.DeleteMailbox(done.Key()) }); err != nil {
			t.Fatal(err)
		}
		for _, rt := range routesOf(&done) {
			if _, ok, err := s.Routed(rt); ok || err != nil {
				t.Errorf("journal %v: after the delete, Routed(%v) = %v, %v", journal, rt, ok, err)
			}
		}
		if bad := s.checkIndexes(); len(bad) > 0 {
			t.Errorf("journal %v: indexes: %v", journal, bad)
		}
		s.Close()
	}
}

// checkMailboxReads reads the mailboxes of want through every query that
// returns mailboxes and compares them whole.
func checkMailboxReads(t *testing.T, when string, s *Store, want map[int64]Mailbox) {
	t.Helper()
	ctx := context.Background()
	same := func(name string, got []Mailbox, err error, iids ...int64) {
		t.Helper()
		var w []Mailbox
		for _, iid := range iids {
			w = append(w, want[iid])
		}
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("%s, %s = %+v, %v\nwant %+v", when, name, got, err, w)
		}
	}
	for iid, m := range want {
		got, err := s.Mailbox(m.Key())
		same(fmt.Sprintf("Mailbox(%d)", iid), []Mailbox{got}, err, iid)
		err = s.Update(ctx, func(tx *Tx) error { got, err = tx.Mailbox(m.Key()); return err })
		same(fmt.Sprintf("Tx.Mailbox(%d)", iid), []Mailbox{got}, err, iid)
		for _, rt := range routesOf(&m) {
			got, ok, err := s.Routed(rt)
			if !ok {
				err = fmt.Errorf("not routed")
			}
			same(fmt.Sprintf("Routed(%s)", rt.By), []Mailbox{got}, err, iid)
		}
	}
	all, err := s.Mailboxes()
	same("Mailboxes", all, err, 5, 6)
	open, err := s.OpenMailboxes()
	same("OpenMailboxes", open, err, 6)
	for _, c := range []struct {
		f    MailboxFilter
		iids []int64
	}{
		{MailboxFilter{}, []int64{6, 5}},
		{MailboxFilter{Statuses: []string{MailboxDone}}, []int64{5}},
		{MailboxFilter{Statuses: []string{"in_ci"}}, []int64{6}},
		{MailboxFilter{Quarantined: true}, []int64{5}},
		{MailboxFilter{Title: "frobnic"}, []int64{5}},
		{MailboxFilter{Title: "open"}, []int64{6}},
	} {
		rows, _, err := s.ListMailboxes(c.f, "", 10)
		var got []Mailbox
		for _, r := range rows {
			got = append(got, r.Mailbox)
		}
		same(fmt.Sprintf("ListMailboxes(%+v)", c.f), got, err, c.iids...)
	}
}
