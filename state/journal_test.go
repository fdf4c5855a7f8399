package state

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// journalStore opens a store that folds only when told (or at Close).
func journalStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{Journal: true, FoldIdle: time.Hour})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// putEvents writes events/e{from..to-1}.json, one Update each.
func putEvents(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		update(t, s, func(tx *Tx) error { return tx.Put(fmt.Sprintf("events/e%d.json", i), map[string]int{"i": i}) })
	}
}

// frameOffsets lists where the journal's frames of this generation start.
func frameOffsets(t *testing.T, dir string) []int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, journalName))
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for off := int64(0); ; {
		_, next, ok := frameAt(data, off)
		if !ok {
			return offs
		}
		offs = append(offs, off)
		off = next
	}
}

// TestJournalReplay: writes acknowledged and not folded (the store left as
// a crash leaves it) come back at the next Open, which folds them into one
// commit with its Journal-Seq trailer; a torn last frame is dropped and the
// frames before it kept; a damaged frame in the middle stops Open with
// ErrJournalCorrupt and leaves the journal as it was; frames already folded
// (a crash after the fold's commit, before the next write) are not applied
// twice.
func TestJournalReplay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, dir string, offs []int64)
		want    int  // events after the reopen
		corrupt bool // Open fails with ErrJournalCorrupt
	}{
		{"whole", func(*testing.T, string, []int64) {}, 5, false},
		{"torn tail", func(t *testing.T, dir string, offs []int64) {
			// The last frame half written: its second half still zeros.
			data := readJournalFile(t, dir)
			last := offs[len(offs)-1]
			n := int64(binary.LittleEndian.Uint32(data[last:])) + 8
			zeroAt(t, dir, last+n/2, n-n/2)
		}, 4, false},
		{"torn length", func(t *testing.T, dir string, offs []int64) {
			zeroAt(t, dir, offs[len(offs)-1], 2) // the length field itself torn
		}, 4, false},
		{"damaged middle", func(t *testing.T, dir string, offs []int64) {
			writeJournalAt(t, dir, []byte{0xff}, offs[2]+frameHead+6)
		}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			s := journalStore(t, dir)
			putEvents(t, s, 0, 2)
			must(t, s.Checkpoint(context.Background()))
			folded := s.Tip()
			putEvents(t, s, 2, 7) // five frames after the fold
			if s.Tip() != folded {
				t.Fatalf("the tip moved to %s without a fold", s.Tip())
			}
			must(t, s.shut(false))
			offs := frameOffsets(t, dir)
			if len(offs) != 5 {
				t.Fatalf("%d frames in the journal, want 5", len(offs))
			}
			tc.damage(t, dir, offs)
			before, _ := os.ReadFile(filepath.Join(dir, journalName))
			s, err := Open(context.Background(), dir, Options{Journal: true, FoldIdle: time.Hour})
			if tc.corrupt {
				if !errors.Is(err, ErrJournalCorrupt) || !strings.Contains(err.Error(), "frame 5") {
					t.Fatalf("Open = %v, want ErrJournalCorrupt naming frame 5", err)
				}
				if after := readJournalFile(t, dir); string(after) != string(before) {
					t.Fatal("Open changed a corrupt journal")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.List("events")); n != 2+tc.want {
				t.Fatalf("%d events after replay, want %d", n, 2+tc.want)
			}
			tip := s.Tip()
			if tip == folded || strings.TrimSpace(gitCLI(t, dir, "rev-parse", string(RefName)+"^")) != folded {
				t.Fatalf("replay did not fold into one commit on %s: tip %s", folded, tip)
			}
			msg := gitCLI(t, dir, "log", "-1", "--format=%B", string(RefName))
			if want := fmt.Sprintf("Journal-Seq: %d", 2+tc.want); !strings.Contains(msg, want) {
				t.Fatalf("fold commit message %q lacks %q", msg, want)
			}
			must(t, s.shut(false))
			// The journal still holds the frames folded: they are not applied twice.
			s = journalStore(t, dir)
			defer s.Close()
			if s.Tip() != tip || len(s.List("events")) != 2+tc.want {
				t.Fatalf("second reopen: tip %s with %d events, want %s with %d", s.Tip(), len(s.List("events")), tip, 2+tc.want)
			}
			fsck(t, dir)
		})
	}
}

func zeroAt(t *testing.T, dir string, off, n int64) {
	t.Helper()
	writeJournalAt(t, dir, make([]byte, n), off)
}

func writeJournalAt(t *testing.T, dir string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, journalName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func readJournalFile(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, journalName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJournalReadOnly: a read-only store opened beside a writer sees the
// writes the journal holds, before any fold.
func TestJournalReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	s := journalStore(t, dir)
	defer s.Close()
	putEvents(t, s, 0, 3)
	ro, err := Open(context.Background(), dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for i := range 3 {
		if raw, err := ro.Get(fmt.Sprintf("events/e%d.json", i)); err != nil || !strings.Contains(string(raw), fmt.Sprint(i)) {
			t.Fatalf("read-only Get(e%d) = %q, %v", i, raw, err)
		}
	}
	if ro.Tip() != "" {
		t.Fatalf("read-only tip %s, want none folded yet", ro.Tip())
	}
}

// TestJournalFolds: the journal is folded once it passes FoldBytes (by the
// write that passes it) and once writes pause for FoldIdle, each fold one
// commit; a write larger than the journal's file is taken too.
func TestJournalFolds(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state.git")
	s, err := Open(ctx, dir, Options{Journal: true, FoldBytes: 4 << 10, FoldIdle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := strings.Repeat("x", 64<<10) // sixteen times FoldBytes
	update(t, s, func(tx *Tx) error { return tx.Put("events/big.json", map[string]string{"pad": big}) })
	if s.Tip() == "" {
		t.Fatal("a write past FoldBytes was not folded")
	}
	putEvents(t, s, 0, 3)
	tip := s.Tip()
	deadline := time.Now().Add(10 * time.Second)
	for s.Tip() == tip && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.Tip() == tip {
		t.Fatal("the journal was not folded after the writes paused")
	}
	if n := strings.Count(gitCLI(t, dir, "rev-list", string(RefName)), "\n"); n != 2 {
		t.Fatalf("%d commits, want 2 (one per fold)", n)
	}
	if got := gitCLI(t, dir, "show", string(RefName)+":events/e2.json"); !strings.Contains(got, `"i":2`) {
		t.Fatalf("the idle fold holds e2 = %q", got)
	}
}

// TestCrashJournal is TestCrash on a store with Options.Journal: with the
// default FoldBytes the kills land mostly in appends (a frame half
// written, written and not synced), with a journal of 4 KiB as often in
// folds (pack, ref, the journal's reuse from its start after a fold).
func TestCrashJournal(t *testing.T) {
	for _, fold := range []string{"0", "4096"} {
		t.Run("fold="+fold, func(t *testing.T) {
			t.Setenv(crashJournalEnv, fold)
			iterations := 30
			if testing.Short() {
				iterations = 8
			}
			dir := filepath.Join(t.TempDir(), "state.git")
			rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
			var acked []string
			for it := range iterations {
				acked = append(acked, killChild(t, dir, rng.IntN(40), time.Duration(rng.IntN(3000))*time.Microsecond)...)
				if _, err := os.Stat(dir); err != nil {
					continue
				}
				checkAfterKill(t, it, dir, acked)
			}
			fsck(t, dir)
			if len(acked) == 0 {
				t.Fatal("the children acknowledged nothing")
			}
			t.Logf("%d kills, %d writes acknowledged", iterations, len(acked))
		})
	}
}

// crashJournalEnv, when set, gives the crash child Options.Journal and its
// value as FoldBytes (0: the default).
const crashJournalEnv = "ALFRED_STATE_CRASH_JOURNAL"

// crashOptions are the crash child's options.
func crashOptions() Options {
	opts := Options{Logger: nil, MergeAt: 4}
	if v, ok := os.LookupEnv(crashJournalEnv); ok {
		opts.Journal = true
		opts.FoldBytes, _ = strconv.ParseInt(v, 10, 64)
	}
	return opts
}

// TestJournalLostRace: a commit made by git on the branch while the store
// holds writes in its journal. The writes were acknowledged on the tip the
// store knew; the fold finds the branch moved (compare-and-swap lost),
// re-reads it and applies the journal's writes on top: nothing is lost on
// either side and the fold's parent is the foreign commit.
func TestJournalLostRace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	ctx := context.Background()
	s := journalStore(t, dir)
	defer s.Close()
	update(t, s, func(tx *Tx) error { return tx.Put("events/a.json", map[string]int{"n": 1}) })
	must(t, s.Checkpoint(ctx))
	foreign := craftCommit(t, dir, map[string]string{"events/foreign.json": `{"n": 2}`})
	update(t, s, func(tx *Tx) error { return tx.Put("events/b.json", map[string]int{"n": 3}) })
	must(t, s.Checkpoint(ctx))
	for _, p := range []string{"events/a.json", "events/foreign.json", "events/b.json"} {
		if _, err := s.Get(p); err != nil {
			t.Errorf("Get(%s): %v", p, err)
		}
	}
	if parent := strings.TrimSpace(gitCLI(t, dir, "rev-parse", string(RefName)+"^")); parent != foreign {
		t.Fatalf("parent of the new tip = %s, want the foreign commit %s", parent, foreign)
	}
	if tip := strings.TrimSpace(gitCLI(t, dir, "rev-parse", string(RefName))); tip != s.Tip() {
		t.Fatalf("branch %s, store tip %s", tip, s.Tip())
	}
	if got := gitCLI(t, dir, "show", string(RefName)+":events/b.json"); !strings.Contains(got, `"n":3`) {
		t.Fatalf("the fold commit holds events/b.json = %q", got)
	}
	fsck(t, dir)
}

// TestJournalLeftUnfolded: a journal a stopped server left unfolded is
// folded by whatever opens the repository next to write: a store without
// Options.Journal (which then removes the journal: its commits carry no
// trailer), or Compact (which rewrites the branch from git).
func TestJournalLeftUnfolded(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		open func(t *testing.T, dir string) *Store
	}{
		{"a store committing each batch", func(t *testing.T, dir string) *Store {
			s := openStore(t, dir)
			if _, err := os.Stat(filepath.Join(dir, journalName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the journal is still there after its fold: %v", err)
			}
			return s
		}},
		{"compact", func(t *testing.T, dir string) *Store {
			if _, err := Compact(ctx, dir, CompactOptions{Keep: 1}); err != nil {
				t.Fatal(err)
			}
			return journalStore(t, dir)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			s := journalStore(t, dir)
			putEvents(t, s, 0, 3)
			must(t, s.Checkpoint(ctx))
			putEvents(t, s, 3, 6)
			must(t, s.shut(false))
			s = tc.open(t, dir)
			defer s.Close()
			if n := len(s.List("events")); n != 6 {
				t.Fatalf("%d events, want 6", n)
			}
			if got := gitCLI(t, dir, "show", string(RefName)+":events/e5.json"); !strings.Contains(got, `"i":5`) {
				t.Fatalf("the branch holds e5 = %q", got)
			}
			fsck(t, dir)
		})
	}
}

// TestScanJournal: which frames a scan takes after the fold of frame
// folded, on journals as the write path leaves them.
func TestScanJournal(t *testing.T) {
	frame := func(seq uint64) []byte {
		return encodeFrame(seq, []journalEntry{{path: fmt.Sprintf("events/e%d.json", seq), raw: []byte(`{"seq":` + fmt.Sprint(seq) + `}`)}, {path: "events/gone.json", deleted: true}})
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return append(b, make([]byte, 64)...) // the preallocated zeros
	}
	torn := func(b []byte) []byte {
		return append(append([]byte(nil), b[:len(b)/2]...), make([]byte, len(b)-len(b)/2)...)
	}
	// Generation two's frame 4 overwrote generation one's frame 1 (of the
	// same length); frames 2 and 3 of generation one follow it.
	gen2 := cat(frame(4), frame(2), frame(3))
	for _, tc := range []struct {
		name    string
		data    []byte
		folded  uint64
		want    []uint64
		corrupt bool
	}{
		{"empty", cat(), 0, nil, false},
		{"all new", cat(frame(1), frame(2), frame(3)), 0, []uint64{1, 2, 3}, false},
		{"all folded", cat(frame(1), frame(2), frame(3)), 3, nil, false},
		{"half folded", cat(frame(1), frame(2), frame(3)), 1, []uint64{2, 3}, false},
		{"a new generation over an old one", gen2, 3, []uint64{4}, false},
		{"torn tail", cat(frame(1), frame(2), torn(frame(3))), 0, []uint64{1, 2}, false},
		{"a gap", cat(frame(1), frame(3)), 0, []uint64{1}, false},
		{"damaged middle", cat(frame(1), torn(frame(2)), frame(3)), 0, []uint64{1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames, _, err := scanJournal(tc.data, tc.folded)
			if errors.Is(err, ErrJournalCorrupt) != tc.corrupt || (err != nil && !tc.corrupt) {
				t.Fatalf("scan: %v, want corrupt %v", err, tc.corrupt)
			}
			var got []uint64
			for _, f := range frames {
				got = append(got, f.seq)
				if len(f.entries) != 2 || f.entries[0].path != fmt.Sprintf("events/e%d.json", f.seq) || !f.entries[1].deleted {
					t.Fatalf("frame %d decodes as %+v", f.seq, f.entries)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("frames %v, want %v", got, tc.want)
			}
		})
	}
}
