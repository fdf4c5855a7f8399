package state

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRepairAfterPowerLoss: what a power loss can leave of the files a
// commit does not sync (the pack index, the ref's content) or of a commit
// cut short, and what a writable Open makes of it: the branch at the newest
// commit, every record, a clean git fsck.
func TestRepairAfterPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir, tipPack string)
	}{
		{"index lost", func(t *testing.T, dir, tipPack string) {
			must(t, os.Remove(filepath.Join(packDir(dir), tipPack+".idx")))
		}},
		{"index zeroed", func(t *testing.T, dir, tipPack string) {
			p := filepath.Join(packDir(dir), tipPack+".idx")
			st, err := os.Stat(p)
			must(t, err)
			must(t, os.Remove(p))
			must(t, os.WriteFile(p, make([]byte, st.Size()), 0o444))
		}},
		{"ref emptied", func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(refPath(dir), nil, 0o644))
		}},
		{"ref zeroed", func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(refPath(dir), make([]byte, 41), 0o644))
		}},
		{"stale ref lock", func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(refPath(dir)+".lock", []byte("0000000000000000000000000000000000000000\n"), 0o644))
		}},
		{"torn pack", func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(filepath.Join(packDir(dir), "pack-0123456789012345678901234567890123456789.pack"), []byte("PACK\x00\x00"), 0o444))
			must(t, os.WriteFile(filepath.Join(packDir(dir), "tmp_pack-x.idx"), []byte("junk"), 0o444))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			s := openStore(t, dir)
			for i := range 3 {
				update(t, s, func(tx *Tx) error { return tx.Put(fmt.Sprintf("events/e%d.json", i), map[string]int{"i": i}) })
			}
			tip := s.Tip()
			tipPack := s.packOf(t, tip)
			s.Close()
			tc.damage(t, dir, tipPack)
			s = openStore(t, dir)
			defer s.Close()
			if s.Tip() != tip || s.Len() != 3 {
				t.Fatalf("after repair: tip %s with %d records, want %s with 3", s.Tip(), s.Len(), tip)
			}
			update(t, s, func(tx *Tx) error { return tx.Put("events/after.json", map[string]int{"i": 9}) })
			checkRepaired(t, dir)
		})
	}
}

// checkRepaired: git fsck is clean, no temporary file is left and every
// pack has its index.
func checkRepaired(t *testing.T, dir string) {
	t.Helper()
	fsck(t, dir)
	if leftovers, _ := filepath.Glob(filepath.Join(packDir(dir), "tmp_*")); len(leftovers) > 0 {
		t.Errorf("leftovers: %v", leftovers)
	}
	packs, _ := filepath.Glob(filepath.Join(packDir(dir), "*.pack"))
	for _, p := range packs {
		if _, err := os.Stat(p[:len(p)-len(".pack")] + ".idx"); err != nil {
			t.Errorf("pack %s left without its index", p)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s *Store) packNames() []string {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	var out []string
	for _, p := range s.packs {
		out = append(out, p.name)
	}
	return out
}

// packOf returns the pack holding commit h.
func (s *Store) packOf(t *testing.T, h string) string {
	t.Helper()
	for _, name := range s.packNames() {
		raw, err := os.ReadFile(filepath.Join(packDir(s.dir), name+".idx"))
		must(t, err)
		x, err := checkIdx(raw)
		must(t, err)
		for i := range x.count() {
			if fmt.Sprintf("%x", x.name(i)) == h {
				return name
			}
		}
	}
	t.Fatalf("no pack holds %s", h)
	return ""
}
