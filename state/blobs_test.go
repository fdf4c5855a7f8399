package state

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestBodiesOnDemand: the records' JSON is not kept in memory but read from
// the packs when asked for. It must come back byte for byte whatever
// happened to the packs since Open: new commits, background merges that
// remove the packs it was in, a `git gc` that deltifies and repacks
// everything; for a writable store and for a read-only one opened before.
func TestBodiesOnDemand(t *testing.T) {
	ctx := context.Background()
	pad := strings.Repeat("the same words again and again, ", 20) // deltas for git gc
	put := func(s *Store, i int) {
		t.Helper()
		err := s.Update(ctx, func(tx *Tx) error {
			return tx.Put(fmt.Sprintf("notes/n%03d.json", i), map[string]any{"n": i, "pad": pad})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		after func(t *testing.T, dir string, w *Store) // what happens to the packs after the reader opened
	}{
		{"merged away", func(t *testing.T, dir string, w *Store) {
			for i := 10; i < 60; i++ {
				put(w, i)
			}
		}},
		{"git gc", func(t *testing.T, dir string, w *Store) {
			gitCLI(t, dir, "gc", "--aggressive", "--prune=now")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(ctx, dir, Options{MergeAt: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			want := map[string][]byte{}
			for i := range 10 {
				put(w, i)
			}
			for _, p := range w.List("notes") {
				if want[p], err = w.Get(p); err != nil || !bytes.Contains(want[p], []byte(pad)) {
					t.Fatalf("Get(%s) = %q, %v", p, want[p], err)
				}
			}
			r, err := Open(ctx, dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for p := range want { // the reader maps the packs of now
				if _, err := r.Get(p); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := listPacks(dir, false)
			tt.after(t, dir, w)
			w.Close()
			if after, _ := listPacks(dir, false); len(after) == 0 || after[0] == before[0] {
				t.Fatalf("packs %v, then %v: the first pack did not go", before, after)
			}
			w2 := openStore(t, dir)
			defer w2.Close()
			for name, s := range map[string]*Store{"writer": w, "reader": r, "reopened": w2} {
				for p, raw := range want {
					got, err := s.Get(p)
					if err != nil || !bytes.Equal(got, raw) {
						t.Errorf("%s: Get(%s) = %q, %v; want %q", name, p, got, err, raw)
					}
				}
			}
			var show bytes.Buffer
			if err := r.Show(ctx, &show, "notes/n003.json"); err != nil || !strings.Contains(show.String(), `"n": 3`) {
				t.Errorf("Show = %q, %v", show.String(), err)
			}
		})
	}
}
