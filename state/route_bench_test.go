package state

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkRoute finds the issue mailbox of a merge request event among n
// mailboxes: through the route index (Routed), and as the engine did before
// it, by reading every mailbox (Mailboxes) and comparing, side by side.
func BenchmarkRoute(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		s := openStore(b, filepath.Join(b.TempDir(), "state.git"))
		err := s.Update(context.Background(), func(tx *Tx) error {
			for i := 1; i <= n; i++ {
				m := testMailbox(int64(i))
				m.MergeRequestIID, m.BranchName, m.HeadSHA = int64(100000+i), fmt.Sprintf("agent/issue-%d-x", i), fmt.Sprintf("%040x", i)
				if err := tx.PutMailbox(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		want := int64(100000 + n/2)
		b.Run(fmt.Sprintf("index/mailboxes=%d", n), func(b *testing.B) {
			rt := Route{Forge: "forgejo", Owner: "acme", Project: "widget", By: ByMergeRequest, Value: strconv.FormatInt(want, 10)}
			for b.Loop() {
				if m, ok, err := s.Routed(rt); err != nil || !ok || m.MergeRequestIID != want {
					b.Fatalf("Routed = %v %v %v", m.IID, ok, err)
				}
			}
		})
		b.Run(fmt.Sprintf("scan/mailboxes=%d", n), func(b *testing.B) {
			for b.Loop() {
				mbs, _ := s.Mailboxes()
				found := false
				for _, m := range mbs {
					if m.Forge == "forgejo" && m.Owner == "acme" && m.Project == "widget" && m.Kind == KindIssue && m.MergeRequestIID == want {
						found = true
						break
					}
				}
				if !found {
					b.Fatal("not found")
				}
			}
		})
	}
}
