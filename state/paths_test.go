package state

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPathSetList(t *testing.T) {
	ps := newPathSet([]string{"a.json", "a/b.json", "a/c/d.json", "a/c/e.json", "ab.json", "b/x.json"})
	for _, tc := range []struct {
		dir  string
		deep bool
		want []string
	}{
		{"", true, []string{"a.json", "a/b.json", "a/c/d.json", "a/c/e.json", "ab.json", "b/x.json"}},
		{"", false, []string{"a.json", "ab.json"}},
		{"a", true, []string{"a/b.json", "a/c/d.json", "a/c/e.json"}},
		{"a", false, []string{"a/b.json"}},
		{"a/c", false, []string{"a/c/d.json", "a/c/e.json"}},
		{"a/b.json", true, nil}, // a file is no folder
		{"a/", true, nil},       // as a tree lookup, the name must be exact
		{"c", true, nil},
		{"b", false, []string{"b/x.json"}},
	} {
		if got := ps.list(tc.dir, tc.deep); !slices.Equal(got, tc.want) {
			t.Errorf("list(%q, %v) = %q, want %q", tc.dir, tc.deep, got, tc.want)
		}
	}
}

// TestPathSetModel adds and removes random paths, enough to split and empty
// blocks, and compares every listing with a sorted slice.
func TestPathSetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 3))
	model := map[string]bool{}
	var initial []string
	for i := range 700 {
		p := fmt.Sprintf("m/%d/r%d.json", i%7, i)
		initial = append(initial, p)
		model[p] = true
	}
	slices.Sort(initial)
	ps := newPathSet(slices.Clone(initial))
	for step := range 20_000 {
		p := fmt.Sprintf("m/%d/r%d.json", rng.IntN(9), rng.IntN(3000))
		if rng.IntN(3) == 0 {
			p = fmt.Sprintf("m/%d.json", rng.IntN(50))
		}
		if rng.IntN(2) == 0 {
			ps.add(p)
			model[p] = true
		} else {
			ps.remove(p)
			delete(model, p)
		}
		if step%997 != 0 {
			continue
		}
		for _, dir := range []string{"", "m", "m/3", "m/8"} {
			for _, deep := range []bool{true, false} {
				var want []string
				for p := range model {
					rest, ok := strings.CutPrefix(p, dir+"/")
					if dir == "" {
						rest, ok = p, true
					}
					if ok && (deep || !strings.Contains(rest, "/")) {
						want = append(want, p)
					}
				}
				slices.Sort(want)
				if got := ps.list(dir, deep); !slices.Equal(got, want) {
					t.Fatalf("step %d: list(%q, %v) has %d paths, want %d", step, dir, deep, len(got), len(want))
				}
			}
		}
		for _, b := range ps.blocks {
			if len(b) == 0 || len(b) > pathBlock {
				t.Fatalf("step %d: a block of %d paths", step, len(b))
			}
		}
	}
}

// TestTreesFromPacks: the store keeps no tree in memory but the cache a
// commit fills; commits made after a reopen, with a cache of a few trees,
// read the rest from the packs (the store's, or those of a `git gc`, whose
// trees are deltas) and write the same trees git would (fsck, and ls-tree
// listing what List lists), emptied folders included.
func TestTreesFromPacks(t *testing.T) {
	for _, gc := range []bool{false, true} {
		for _, journal := range []bool{false, true} {
			t.Run(fmt.Sprintf("git-gc=%v/journal=%v", gc, journal), func(t *testing.T) { treesFromPacks(t, gc, journal) })
		}
	}
}

// treesFromPacks writes, reopens with a cache of two or three trees and
// writes again; with the journal the second writes are not folded until
// the end, so their trees are read from the journal's pending objects, not
// from a pack nor the cache.
func treesFromPacks(t *testing.T, gc, journal bool) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	for i := range 40 {
		if err := s.Update(ctx, func(tx *Tx) error {
			for j := range 5 {
				if err := tx.Put(fmt.Sprintf("g/%d/%d/r%d.json", i%4, i, j), map[string]int{"i": i, "j": j}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if gc {
		gitCLI(t, dir, "gc", "--aggressive", "--prune=now")
		if !deltaTrees(t, dir) {
			t.Fatal("git gc left no tree stored as a delta: the test reads no delta")
		}
	}
	s = openStore(t, dir)
	if journal {
		s.Close()
		var err error
		if s, err = Open(ctx, dir, Options{Journal: true, FoldIdle: time.Hour, FoldBytes: 1 << 30}); err != nil {
			t.Fatal(err)
		}
	}
	defer s.Close()
	s.snap.trees.cache.max = 24 // entries: two or three trees
	before := s.PackCount()
	for i := range 40 {
		if err := s.Update(ctx, func(tx *Tx) error {
			if i%2 == 0 { // empties folder g/{i%4}/{i}
				for j := range 5 {
					if err := tx.Delete(fmt.Sprintf("g/%d/%d/r%d.json", i%4, i, j)); err != nil {
						return err
					}
				}
				return nil
			}
			return tx.Put(fmt.Sprintf("g/%d/%d/new.json", i%4, i), map[string]int{"i": i})
		}); err != nil {
			t.Fatal(err)
		}
		c := s.snap.trees.cache
		n := 0
		for _, e := range c.nodes {
			n += len(e)
		}
		if n != c.entries || n > c.max {
			t.Fatalf("the tree cache holds %d entries (counted %d), want at most %d", n, c.entries, c.max)
		}
	}
	if journal {
		if packs := s.PackCount(); packs != before {
			t.Fatalf("the journal's writes made %d packs before their fold, want none", packs-before)
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fsck(t, dir)
	got := s.List("")
	want := strings.Fields(gitCLI(t, dir, "ls-tree", "-r", "--name-only", string(RefName)))
	if !slices.Equal(got, want) || len(got) != 20*6 {
		t.Fatalf("List has %d paths, git ls-tree %d (want %d):\n%q\n%q", len(got), len(want), 20*6, got, want)
	}
	// The even i were emptied: g/0 and g/2 held only those.
	if dirs := strings.Fields(gitCLI(t, dir, "ls-tree", "--name-only", string(RefName)+":g")); !slices.Equal(dirs, []string{"1", "3"}) {
		t.Fatalf("git lists folders %q under g, want the emptied ones gone: [1 3]", dirs)
	}
}

// deltaTrees reports whether a pack of dir holds a tree stored as a delta
// (git verify-pack lists a delta's depth and base after its sizes).
func deltaTrees(t *testing.T, dir string) bool {
	t.Helper()
	idxs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, idx := range idxs {
		for line := range strings.Lines(gitCLI(t, dir, "verify-pack", "-v", idx)) {
			if f := strings.Fields(line); len(f) == 7 && f[1] == "tree" {
				return true
			}
		}
	}
	return false
}

func TestArenaConcat(t *testing.T) {
	var a arena
	var got []string
	for i := range 20_000 { // several blocks
		got = append(got, a.concat(fmt.Sprintf("mailboxes/p%d/", i%7), fmt.Sprintf("r%d.json", i)))
	}
	long := strings.Repeat("x", arenaBlock+1)
	if s := a.concat(long, "y"); s != long+"y" {
		t.Fatalf("a string larger than a block comes back with %d bytes", len(s))
	}
	if s := a.concat("", ""); s != "" {
		t.Fatalf("concat of nothing = %q", s)
	}
	for i, s := range got {
		if want := fmt.Sprintf("mailboxes/p%d/r%d.json", i%7, i); s != want {
			t.Fatalf("string %d = %q, want %q: a later one overwrote it", i, s, want)
		}
	}
}
