package mirror

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// TestPushesOnlyFolds: with the state journal (as serve opens the store),
// the mirror pushes the branch as folds leave it: writes acknowledged and
// not yet folded never reach the remote; once folded, the remote gets the
// fold's one commit, whose trailer names the last journal frame it holds.
func TestPushesOnlyFolds(t *testing.T) {
	ctx := context.Background()
	g := newGitServer(t)
	bare, r := g.repo(t, "alfred-state")
	dir := filepath.Join(t.TempDir(), "state.git")
	start, err := Prepare(ctx, dir, r, quiet())
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Dir: dir, Remote: r, Start: start, Logger: quiet(), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Timeout: 20 * time.Second})
	st, err := state.Open(ctx, dir, state.Options{Logger: quiet(), Journal: true, FoldIdle: time.Hour, Committed: func(string) { m.Notify() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m.Start()
	t.Cleanup(func() { m.Close(context.Background()) })
	for i := range 5 {
		put(t, st, i)
	}
	m.Notify() // a push now would find the branch as it is: not folded yet
	time.Sleep(300 * time.Millisecond)
	if tip := tipOf(bare); tip != "" || st.Tip() != "" {
		t.Fatalf("before any fold: remote tip %q, store tip %q; want none", tip, st.Tip())
	}
	if err := st.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fold pushed", func() bool { return st.Tip() != "" && tipOf(bare) == st.Tip() })
	if n := gitT(t, bare, "rev-list", "--count", branch); n != "1" {
		t.Fatalf("remote has %s commits, want the fold's one", n)
	}
	if msg := gitT(t, bare, "log", "-1", "--format=%B", branch); !strings.Contains(msg, "Journal-Seq: 5") {
		t.Fatalf("the remote's commit message %q lacks the fold's trailer", msg)
	}
}
