package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type counter struct {
	FormatVersion int `json:"format_version"`
	N             int `json:"n"`
}

func readCounter(t testing.TB, get func(string) ([]byte, error), path string) int {
	raw, err := get(path)
	if errors.Is(err, ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Errorf("read %s: %v", path, err)
		return 0
	}
	var c counter
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Errorf("decode %s: %v", path, err)
	}
	return c.N
}

// TestConcurrentUpdates runs N goroutines x M read-modify-write transactions
// on one shared counter, one counter per goroutine and a mailbox counter;
// some transactions fail after writing and must leave no trace.
func TestConcurrentUpdates(t *testing.T) {
	const goroutines, perG = 8, 40
	dir := filepath.Join(t.TempDir(), "state.git")
	ctx := context.Background()
	s := openStore(t, dir)
	mb := testMailbox(1)
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(mb) }); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	var mu sync.Mutex
	acked := map[string]int{}
	failed := 0
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := fmt.Sprintf("counters/g%d.json", g)
			for i := range perG {
				fail := i%7 == 3
				err := s.Update(ctx, func(tx *Tx) error {
					for _, p := range []string{"counters/shared.json", own} {
						if err := tx.Put(p, counter{N: readCounter(t, tx.Get, p) + 1}); err != nil {
							return err
						}
					}
					m, err := tx.Mailbox(mb.Key())
					if err != nil {
						return err
					}
					m.LLMRetries++
					if err := tx.PutMailbox(m); err != nil {
						return err
					}
					if fail {
						return errBoom
					}
					return nil
				})
				mu.Lock()
				switch {
				case fail && errors.Is(err, errBoom):
					failed++
				case err == nil && !fail:
					acked["counters/shared.json"]++
					acked[own]++
				default:
					t.Errorf("goroutine %d tx %d: err = %v (fail=%v)", g, i, err, fail)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	check := func(s *Store) {
		t.Helper()
		for p, n := range acked {
			if got := readCounter(t, s.Get, p); got != n {
				t.Errorf("%s = %d, want %d acknowledged increments", p, got, n)
			}
		}
		m, err := s.Mailbox(mb.Key())
		if err != nil || m.LLMRetries != acked["counters/shared.json"] {
			t.Errorf("mailbox llm_retries = %d (%v), want %d", m.LLMRetries, err, acked["counters/shared.json"])
		}
	}
	check(s)
	if failed == 0 {
		t.Fatal("no transaction failed; the test lost its point")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dir)
	commits := len(strings.Split(strings.TrimSpace(gitCLI(t, dir, "rev-list", string(RefName))), "\n"))
	t.Logf("%d acknowledged transactions, %d failed, in %d commits", acked["counters/shared.json"], failed, commits)
	if commits > acked["counters/shared.json"]+1 {
		t.Errorf("%d commits for %d successful transactions", commits, acked["counters/shared.json"])
	}
	s = openStore(t, dir)
	defer s.Close()
	check(s)
}

func TestSecondStoreInProcessIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	s := openStore(t, dir)
	_, err := Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("second Open: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	ro, err := Open(context.Background(), dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open while locked: %v", err)
	}
	if err := ro.Update(context.Background(), func(*Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Update: %v", err)
	}
	s.Close()
	s2, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

// TestPackCountBounded makes many single-record commits and checks the
// object store stays a handful of packs and no loose objects.
func TestPackCountBounded(t *testing.T) {
	const commits = 250
	dir := filepath.Join(t.TempDir(), "state.git")
	s := openStore(t, dir)
	maxPacks := 0
	for i := range commits {
		err := s.Update(context.Background(), func(tx *Tx) error {
			return tx.Put(fmt.Sprintf("events/%03d/e%d.json", i%50, i), map[string]int{"i": i})
		})
		if err != nil {
			t.Fatal(err)
		}
		maxPacks = max(maxPacks, s.PackCount())
	}
	s.Close()
	ents, err := os.ReadDir(packDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commits: at most %d packs at once, %d files in objects/pack at the end", commits, maxPacks, len(ents))
	// Merges run in the background and commits wait for one when 2x the
	// merge threshold (32) packs piled up: the bound is not the commit count.
	if maxPacks > 2*32 || len(ents) > 2*2*32 {
		t.Errorf("pack count not bounded: max %d packs, %d files", maxPacks, len(ents))
	}
	if loose := strings.TrimSpace(gitCLI(t, dir, "count-objects")); !strings.HasPrefix(loose, "0 objects") {
		t.Errorf("loose objects: %s", loose)
	}
	fsck(t, dir)
	s = openStore(t, dir)
	defer s.Close()
	if n := len(s.List("events")); n != commits {
		t.Fatalf("%d events after reopen, want %d", n, commits)
	}
}
