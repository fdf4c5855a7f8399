package state

import (
	"context"
	"path/filepath"
	"testing"
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
