package state

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCheckpointSave: what Close spends writing the open checkpoint
// (Store.saveCheckpoint) on the year fixture (BenchmarkScale's; 100k
// records, 1M with -state.1m), in three cases: the checkpoint already is
// the tip's (same-tip), it is of the commit before a few writes (merge:
// its records are taken over, the new ones read from their blobs), and
// there is none (none: every record read from its blob).
func BenchmarkCheckpointSave(b *testing.B) {
	n, name := 100_000, "100k"
	if *bench1M {
		n, name = 1_000_000, "1M"
	}
	b.Run("records="+name, func(b *testing.B) {
		s, before, after := checkpointSaveFixture(b, n)
		defer s.Close()
		for _, c := range []struct {
			name string
			file []byte // the checkpoint there before each save; nil: none
		}{{"same-tip", after}, {"merge", before}, {"none", nil}} {
			b.Run("case="+c.name, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					if c.file == nil {
						if err := os.Remove(checkpointPath(s.dir)); err != nil {
							b.Fatal(err)
						}
					} else if err := os.WriteFile(checkpointPath(s.dir), c.file, 0o644); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if err := s.saveCheckpoint(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				got, err := readCheckpointFile(s.dir)
				if err != nil || string(got) != string(after) {
					b.Fatalf("the checkpoint saved (%d bytes, %v) is not the tip's (%d bytes)", len(got), err, len(after))
				}
			})
		}
	})
}

// checkpointSaveFixture opens, writable, a copy of the year of about n
// records, and returns it with its checkpoint before and after a few
// writes (three transactions of one issue each).
func checkpointSaveFixture(b *testing.B, n int) (s *Store, before, after []byte) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "year")
	if out, err := exec.Command("cp", "-a", yearFixture(b, n), dir).CombinedOutput(); err != nil {
		b.Fatalf("copy the fixture: %v\n%s", err, out)
	}
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.ckWG.Wait() // a full load at Open writes the checkpoint in the background
	if err := s.saveCheckpoint(); err != nil {
		b.Fatal(err)
	}
	if before, err = readCheckpointFile(dir); err != nil {
		b.Fatal(err)
	}
	at := yearEnd.AddDate(0, 0, -1)
	for i := range 3 {
		err := s.Update(context.Background(), func(tx *Tx) error {
			_, err := putYearIssue(tx, i, n+i, at)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := s.saveCheckpoint(); err != nil {
		b.Fatal(err)
	}
	b.Logf("first merge save: %v", time.Since(start))
	if after, err = readCheckpointFile(dir); err != nil {
		b.Fatal(err)
	}
	if string(after) == string(before) {
		b.Fatal("the writes did not change the checkpoint")
	}
	return s, before, after
}
