package state

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCommitWritesOnlyItsPath: the objects a write adds do not grow with
// the records of the store. One mailbox rewritten in a store of 1k and of
// 20k records adds the same objects, its blob, one tree per folder of its
// path and the commit, and the trees stay bounded by the sharding (at most
// 100 issue folders per bucket), not by the record count.
func TestCommitWritesOnlyItsPath(t *testing.T) {
	const maxPackBytes = 8 << 10 // a mailbox, 8 trees of at most 100 entries, a commit
	var sizes []int64
	for _, n := range []int{1_000, 20_000} {
		dir := filepath.Join(t.TempDir(), "state.git")
		s := openStore(t, dir)
		ctx := context.Background()
		if err := s.Update(ctx, func(tx *Tx) error { return fixtureRecords(n, tx.putTyped) }); err != nil {
			t.Fatal(err)
		}
		m := benchMailbox(min(n/5-1, 2980)) // issue 150 at 20k: its bucket holds 100 issues
		m.LLMRetries = 3
		if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(m) }); err != nil {
			t.Fatal(err)
		}
		s.packMu.Lock()
		last := s.packs[len(s.packs)-1]
		s.packMu.Unlock()
		st, err := os.Stat(filepath.Join(packDir(dir), last.name+".pack"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > maxPackBytes {
			t.Errorf("%d records: one mailbox's commit wrote a pack of %d bytes, want at most %d", n, st.Size(), maxPackBytes)
		}
		// mailboxes/forge/owner/project/kind/bucket/iid/mailbox.json: the root
		// and 7 folders, the blob, the commit.
		if last.objects != 10 {
			t.Errorf("%d records: one mailbox's commit wrote %d objects, want 10", n, last.objects)
		}
		sizes = append(sizes, st.Size())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		fsck(t, dir)
	}
	t.Logf("pack bytes of one write at 1k and 20k records: %v", sizes)
}
