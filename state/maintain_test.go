package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// history writes a mailbox's life in separate commits, with another
// mailbox changing in between, and returns the mailbox's id.
func history(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	m, other := testMailbox(7), testMailbox(8)
	id := m.Key().ID()
	steps := []func(tx *Tx) error{
		func(tx *Tx) error { m.Status, m.Phase = "new", ""; return tx.PutMailbox(m) },
		func(tx *Tx) error { return tx.PutMailbox(other) },
		func(tx *Tx) error {
			return tx.PutRun(Run{ID: "r-1", MailboxID: id, Phase: "analysis", Status: RunRunning, CreatedAt: m.CreatedAt})
		},
		func(tx *Tx) error {
			m.Status, m.Phase, m.ActiveRunID = "functional_analysis", "analysis", "r-1"
			return tx.PutMailbox(m)
		},
		func(tx *Tx) error {
			if err := tx.PutLLMSession(LLMSession{ID: "s-1", RunID: "r-1", MailboxID: id, AdapterID: "codex"}); err != nil {
				return err
			}
			return tx.PutRun(Run{ID: "r-1", MailboxID: id, Phase: "analysis", Status: RunSucceeded, Log: strings.Repeat("x", 100), CreatedAt: m.CreatedAt})
		},
		func(tx *Tx) error { other.Title = "changed"; return tx.PutMailbox(other) },
	}
	for _, step := range steps {
		if err := s.Update(ctx, step); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func TestMailboxLog(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "state.git"))
	defer s.Close()
	id := history(t, s)
	var out bytes.Buffer
	if err := s.MailboxLog(context.Background(), &out, id, 0); err != nil {
		t.Fatal(err)
	}
	entries := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{ // newest first; the other mailbox's commits are not there
		"  + llm_sessions/s-1.json",
		`  ~ runs/r-1.json: log (102 bytes); status "running" -> "succeeded"`,
		`  ~ mailbox.json: active_run_id - -> "r-1"; phase "" -> "analysis"; status "new" -> "functional_analysis"`,
		"  + runs/r-1.json",
		"  + mailbox.json",
	}
	var changes []string
	commits := 0
	for _, l := range entries {
		if strings.HasPrefix(l, "  ") {
			changes = append(changes, l)
		} else {
			commits++
		}
	}
	if commits != 4 || strings.Join(changes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("mailbox log (%d commits):\n%s", commits, out.String())
	}

	for _, tt := range []struct {
		name, id string
		limit    int
		lines    int
		err      error
	}{
		{"limited", id, 1, 3, nil},
		{"unknown mailbox", testMailbox(99).Key().ID(), 0, 0, ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := s.MailboxLog(context.Background(), &out, tt.id, tt.limit)
			if !errors.Is(err, tt.err) || strings.Count(out.String(), "\n") != tt.lines {
				t.Fatalf("%v\n%s", err, out.String())
			}
		})
	}
}

// verifyCase spoils a healthy repository, and says what verify finds.
type verifyCase struct {
	name  string
	spoil func(t *testing.T, dir string, s *Store)
	want  []string
	// unloadable: the tip no longer opens, so the store opened before
	// the loss is verified
	unloadable bool
}

func verifyCases() []verifyCase {
	ctx := context.Background()
	return []verifyCase{
		{"healthy", nil, nil, false},
		{"dangling references", func(t *testing.T, dir string, s *Store) {
			ghost := testMailbox(404).Key().ID()
			err := s.Update(ctx, func(tx *Tx) error {
				m := testMailbox(7)
				m.ActiveRunID = "r-gone"
				if err := tx.PutMailbox(m); err != nil {
					return err
				}
				if err := tx.PutRun(Run{ID: "r-9", MailboxID: ghost, Status: RunQueued}); err != nil {
					return err
				}
				return tx.PutLLMSession(LLMSession{ID: "s-9", RunID: "r-none", MailboxID: m.Key().ID(), AdapterID: "codex"})
			})
			if err != nil {
				t.Fatal(err)
			}
		}, []string{`active run "r-gone" is not a record of it`, `mailbox "` + testMailbox(404).Key().ID() + `" has no record`,
			`run "r-none" is not a record of its mailbox`}, false},
		{"records out of place or unreadable", func(t *testing.T, dir string, s *Store) {
			d := mustDir(t, testMailbox(7).Key().ID())
			craftCommit(t, dir, map[string]string{
				d + "/runs/r-x.json":            `{"format_version": 1, "id": "r-y", "mailbox_id": "` + testMailbox(7).Key().ID() + `"}`,
				d + "/llm_sessions/broken.json": `{"format_version": 1, "id": `,
			})
		}, []string{`the run's id "r-y" is not its file name`, "llm_sessions/broken.json does not parse"}, false},
		{"a missing object", func(t *testing.T, dir string, s *Store) {
			commit := craftCommit(t, dir, map[string]string{"notes/a.json": `{"format_version": 1, "n": 1}`})
			tree := strings.TrimSpace(gitCLI(t, dir, "rev-parse", commit+"^{tree}"))
			os.Remove(filepath.Join(dir, "objects", tree[:2], tree[2:]))
		}, []string{"git fsck:"}, true},
	}
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	for _, tt := range verifyCases() {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			s := openStore(t, dir)
			history(t, s)
			if tt.spoil != nil {
				tt.spoil(t, dir, s)
			}
			s.Close()
			ro, err := Open(ctx, dir, Options{ReadOnly: true})
			if (err != nil) != tt.unloadable {
				t.Fatalf("open: %v", err)
			}
			if tt.unloadable {
				ro = s
			}
			var out bytes.Buffer
			n, err := ro.Verify(ctx, &out)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(tt.want) {
				t.Errorf("%d problems, want %d:\n%s", n, len(tt.want), out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("verify does not say %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	s := openStore(t, dir)
	history(t, s)
	s.Close()
	craftCommit(t, dir, map[string]string{"events/x/bad.json": `[1, 2`})
	s = openStore(t, dir)
	defer s.Close()
	var out bytes.Buffer
	n, err := s.Export(context.Background(), &out)
	if err != nil || n != s.Len() {
		t.Fatalf("export: %d of %d records, %v", n, s.Len(), err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var paths []string
	for _, l := range lines {
		var rec struct {
			Path   string          `json:"path"`
			Record json.RawMessage `json:"record"`
			Raw    string          `json:"raw"`
			Error  string          `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		paths = append(paths, rec.Path)
		if rec.Path == "events/x/bad.json" && (rec.Raw != "[1, 2" || rec.Error == "") {
			t.Errorf("unreadable record exported as %q", l)
		}
		if want, _ := s.Get(rec.Path); want != nil && !jsonEqual(want, rec.Record) {
			t.Errorf("%s exported as %s, want %s", rec.Path, rec.Record, want)
		}
	}
	if strings.Join(paths, "\n") != strings.Join(s.List(""), "\n") {
		t.Fatalf("exported paths %q, want every record in path order", paths)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// compactable writes a history of 46 commits, checks that Compact refuses
// while the store is open, and returns the repository, the mailbox's id,
// the tip and the record count.
func compactable(t *testing.T, opts CompactOptions) (dir, id, tip string, records int) {
	t.Helper()
	ctx := context.Background()
	dir = filepath.Join(t.TempDir(), "state.git")
	s := openStore(t, dir)
	defer s.Close()
	id = history(t, s)
	for i := range 40 {
		if err := s.Update(ctx, func(tx *Tx) error { return tx.Put(fmt.Sprintf("notes/%d.json", i), map[string]int{"n": i}) }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Compact(ctx, dir, opts); !errors.Is(err, ErrCompactRunning) {
		t.Fatalf("compact beside an open store: %v", err)
	}
	return dir, id, s.Tip(), s.Len()
}

func TestCompact(t *testing.T) {
	ctx := context.Background()
	stamp := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		opts    CompactOptions
		commits int // the branch's after 6 + 40 commits
		archive string
	}{
		{"bounded, with an archive", CompactOptions{Keep: 10, Archive: true}, 11, "refs/heads/alfred/archive/2026-12-01T093000Z"},
		{"bounded, without", CompactOptions{Keep: 1}, 2, ""},
		{"history already short", CompactOptions{Keep: 100}, 46, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, id, oldTip, records := compactable(t, tt.opts)
			tt.opts.Now = func() time.Time { return stamp }
			res, err := Compact(ctx, dir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Before != 46 || res.After != tt.commits || res.Archive != tt.archive || res.OldTip != oldTip {
				t.Fatalf("result %+v", res)
			}
			if n := strings.TrimSpace(gitCLI(t, dir, "rev-list", "--count", string(RefName))); n != fmt.Sprint(tt.commits) {
				t.Fatalf("%s commits left, want %d", n, tt.commits)
			}
			if tt.archive != "" && strings.TrimSpace(gitCLI(t, dir, "rev-parse", tt.archive)) != oldTip {
				t.Fatalf("the archive branch does not hold the old history")
			}
			if packs, _ := listPacks(dir, false); len(packs) != 1 {
				t.Fatalf("%d packs after compacting, want 1", len(packs))
			}
			fsck(t, dir)
			s := openStore(t, dir)
			defer s.Close()
			if !s.ckFoldedOK { // the checkpoint moved with the branch: same tree, same trailer
				t.Fatal("after compacting, the open checkpoint was not used")
			}
			if s.Len() != records || s.Tip() != res.NewTip {
				t.Fatalf("after compacting: %d records at %s, want %d at %s", s.Len(), s.Tip(), records, res.NewTip)
			}
			if _, err := s.Mailbox(testMailbox(7).Key()); err != nil {
				t.Fatal(err)
			}
			if err := s.Update(ctx, func(tx *Tx) error { return tx.Put("notes/after.json", map[string]int{"n": 1}) }); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			if err := s.MailboxLog(ctx, &log, id, 0); err != nil || !strings.Contains(log.String(), "+ mailbox.json") {
				t.Fatalf("the mailbox's history after compacting: %v\n%s", err, log.String())
			}
		})
	}
}
