package state

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
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

// TestRunsWhole: memory keeps a run's runLite (what the overview indexes),
// not its log, input, result, steps, transcript or held files; every query
// that returns runs must give them whole, whether the run was indexed by a
// commit or by Open.
func TestRunsWhole(t *testing.T) {
	ctx := context.Background()
	m := testMailbox(3)
	id := m.Key().ID()
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	want := Run{FormatVersion: FormatVersion, ID: "r1", MailboxID: id, Phase: "development", Runner: "image", AdapterID: "codex",
		Status: RunSucceeded, CreatedAt: at, Log: "agent output\nmore\n", Input: "the prompt", Result: "done it",
		Steps:      []RunStep{{Kind: "tool", At: at, Tool: "bash", Args: "ls"}},
		Transcript: &RunTranscript{From: 1, Total: 3}, Held: &RunHeld{Files: []HeldFile{{Path: ".env", Reason: "secret"}}, Patch: "diff"}}
	ls := LLMSession{ID: "ls1", RunID: "r1", MailboxID: id, AdapterID: "codex", CreatedAt: at}
	reads := []wholeRead[Run]{
		{"Runs", func(s *Store) (Run, error) {
			runs, err := s.Runs(id)
			if len(runs) != 1 {
				return Run{}, fmt.Errorf("%d runs, %v", len(runs), err)
			}
			return runs[0], err
		}},
		{"RunWithSessions", func(s *Store) (Run, error) { r, _, err := s.RunWithSessions("r1"); return r, err }},
		{"ListRuns", func(s *Store) (Run, error) {
			runs, _, err := s.ListRuns(RunFilter{}, "", 10)
			if len(runs) != 1 {
				return Run{}, fmt.Errorf("%d runs, %v", len(runs), err)
			}
			return runs[0], err
		}},
		{"ListMailboxes' last run", func(s *Store) (Run, error) {
			rows, _, err := s.ListMailboxes(MailboxFilter{}, "", 10)
			if len(rows) != 1 || rows[0].LastRun == nil {
				return Run{}, fmt.Errorf("%d rows, %v", len(rows), err)
			}
			return *rows[0].LastRun, err
		}},
		{"Tx.Run", func(s *Store) (r Run, err error) {
			err = s.Update(ctx, func(tx *Tx) error { r, err = tx.Run(id, "r1"); return err })
			return r, err
		}},
	}
	checkWhole(t, want, reads, func(tx *Tx) error {
		if err := tx.PutMailbox(m); err != nil {
			return err
		}
		if err := tx.PutRun(want); err != nil {
			return err
		}
		return tx.PutLLMSession(ls)
	}, func(s *Store) error {
		if f := s.snap.files[s.snap.runs["r1"]]; reflect.TypeOf(f.val) != reflect.TypeFor[*runLite]() {
			return fmt.Errorf("the run in memory is whole (%T)", f.val)
		}
		return nil
	})
}

// TestSessionsWhole: memory keeps an llm session's sessionLite (what the
// resolver and the overview's totals ask), not its provider, model, names
// or outcome; every query that returns llm sessions must give them whole,
// whether the session was indexed by a commit or by Open.
func TestSessionsWhole(t *testing.T) {
	ctx := context.Background()
	m := testMailbox(4)
	id := m.Key().ID()
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	want := LLMSession{FormatVersion: FormatVersion, ID: "ls1", RunID: "r1", MailboxID: id, AdapterID: "codex", Provider: "openai",
		Model: "gpt-5", InputTokens: 1200, OutputTokens: 80, CostUSD: 0.013, DurationMS: 61000, Outcome: "ok",
		SessionName: ptr("alfred-4"), NativeSessionID: ptr("native-1"), Resumed: true, ResumeOf: ptr("native-0"), CreatedAt: at}
	reads := []wholeRead[LLMSession]{
		{"RunWithSessions", func(s *Store) (LLMSession, error) {
			_, ls, err := s.RunWithSessions("r1")
			if len(ls) != 1 {
				return LLMSession{}, fmt.Errorf("%d sessions, %v", len(ls), err)
			}
			return ls[0], err
		}},
		{"PriorSession", func(s *Store) (LLMSession, error) {
			ls, found, err := s.PriorSession(id, "codex", "")
			if !found {
				return LLMSession{}, fmt.Errorf("not found, %v", err)
			}
			return ls, err
		}},
		{"ListMailboxes' last session", func(s *Store) (LLMSession, error) {
			rows, _, err := s.ListMailboxes(MailboxFilter{}, "", 10)
			if len(rows) != 1 || rows[0].LastSession == nil {
				return LLMSession{}, fmt.Errorf("%d rows, %v", len(rows), err)
			}
			return *rows[0].LastSession, err
		}},
		{"Tx.LLMSession", func(s *Store) (ls LLMSession, err error) {
			err = s.Update(ctx, func(tx *Tx) error { ls, err = tx.LLMSession(id, "ls1"); return err })
			return ls, err
		}},
	}
	checkWhole(t, want, reads, func(tx *Tx) error {
		if err := tx.PutMailbox(m); err != nil {
			return err
		}
		if err := tx.PutRun(Run{ID: "r1", MailboxID: id, AdapterID: "codex", Status: RunSucceeded, CreatedAt: at}); err != nil {
			return err
		}
		return tx.PutLLMSession(want)
	}, func(s *Store) error {
		if f := s.snap.files[s.snap.sessionsByRun.one["r1"]]; reflect.TypeOf(f.val) != reflect.TypeFor[*sessionLite]() {
			return fmt.Errorf("the llm session in memory is %T, want *sessionLite", f.val)
		}
		if n := s.FailedResumes(id, "codex", "native-0", ""); n != 0 {
			return fmt.Errorf("FailedResumes = %d for a session that succeeded, want 0", n)
		}
		return nil
	})
}

// wholeRead is one query that must return a record whole.
type wholeRead[T any] struct {
	name string
	get  func(s *Store) (T, error)
}

// checkWhole writes the records with fill, then, once committed and once
// reopened, checks what memory keeps (lite) and that every read gives want.
func checkWhole[T any](t *testing.T, want T, reads []wholeRead[T], fill func(*Tx) error, lite func(*Store) error) {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Update(context.Background(), fill); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"committed", "reopened"} {
		if when == "reopened" {
			s.Close()
			s = openStore(t, dir)
		}
		if err := lite(s); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for _, rd := range reads {
			got, err := rd.get(s)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s = %+v, %v\nwant %+v", when, rd.name, got, err, want)
			}
		}
	}
	s.Close()
}

// TestSessionLiteOrder: the sessionLite orders llm sessions as their
// CreatedAt and ID do, to the nanosecond, before 1970 too.
func TestSessionLiteOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	times := []time.Time{t0, t0.Add(time.Nanosecond), t0.Add(time.Second - 1), t0.Add(time.Second), t0.Add(-time.Nanosecond),
		time.Date(1960, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(1960, 1, 1, 0, 0, 0, 7, time.FixedZone("x", 3600))}
	var all []*LLMSession
	for i, at := range times {
		for _, id := range []string{"a", "b"} {
			all = append(all, &LLMSession{ID: fmt.Sprintf("%s%d", id, i%2), RunID: "r", AdapterID: "codex", CreatedAt: at})
		}
	}
	lite := func(ls *LLMSession) *sessionLite {
		r := &record{val: ls}
		lightenSession("mailboxes/x/llm_sessions/"+ls.ID+".json", r)
		return r.val.(*sessionLite)
	}
	for _, a := range all {
		for _, b := range all {
			if got, want := sessionLess(lite(a), lite(b)), llmSessionLess(a, b); got != want {
				t.Errorf("sessionLess(%s %v, %s %v) = %v, want %v", a.ID, a.CreatedAt, b.ID, b.CreatedAt, got, want)
			}
		}
	}
}
