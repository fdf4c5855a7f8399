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
