package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ckMailboxes are the mailboxes of the checkpoint tests: open and
// finished ones, of issues and merge requests, in two projects, one
// finished with a run in progress, two issues sharing a branch route.
func ckMailboxes() []Mailbox {
	t0 := time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)
	var out []Mailbox
	for i := range 8 {
		m := testMailbox(int64(i + 1))
		m.Project = []string{"widget", "gadget"}[i%2]
		m.Title = fmt.Sprintf("Mailbox %d", i)
		m.CreatedAt = t0.Add(time.Duration(i) * time.Hour)
		m.BranchName = fmt.Sprintf("alfred/issue-%d", i+1)
		m.HeadSHA = fmt.Sprintf("%040d", i)
		switch i % 4 {
		case 0, 1:
			m.Status, m.Phase, m.MergeRequestIID = MailboxDone, "done", int64(100+i)
			m.End = &MailboxEnd{How: EndMerged, By: "lead", At: m.CreatedAt.Add(time.Hour)}
		case 2:
			m.Status = "in_review"
		}
		out = append(out, m)
	}
	out[0].Title += "\xff" // finished: memory keeps its title, Close takes it from the JSON (U+FFFD)
	out[1].Quarantined = []QuarantinedEvent{{Delivery: "d1", Type: "issue_comment", Error: "boom", At: t0}}
	out[4].ActiveRunID = "r-4-0"                              // done, but a run is in progress: open
	out[5].BranchName = out[1].BranchName                     // two issues of gadget claim one branch
	out[6].Kind, out[6].Title = KindMR, "A merge request\xff" // invalid UTF-8: the JSON holds U+FFFD
	return out
}

// buildCheckpointStore writes a store holding every kind of record,
// readable and not, and closes it (which writes its checkpoint).
func buildCheckpointStore(t *testing.T, dir string, opts Options) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	mbs := ckMailboxes()
	err = s.Update(ctx, func(tx *Tx) error {
		for i, m := range mbs {
			if err := tx.PutMailbox(m); err != nil {
				return err
			}
			if err := putCkRuns(tx, i, m); err != nil {
				return err
			}
		}
		if err := tx.PutInstallation(AgentInstallation{AdapterID: "codex", Runner: "image", Image: "alfred/codex:1", Version: "1.2"}); err != nil {
			return err
		}
		if err := tx.PutSetting(SettingOverride{Scope: ScopeOrganization, Forge: "forgejo", Owner: "acme", Key: "AGENT_ADAPTER", Value: json.RawMessage(`"codex"`)}); err != nil {
			return err
		}
		if err := tx.PutSetting(SettingOverride{Scope: ScopeProject, Forge: "forgejo", Owner: "acme", Project: "widget", Key: "AGENT_BUDGET_USD", Value: json.RawMessage(`5`)}); err != nil {
			return err
		}
		if err := tx.Put("queue/events/e1.json", map[string]any{"format_version": 1, "kind": "push"}); err != nil {
			return err
		}
		return tx.Put("queue/events/e2.json", map[string]any{"kind": "note"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mb := mbs[0].Key().dir()
	craftCommit(t, dir, map[string]string{
		mbs[3].Key().dir() + "/mailbox.json":          `{"format_version": 1, "title": `,
		mb + "/runs/future.json":                      `{"format_version": 999, "id": "future"}`,
		mb + "/runs/renamed.json":                     `{"format_version": 1, "id": "not-its-name", "mailbox_id": "` + mbs[0].Key().ID() + `", "status": "failed", "phase": "review", "adapter_id": "opencode", "created_at": "2026-10-03T01:02:03.5Z"}`,
		mb + "/llm_sessions/broken.json":              `not json`,
		mb + "/llm_sessions/other-name.json":          `{"format_version": 1, "id": "s-elsewhere", "run_id": "not-its-name", "adapter_id": "opencode", "input_tokens": 7, "created_at": "2026-10-03T01:02:04Z"}`,
		"installations/claude/image/_.json":           `{"format_version": 1,`,
		"queue/events/bad.json":                       `[1, 2`,
		"queue/events/later.json":                     `{"format_version": 999}`,
		"mailboxes/forgejo/acme/odd/issue/0/7/x.json": `{"format_version": 1}`,
	})
}

// putCkRuns writes mailbox i's runs and llm sessions, of every status,
// phase and adapter, and sessions of every flag.
func putCkRuns(tx *Tx, i int, m Mailbox) error {
	id := m.Key().ID()
	for j := range 3 {
		at := m.CreatedAt.Add(time.Duration(j) * 30 * time.Minute)
		r := Run{ID: fmt.Sprintf("r-%d-%d", i, j), MailboxID: id, Phase: []string{"analysis", "development", "review"}[j],
			AdapterID: []string{"codex", "claude-code"}[(i+j)%2], Status: []RunStatus{RunSucceeded, RunFailed}[(i*j)%2], CreatedAt: at}
		if i == 2 && j == 2 {
			r.ID = "r 2/2" // escaped in its path: its id is not its file name
		}
		if err := tx.PutRun(r); err != nil {
			return err
		}
		ls := LLMSession{ID: fmt.Sprintf("s-%d-%d", i, j), RunID: r.ID, MailboxID: id, AdapterID: r.AdapterID,
			InputTokens: int64(100 * (i + 1)), OutputTokens: int64(10 * (j + 1)), CostUSD: 0.01 * float64(i+j), CreatedAt: at.Add(time.Minute)}
		switch (i + j) % 4 {
		case 0:
			ls.NativeSessionID = ptr(fmt.Sprintf("n-%d-%d", i, j))
		case 1:
			ls.ResumeOf, ls.Outcome = ptr("n-x"), "failed"
			if j == 0 {
				ls.ResumeFallback = ptr("session_gone")
			}
		case 2:
			ls.NativeSessionID, ls.Resumed, ls.ResumeOf = ptr("n-y"), true, ptr("n-y")
		}
		if err := tx.PutLLMSession(ls); err != nil {
			return err
		}
	}
	// Two failed resumes of one native session, the older one fallen back
	// to a fresh start: FailedResumes counts the newer one only.
	for k, fallback := range []*string{ptr("session_gone"), nil} {
		ls := LLMSession{ID: fmt.Sprintf("s-%d-resume-%d", i, k), RunID: fmt.Sprintf("r-%d-0", i), MailboxID: id, AdapterID: "opencode",
			ResumeOf: ptr("n-x"), ResumeFallback: fallback, Outcome: "failed", CreatedAt: m.CreatedAt.Add(time.Duration(k+5) * time.Minute)}
		if err := tx.PutLLMSession(ls); err != nil {
			return err
		}
	}
	return nil
}

// storeAnswers renders what the public queries answer on s, for
// comparing two opens of one repository.
func storeAnswers(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	put := func(what string, v any, err error) {
		raw, jerr := json.Marshal(v)
		if jerr != nil {
			t.Fatal(jerr)
		}
		fmt.Fprintf(&b, "%s: %s err=%v\n", what, raw, err)
	}
	put("tip", s.Tip(), nil)
	put("len", s.Len(), nil)
	for _, p := range s.Problems() {
		put("problem", p.Error(), nil)
	}
	put("list", s.List(""), nil)
	mbs, err := s.Mailboxes()
	put("mailboxes", mbs, err)
	open, err := s.OpenMailboxes()
	put("open", open, err)
	for _, m := range ckMailboxes() {
		answerMailbox(&b, put, s, m)
	}
	inst, err := s.Installations()
	put("installations", inst, err)
	for _, sc := range [][4]string{{ScopeOrganization, "forgejo", "acme", ""}, {ScopeProject, "forgejo", "acme", "widget"}} {
		set, err := s.Settings(sc[0], sc[1], sc[2], sc[3])
		put("settings", set, err)
	}
	for _, p := range s.List("queue") {
		raw, err := s.Get(p)
		put("get "+p, string(raw), err)
	}
	answerOverview(put, s)
	return b.String()
}

func answerMailbox(b *strings.Builder, put func(string, any, error), s *Store, m Mailbox) {
	id := m.Key().ID()
	got, err := s.Mailbox(m.Key())
	put("mailbox "+id, got, err)
	runs, err := s.Runs(id)
	put("runs "+id, runs, err)
	for _, r := range runs {
		run, sessions, err := s.RunWithSessions(r.ID)
		put("run "+r.ID, []any{run, sessions}, err)
	}
	for _, a := range []string{"codex", "claude-code", "opencode"} {
		ls, found, err := s.PriorSession(id, a, "")
		put("prior "+a, []any{ls, found}, err)
		other, err := s.OtherAdapterSession(id, a)
		put("other "+a, other, err)
		put("failed "+a, s.FailedResumes(id, a, "n-x", ""), nil)
	}
	for _, rt := range routesOf(&m) {
		got, found, err := s.Routed(rt)
		put(fmt.Sprintf("routed %v", rt), []any{got.ID, found}, err)
	}
	fmt.Fprintln(b)
}

func answerOverview(put func(string, any, error), s *Store) {
	filters := []MailboxFilter{{}, {Forge: "forgejo", Owner: "acme", Project: "gadget"}, {Statuses: []string{MailboxDone}},
		{Quarantined: true}, {Title: "mailbox 1"}, {Title: "\ufffd"}}
	for _, f := range filters {
		for cursor, pages := "", 0; pages == 0 || cursor != ""; pages++ {
			rows, next, err := s.ListMailboxes(f, cursor, 3)
			put(fmt.Sprintf("mailbox page %+v %q", f, cursor), rows, err)
			cursor = next
		}
	}
	runFilters := []RunFilter{{}, {Project: "widget", Forge: "forgejo", Owner: "acme"}, {Statuses: []string{string(RunFailed)}},
		{Phases: []string{"review"}, Adapters: []string{"codex"}}}
	for _, f := range runFilters {
		for cursor, pages := "", 0; pages == 0 || cursor != ""; pages++ {
			runs, next, err := s.ListRuns(f, cursor, 5)
			put(fmt.Sprintf("run page %+v %q", f, cursor), runs, err)
			cursor = next
		}
		put(fmt.Sprintf("daily %+v", f), s.Daily(f, time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)), nil)
	}
	put("projects", s.Projects(), nil)
}

// openAnswers opens dir (with the checkpoint or without), renders its
// answers, says whether the checkpoint was used and closes it.
func openAnswers(t *testing.T, dir string, opts Options, withCk bool) (string, bool) {
	t.Helper()
	defer func(was bool) { useCheckpoint = was }(useCheckpoint)
	useCheckpoint = withCk
	s, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.shut(false) // no fold, no checkpoint written
	return storeAnswers(t, s), s.ckFoldedOK
}

// diffAnswers fails when two renderings differ, showing where.
func diffAnswers(t *testing.T, want, got string) {
	t.Helper()
	diffColdAnswers(t, "a full load against the checkpoint", want, got)
}

func TestCheckpointOpenAnswersAsFullLoad(t *testing.T) {
	for _, opts := range []Options{{}, {Journal: true, FoldIdle: time.Hour}} {
		t.Run(fmt.Sprintf("journal=%v", opts.Journal), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			buildCheckpointStore(t, dir, opts)
			// The crafted commit moved the tip: the first open reads it whole
			// and writes the checkpoint in the background; Close waits for it.
			s, err := Open(context.Background(), dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if s.ckFoldedOK {
				t.Fatal("a stale checkpoint was used")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			want, _ := openAnswers(t, dir, Options{ReadOnly: true}, false)
			if !strings.Contains(want, "not json") && !strings.Contains(want, "unreadable") {
				t.Fatalf("the store holds no unreadable record:\n%s", want)
			}
			for _, o := range []Options{{ReadOnly: true}, opts} {
				got, used := openAnswers(t, dir, o, true)
				if !used {
					t.Fatalf("open %+v did not use the checkpoint", o)
				}
				diffAnswers(t, want, got)
			}
			changeAndCompare(t, dir, opts)
		})
	}
}

// changeAndCompare writes through a store opened from the checkpoint
// (finished mailboxes deleted and changed, runs and sessions added),
// closes it, which writes the checkpoint of the new tip from the old one,
// and compares the next open with a full load; and a journal left
// unfolded is replayed on top of the checkpoint as on a full load.
func changeAndCompare(t *testing.T, dir string, opts Options) {
	ctx := context.Background()
	mbs := ckMailboxes()
	s, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	write := func(i int) {
		err := s.Update(ctx, func(tx *Tx) error {
			if err := tx.DeleteMailbox(mbs[i].Key()); err != nil {
				return err
			}
			m := mbs[i+1]
			m.Status, m.Title, m.ActiveRunID = MailboxDone, "Changed", ""
			if err := tx.PutMailbox(m); err != nil {
				return err
			}
			return putCkRuns(tx, i+10, m)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	closeAndCompare(t, s, dir)
	if !opts.Journal {
		return
	}
	if s, err = Open(ctx, dir, opts); err != nil {
		t.Fatal(err)
	}
	write(4)
	s.shut(false) // the journal stays unfolded, as after a crash
	want, _ := openAnswers(t, dir, Options{ReadOnly: true}, false)
	got, used := openAnswers(t, dir, Options{ReadOnly: true}, true)
	if !used {
		t.Fatal("the checkpoint was not used under a journal")
	}
	diffAnswers(t, want, got)
}

func TestCheckpointDamagedOrStale(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	buildCheckpointStore(t, dir, Options{})
	s := openStore(t, dir) // reads it whole, writes the checkpoint
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(checkpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := openAnswers(t, dir, Options{ReadOnly: true}, false)
	cases := []struct {
		name   string
		damage func([]byte) []byte // nil: no checkpoint file
		reason string              // in the log line; "" for none
	}{
		{"missing", nil, ""},
		{"empty", func([]byte) []byte { return nil }, "size 0"},
		{"flipped byte", func(d []byte) []byte { d[len(d)/2] ^= 0x40; return d }, "checksum"},
		{"flipped checksum", func(d []byte) []byte { d[len(d)-1] ^= 1; return d }, "checksum"},
		{"truncated", func(d []byte) []byte { return d[:len(d)*2/3] }, "checksum"},
		{"appended", func(d []byte) []byte { return append(d, 0) }, "checksum"},
		{"bad magic", func(d []byte) []byte { d[0] = 'X'; return fixCkSum(d) }, "magic"},
		{"other version", func(d []byte) []byte { binary.LittleEndian.PutUint32(d[8:], 99); return fixCkSum(d) }, "format version 99"},
		{"absurd records", func(d []byte) []byte { binary.LittleEndian.PutUint32(d[60:], 1<<31); return fixCkSum(d) }, "do not fit"},
		{"absurd strings", func(d []byte) []byte { binary.LittleEndian.PutUint32(d[76:], 1<<30); return fixCkSum(d) }, "do not fit"},
		{"one record less", func(d []byte) []byte {
			binary.LittleEndian.PutUint32(d[60:], binary.LittleEndian.Uint32(d[60:])-1)
			return fixCkSum(d)
		}, "records read"},
		{"stale", func(d []byte) []byte { d[12] ^= 1; return fixCkSum(d) }, "stale"},
		{"garbled records", func(d []byte) []byte {
			for i := len(d) - 200; i < len(d)-4; i++ {
				d[i] = 0xff
			}
			return fixCkSum(d)
		}, "record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(checkpointPath(dir))
			if c.damage != nil {
				if err := os.WriteFile(checkpointPath(dir), c.damage(slices.Clone(good)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			got, used := openAnswers(t, dir, Options{ReadOnly: true, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, true)
			if used {
				t.Fatal("the checkpoint was used")
			}
			diffAnswers(t, want, got)
			lines := strings.Count(logs.String(), "checkpoint not used")
			switch {
			case c.reason == "" && lines != 0:
				t.Fatalf("a missing checkpoint was logged: %s", logs.String())
			case c.reason != "" && (lines != 1 || !strings.Contains(logs.String(), c.reason)):
				t.Fatalf("want one line saying %q, got: %s", c.reason, logs.String())
			}
		})
	}
	// A writable open that read the store whole puts a good checkpoint back.
	s = openStore(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, used := openAnswers(t, dir, Options{ReadOnly: true}, true); !used {
		t.Fatal("the checkpoint was not rewritten")
	}
}

// TestCheckpointRandomDamage: a checkpoint damaged anywhere, its checksum
// left or made right, never panics Open nor fails it; unless the checksum
// was made right, the answers are the full load's.
func TestCheckpointRandomDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	buildCheckpointStore(t, dir, Options{})
	s := openStore(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(checkpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := openAnswers(t, dir, Options{ReadOnly: true}, false)
	quiet := slog.New(slog.DiscardHandler)
	for i := range 200 {
		d := slices.Clone(good)
		at := (i*7919 + 13) % len(d)
		d[at] ^= byte(1 + i%255)
		fixed := i%2 == 1
		if fixed {
			d = fixCkSum(d)
		}
		if err := os.WriteFile(checkpointPath(dir), d, 0o644); err != nil {
			t.Fatal(err)
		}
		got, used := openAnswers(t, dir, Options{ReadOnly: true, Logger: quiet}, true)
		if !fixed {
			if used {
				t.Fatalf("damage at byte %d: the checkpoint was used", at)
			}
			diffAnswers(t, want, got)
		}
	}
}

// TestCheckpointFirstClose: a store filled from empty in one process has
// no checkpoint to take entries from; Close decodes every record from its
// blob, and the next open from that checkpoint answers as a full load.
func TestCheckpointFirstClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	s := openStore(t, dir)
	err := s.Update(context.Background(), func(tx *Tx) error {
		for i, m := range ckMailboxes() {
			if err := tx.PutMailbox(m); err != nil {
				return err
			}
			if err := putCkRuns(tx, i, m); err != nil {
				return err
			}
		}
		return tx.Put("queue/events/e1.json", map[string]any{"format_version": 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(checkpointPath(dir)); err == nil {
		t.Fatal("a checkpoint was written before Close")
	}
	closeAndCompare(t, s, dir)
}

// TestCheckpointMergeCopies: the checkpoint Close writes from the one
// already there (its unchanged records' bytes copied, their strings
// renumbered) is byte for byte the one written from every record's blob;
// from a damaged old checkpoint (its checksum made right, so that the
// copier meets the damage) saving never fails nor panics, and its result
// opens as a full load does when the damage is caught.
func TestCheckpointMergeCopies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	buildCheckpointStore(t, dir, Options{})
	s := openStore(t, dir)
	defer s.Close()
	s.ckWG.Wait()
	if err := s.saveCheckpoint(); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(checkpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	mbs := ckMailboxes()
	err = s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.DeleteMailbox(mbs[0].Key()); err != nil {
			return err
		}
		m := mbs[1]
		m.Status, m.Title, m.ActiveRunID = MailboxDone, "Changed", ""
		if err := tx.PutMailbox(m); err != nil {
			return err
		}
		m.Project = "aaa" // first in path order: the new strings are numbered otherwise
		if err := tx.PutMailbox(m); err != nil {
			return err
		}
		return putCkRuns(tx, 10, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	save := func(from []byte) []byte {
		t.Helper()
		os.Remove(checkpointPath(dir))
		if from != nil {
			if err := os.WriteFile(checkpointPath(dir), from, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.saveCheckpoint(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(checkpointPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := save(nil)
	if got := save(old); !bytes.Equal(got, want) {
		t.Fatalf("merged checkpoint (%d bytes) differs from the one from blobs (%d bytes)", len(got), len(want))
	}
	ckDamageSaves(t, s, old, save, want)
}

// ckDamageSaves saves from copies of old damaged past its header, each
// alone; the result must be a checkpoint of the tip that reads whole,
// and want itself when the damage breaks the old one's checksum.
func ckDamageSaves(t *testing.T, s *Store, old []byte, save func([]byte) []byte, want []byte) {
	t.Helper()
	for i := range 120 {
		d := slices.Clone(old)
		at := ckHeaderSize + (i*7919+13)%(len(d)-4-ckHeaderSize)
		d[at] ^= byte(1 + i%255)
		fixed := i%4 != 0
		if fixed {
			d = fixCkSum(d)
		}
		got := save(d)
		if !fixed && !bytes.Equal(got, want) {
			t.Fatalf("damage at byte %d, checksum broken: the save differs from the one from blobs", at)
		}
		h, dec, err := openCheckpoint(got)
		var e ckEntry
		for err == nil && dec.next(&e) {
		}
		if err == nil {
			err = dec.end(h)
		}
		if err != nil || h.tip != s.snap.tip {
			t.Fatalf("damage at byte %d: the checkpoint saved does not read (%v) or is not the tip's", at, err)
		}
	}
}

// TestFoldedSeqIn: the trailer walk through the store's pack reader, which
// Close uses for the checkpoint, finds what foldedSeq (go-git's storage)
// finds: the journal's folds, then commits without a trailer on top.
func TestFoldedSeqIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	ctx := context.Background()
	check := func(s *Store, wantSome bool) {
		t.Helper()
		want, err := foldedSeq(dir, s.snap.tip)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.foldedSeqIn(s.snap.tip)
		if err != nil || got != want || (want == 0) == wantSome {
			t.Fatalf("foldedSeqIn = %d, %v; foldedSeq says %d (a trailer expected: %v)", got, err, want, wantSome)
		}
	}
	for i, opts := range []Options{{Journal: true}, {}} {
		s, err := Open(ctx, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			err := s.Update(ctx, func(tx *Tx) error {
				return tx.Put(fmt.Sprintf("queue/events/e%d-%d.json", i, j), map[string]any{"format_version": 1})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		s.jmu.Lock()
		err = s.foldLocked()
		s.jmu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		check(s, true)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// closeAndCompare closes s, then checks that the checkpoint its Close
// wrote is used by the next Open and answers as a full load.
func closeAndCompare(t *testing.T, s *Store, dir string) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want, _ := openAnswers(t, dir, Options{ReadOnly: true}, false)
	got, used := openAnswers(t, dir, Options{ReadOnly: true}, true)
	if !used {
		t.Fatal("the checkpoint written at Close was not used")
	}
	diffAnswers(t, want, got)
}
