package state

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// coldAnswers renders every answer of the store (storeAnswers), and those
// of each of its mailboxes.
func coldAnswers(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.SplitAfter(storeAnswers(t, s), "\n") {
		if !strings.HasPrefix(line, "tip: ") { // two stores commit at their own moments
			b.WriteString(line)
		}
	}
	put := func(what string, v any, err error) { renderAnswer(t, &b, what, v, err) }
	mbs, _ := s.Mailboxes()
	for _, m := range mbs {
		answerMailbox(&b, put, s, m)
	}
	return b.String()
}

// buildYearStore writes a month of the synthetic year into dir and closes
// it.
func buildYearStore(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	y, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	issue := 0
	for day := range 30 {
		at := yearEnd.AddDate(0, 0, day-30)
		err := y.Update(ctx, func(tx *Tx) error {
			for p := range 3 {
				for range 3 {
					if _, err := putYearIssue(tx, p, issue, at); err != nil {
						return err
					}
					issue++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := y.Close(); err != nil {
		t.Fatal(err)
	}
}

// freeze makes the store's finished mailboxes cold.
func freeze(t *testing.T, s *Store) {
	t.Helper()
	s.mu.RLock()
	f, err := captureFreeze(s.snap)
	s.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.freezeCold(f); err != nil {
		t.Fatal(err)
	}
}

// TestColdTierAnswersAsMemory: a store whose finished mailboxes are cold
// answers every query as the same store holding them in memory, before
// and after writes that make cold mailboxes warm (a run added, a
// mailbox deleted, one opened again, one changed and left finished), and
// after its mailboxes finished since are made cold in turn; memory then
// holds none of the finished mailboxes' records.
func TestColdTierAnswersAsMemory(t *testing.T) {
	for _, opts := range []Options{{}, {Journal: true, FoldIdle: time.Hour}} {
		for name, build := range map[string]func(*testing.T, string){
			"kinds": func(t *testing.T, dir string) { buildCheckpointStore(t, dir, opts) },
			"year":  buildYearStore,
		} {
			t.Run(name+map[bool]string{true: "/journal", false: ""}[opts.Journal], func(t *testing.T) {
				coldAgainstMemory(t, build, opts)
			})
		}
	}
}

func coldAgainstMemory(t *testing.T, build func(*testing.T, string), opts Options) {
	ctx := context.Background()
	clock := now
	defer func() { now = clock }()
	now = func() time.Time { return yearEnd } // the two stores write the same times
	dir := filepath.Join(t.TempDir(), "cold")
	build(t, dir)
	plainDir := filepath.Join(t.TempDir(), "plain")
	if err := os.CopyFS(plainDir, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	cold, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cold.shut(false)
	useCheckpoint = false // the plain store holds every record in memory
	plain, err := Open(ctx, plainDir, opts)
	useCheckpoint = true
	if err != nil {
		t.Fatal(err)
	}
	defer plain.shut(false)
	want := coldAnswers(t, plain)
	before := cold.Len()
	freeze(t, cold)
	if cold.snap.cold.n == 0 || len(cold.snap.files)+cold.snap.cold.n != before {
		t.Fatalf("%d records in memory and %d cold, of %d", len(cold.snap.files), cold.snap.cold.n, before)
	}
	diffColdAnswers(t, "frozen", want, coldAnswers(t, cold))
	if got, want := walkRecords(cold), walkRecords(plain); !slices.Equal(got, want) {
		t.Fatalf("records in order: %d of %d, want\n%q\ngot\n%q", len(got), len(want), want, got)
	}

	mbs, _ := cold.Mailboxes()
	var done []Mailbox
	for _, m := range mbs {
		if m.Finished() {
			done = append(done, m)
		}
	}
	if len(done) < 3 {
		t.Fatalf("%d finished mailboxes", len(done))
	}
	warmed := map[string]bool{} // a mailbox with an unreadable record stays in memory
	for _, m := range []Mailbox{done[0], done[1], done[2], done[len(done)-1]} {
		if cold.snap.coldDir(m.Key().dir()) {
			warmed[m.Key().dir()] = true
		}
	}
	if len(warmed) < 2 {
		t.Fatalf("%d of the mailboxes written are cold", len(warmed))
	}
	writes := []func(tx *Tx) error{
		func(tx *Tx) error { return putCkRuns(tx, 20, done[0]) },
		func(tx *Tx) error { return tx.DeleteMailbox(done[1].Key()) },
		func(tx *Tx) error {
			m := done[2]
			m.Status, m.Title = "in_review", "Opened again"
			return tx.PutMailbox(m)
		},
		func(tx *Tx) error {
			m := done[len(done)-1]
			m.Title = "Changed, still finished"
			return tx.PutMailbox(m)
		},
	}
	for i, w := range writes {
		for _, s := range []*Store{cold, plain} {
			if err := s.Update(ctx, w); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		diffColdAnswers(t, fmt.Sprintf("write %d", i), coldAnswers(t, plain), coldAnswers(t, cold))
	}
	if len(cold.snap.cold.warm) != len(warmed) {
		t.Fatalf("%d mailboxes made warm, want %d", len(cold.snap.cold.warm), len(warmed))
	}
	freeze(t, cold)
	diffColdAnswers(t, "frozen again", coldAnswers(t, plain), coldAnswers(t, cold))
	for p := range cold.snap.mailboxFiles {
		if _, open := cold.snap.openMailboxes[p]; !open {
			if _, readable, _ := cold.snap.coldGroup(mailboxDirOf(p)); readable {
				t.Fatalf("finished mailbox %s still in memory", p)
			}
		}
	}
}

func renderAnswer(t *testing.T, b *strings.Builder, what string, v any, err error) {
	t.Helper()
	raw, jerr := json.Marshal(v)
	if jerr != nil {
		t.Fatal(jerr)
	}
	fmt.Fprintf(b, "%s: %s err=%v\n", what, raw, err)
}

// diffColdAnswers fails when the answers differ, showing where.
func diffColdAnswers(t *testing.T, when, want, got string) {
	t.Helper()
	if want == got {
		return
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			j := 0
			for j < len(w[i]) && j < len(g[i]) && w[i][j] == g[i][j] {
				j++
			}
			from := max(0, j-200)
			t.Fatalf("%s: answers differ at line %d, byte %d:\nwant: %s\ngot:  %s", when, i, j, w[i][from:min(len(w[i]), j+200)], g[i][from:min(len(g[i]), j+200)])
		}
	}
	t.Fatalf("%s: answers differ in length: %d lines against %d", when, len(w), len(g))
}

// TestColdFileMissingOrDamaged: Close makes the finished mailboxes cold and
// the next Open reads them from the cold file, answering as a full load;
// with the cold file damaged, missing or another one, Open says why and
// reads every record, answering the same.
func TestColdFileMissingOrDamaged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	buildCheckpointStore(t, dir, Options{})
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // the first open read it whole: Close makes it cold
		t.Fatal(err)
	}
	want, _ := openAnswers(t, dir, Options{ReadOnly: true}, false)
	path := filepath.Join(dir, coldName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.git")
	buildYearStore(t, other)
	foreign, err := os.ReadFile(filepath.Join(other, coldName))
	if err != nil {
		t.Fatal(err)
	}
	ck, err := os.ReadFile(checkpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Clone(good)
	damaged[len(damaged)/3] ^= 0x40
	for _, c := range []struct {
		name string
		data []byte // nil: no file
		cold bool
	}{{"intact", good, true}, {"damaged", damaged, false}, {"missing", nil, false}, {"another store's", foreign, false}} {
		os.Remove(path)
		if c.data != nil {
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, opts := range []Options{{ReadOnly: true}, {}} {
			// A writable store that read every record writes a checkpoint
			// of them all: the one naming the cold file comes back.
			if err := os.WriteFile(checkpointPath(dir), ck, 0o644); err != nil {
				t.Fatal(err)
			}
			got, used := openAnswers(t, dir, opts, true)
			if used != c.cold {
				t.Fatalf("%s cold file, %+v: the checkpoint used: %v", c.name, opts, used)
			}
			diffColdAnswers(t, c.name+" cold file", want, got)
		}
	}
}

// TestColdFreezeInBackground: a running store makes its finished mailboxes
// cold once it holds enough of them, while writers go on (some finishing
// mailboxes, some opening cold ones again), and answers as a full load of
// the same branch and journal, before and after a reopen.
func TestColdFreezeInBackground(t *testing.T) {
	defer func(at int) { coldFreezeAt = at }(coldFreezeAt)
	coldFreezeAt = 4
	for _, opts := range []Options{{}, {Journal: true, FoldIdle: 10 * time.Millisecond}} {
		t.Run(fmt.Sprintf("journal=%v", opts.Journal), func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "state.git")
			s, err := Open(ctx, dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			write := func(round, i int) {
				m := testMailbox(int64(i + 1))
				m.Project = []string{"widget", "gadget"}[i%2]
				m.BranchName = fmt.Sprintf("alfred/issue-%d", i%7) // some share a route
				if (i+round)%3 != 0 {
					m.Status, m.Phase = MailboxDone, "done"
				}
				err := s.Update(ctx, func(tx *Tx) error {
					if err := tx.PutMailbox(m); err != nil {
						return err
					}
					return putCkRuns(tx, i+100*round, m)
				})
				if err != nil {
					t.Error(err)
				}
			}
			for round := range 3 {
				var wg sync.WaitGroup
				for w := range 4 {
					wg.Go(func() {
						for i := w; i < 24; i += 4 {
							write(round, i)
						}
					})
				}
				wg.Wait()
				s.freezeWG.Wait()
				write(round, 0) // the next batch installs the freeze
				s.mu.RLock()
				tier, hot := s.snap.cold, s.snap.hotFinished()
				s.mu.RUnlock()
				if tier == nil || tier.n == 0 || hot >= 16 {
					t.Fatalf("round %d: tier %v, %d finished mailboxes in memory", round, tier, hot)
				}
				got := coldAnswers(t, s)
				want, _ := openColdAnswers(t, dir, false)
				diffColdAnswers(t, fmt.Sprintf("round %d", round), stripTip(want), stripTip(got))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got, used := openColdAnswers(t, dir, true)
			want, _ := openColdAnswers(t, dir, false)
			if !used {
				t.Fatal("the reopen did not use the checkpoint")
			}
			diffColdAnswers(t, "reopened", want, got)
		})
	}
}

// stripTip drops the tip from rendered answers.
func stripTip(answers string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(answers, "\n") {
		if !strings.HasPrefix(line, "tip: ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// openColdAnswers opens dir read-only (with the checkpoint and cold file,
// or reading every record), renders coldAnswers and says whether the
// checkpoint was used.
func openColdAnswers(t *testing.T, dir string, withCk bool) (string, bool) {
	t.Helper()
	defer func(was bool) { useCheckpoint = was }(useCheckpoint)
	useCheckpoint = withCk
	s, err := Open(context.Background(), dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return coldAnswers(t, s), s.ckFoldedOK
}

// TestColdAfterFullLoad: a store that read every record (its checkpoint
// gone) makes its finished mailboxes cold in the background once a write
// comes, and its Close writes the checkpoint naming the cold file, which
// the next Open reads.
func TestColdAfterFullLoad(t *testing.T) {
	defer func(at int) { coldFreezeAt = at }(coldFreezeAt)
	coldFreezeAt = 2
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state.git")
	buildYearStore(t, dir)
	if err := os.Remove(checkpointPath(dir)); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ckFoldedOK || s.snap.cold != nil {
		t.Fatal("opened from a checkpoint")
	}
	s.ckWG.Wait()                                                         // the checkpoint of every record, at this tip
	if err := s.Update(ctx, func(*Tx) error { return nil }); err != nil { // a batch: the freeze starts; the tip stays
		t.Fatal(err)
	}
	s.freezeWG.Wait()
	if err := s.Close(); err != nil { // installs the freeze, then the checkpoint
		t.Fatal(err)
	}
	if s.snap.cold == nil || s.snap.hotFinished() != 0 {
		t.Fatalf("after Close: tier %v, %d finished mailboxes in memory", s.snap.cold, s.snap.hotFinished())
	}
	r, err := Open(ctx, dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.ckFoldedOK || r.snap.cold == nil || r.snap.cold.n == 0 {
		t.Fatalf("the next Open: checkpoint used %v, tier %v", r.ckFoldedOK, r.snap.cold)
	}
}

// walkRecords lists the store's records in order, each path with its blob.
func walkRecords(s *Store) []string {
	var out []string
	for p, r := range s.snap.records() {
		out = append(out, p+" "+r.hash.String())
	}
	return out
}

// TestColdCrashAfterFreeze: a background freeze removes the checkpoint
// naming the cold file it replaces, so that a store that stops without a
// Close (a crash) after it reads every record at its next Open, and
// answers as the branch and journal say; the Close after writes both again.
func TestColdCrashAfterFreeze(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state.git")
	buildYearStore(t, dir)
	s, err := Open(ctx, dir, Options{Journal: true, FoldIdle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		m := testMailbox(int64(900 + i))
		m.Status, m.Phase = MailboxDone, "done"
		if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(m) }); err != nil {
			t.Fatal(err)
		}
		s.mu.RLock()
		f, err := captureFreeze(s.snap)
		s.mu.RUnlock()
		if err == nil {
			err = f.write(dir, true)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(checkpointPath(dir)); !os.IsNotExist(err) {
			t.Fatalf("freeze %d: the checkpoint is still there (%v)", i, err)
		}
	}
	s.shut(false) // as a crash: no fold, no checkpoint
	got, used := openColdAnswers(t, dir, true)
	want, _ := openColdAnswers(t, dir, false)
	if used {
		t.Fatal("a checkpoint was used after the freeze removed it")
	}
	diffColdAnswers(t, "after the crash", want, got)
	s, err = Open(ctx, dir, Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, used = openColdAnswers(t, dir, true)
	if !used {
		t.Fatal("the Close after it wrote no checkpoint")
	}
	diffColdAnswers(t, "after the next Close", want, got)
}

// TestColdFileDamagedWhileOpen: when the cold file is damaged under a
// running store, the queries that read a cold mailbox say so, but writes go
// on: a new mailbox is made, and a write into a cold one reads it from the
// branch (the file is a copy of it), after which it answers whole.
func TestColdFileDamagedWhileOpen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state.git")
	buildYearStore(t, dir)
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.shut(false)
	mbs, err := s.Mailboxes()
	if err != nil {
		t.Fatal(err)
	}
	var done Mailbox
	for _, m := range mbs {
		if m.Finished() && s.snap.coldDir(m.Key().dir()) {
			done = m
			break
		}
	}
	runs, err := s.Runs(done.Key().ID())
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs of %s: %d, %v", done.Key().ID(), len(runs), err)
	}
	listed, all := s.List(done.Key().dir()), s.List("")
	// Every data block's bytes zeroed in place: the open file reads them.
	f, err := os.OpenFile(filepath.Join(dir, coldName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := f.WriteAt(make([]byte, st.Size()/2), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()

	if _, err := s.Mailbox(done.Key()); err == nil {
		t.Fatal("a cold mailbox read from a damaged file without error")
	}
	// The listings come from the branch when the file cannot give them.
	if got := s.List(done.Key().dir()); !slices.Equal(got, listed) {
		t.Fatalf("its folder listed from a damaged file: %q, want %q", got, listed)
	}
	if got := s.List(""); !slices.Equal(got, all) {
		t.Fatalf("the store listed from a damaged file: %d paths, want %d", len(got), len(all))
	}

	if _, _, err := s.RunWithSessions(runs[0].ID); err == nil {
		t.Fatal("a cold run read from a damaged file without error")
	}
	n := s.Len()
	changed := done
	changed.Title = "written into a damaged mailbox"
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(changed) }); err != nil {
		t.Fatalf("a write into a cold mailbox of a damaged file: %v", err)
	}
	if got, err := s.Mailbox(done.Key()); err != nil || got.Title != changed.Title {
		t.Fatalf("the mailbox written: %q, %v", got.Title, err)
	}
	if again, err := s.Runs(done.Key().ID()); err != nil || len(again) != len(runs) || again[0].ID != runs[0].ID {
		t.Fatalf("its runs, read back from the branch: %d (%v), want %d", len(again), err, len(runs))
	}
	if _, sessions, err := s.RunWithSessions(runs[0].ID); err != nil || len(sessions) == 0 {
		t.Fatalf("its first run's sessions: %d, %v", len(sessions), err)
	}
	fresh := testMailbox(999)
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(fresh) }); err != nil {
		t.Fatalf("a write elsewhere: %v", err)
	}
	if got, err := s.Mailbox(fresh.Key()); err != nil || got.IID != 999 {
		t.Fatalf("the mailbox written elsewhere: %v", err)
	}
	if s.Len() != n+1 {
		t.Fatalf("%d records, want %d", s.Len(), n+1)
	}
}
