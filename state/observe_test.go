package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestObserveCommits: Options.Observe hears of every commit written, with
// its error when it failed, and of nothing else.
func TestObserveCommits(t *testing.T) {
	mb := testMailbox(1)
	put := func(tx *Tx) error { return tx.PutRaw("events/a.json", []byte(`{"n":1}`)) }
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, s *Store, dir string) // before the Update
		fn    func(*Tx) error
		want  []bool // per observation: whether it carried an error
	}{
		{"a write", nil, put, []bool{false}},
		{"a typed write", nil, func(tx *Tx) error { return tx.PutMailbox(mb) }, []bool{false}},
		{"the same value again changes nothing", func(t *testing.T, s *Store, _ string) { update(t, s, put) }, put, nil},
		{"a transaction that fails writes nothing", nil, func(*Tx) error { return errors.New("no") }, nil},
		{"a pack that cannot be written", breakPacks, put, []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			var mu sync.Mutex
			var got []bool
			var took []time.Duration
			s, err := Open(context.Background(), dir, Options{Observe: func(d time.Duration, err error) {
				mu.Lock()
				defer mu.Unlock()
				got, took = append(got, err != nil), append(took, d)
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.setup != nil {
				tc.setup(t, s, dir)
			}
			mu.Lock()
			got, took = nil, nil
			mu.Unlock()
			_ = s.Update(context.Background(), tc.fn) // the outcome is what Observe heard
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(tc.want) {
				t.Fatalf("observed %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] || took[i] <= 0 {
					t.Errorf("observation %d: failed %v after %s, want failed %v after some time", i, got[i], took[i], tc.want[i])
				}
			}
		})
	}
}

func update(t *testing.T, s *Store, fn func(*Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// breakPacks puts a file where the pack folder is, so that no pack can be
// written (even as root), until the test ends.
func breakPacks(t *testing.T, _ *Store, dir string) {
	packs := filepath.Join(dir, "objects", "pack")
	if err := os.Rename(packs, packs+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(packs)
		os.Rename(packs+".away", packs)
	})
}

// TestCommittedHook: Options.Committed hears of every commit once it is
// published (the store's queries already see it), in commit order, from a
// goroutine that holds no lock of the store, and of nothing else.
func TestCommittedHook(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	var s *Store
	var mu sync.Mutex
	var heard []string
	s, err := Open(context.Background(), dir, Options{Committed: func(commit string) {
		if tip := s.Tip(); tip != commit { // reading the store from the hook must not deadlock
			t.Errorf("Committed(%s) while the store's tip is %s", commit, tip)
		}
		mu.Lock()
		heard = append(heard, commit)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(i int) func(*Tx) error {
		return func(tx *Tx) error { return tx.Put(fmt.Sprintf("events/e%d.json", i), map[string]int{"i": i}) }
	}
	update(t, s, put(0))
	update(t, s, put(0)) // changes nothing: no commit
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			update(t, s, put(i+1))
		}()
	}
	wg.Wait()
	log := strings.Fields(gitCLI(t, dir, "rev-list", "--reverse", string(RefName)))
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(heard, log) {
		t.Fatalf("Committed heard %v, the branch holds %v", heard, log)
	}
}
