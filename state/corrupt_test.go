package state

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// craftCommit adds files to the branch with the git CLI (loose objects, a
// temporary index) and returns the new commit.
func craftCommit(t *testing.T, repo string, files map[string]string) string {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	run := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"--git-dir", repo}, args...)...)
		cmd.Env = append(cmd.Environ(), "GIT_INDEX_FILE="+index, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitCLI(t, repo, "--version") // fails clearly when git is missing
	run("", "read-tree", string(RefName))
	for path, content := range files {
		blob := run(content, "hash-object", "-w", "--stdin")
		run("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+path)
	}
	tree := run("", "write-tree")
	commit := run("", "commit-tree", tree, "-p", string(RefName), "-m", "crafted bad records")
	run("", "update-ref", string(RefName), commit)
	return commit
}

func TestUnreadableRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	ctx := context.Background()
	s := openStore(t, dir)
	good, bad := testMailbox(1), testMailbox(2)
	goodID, badID := good.Key().ID(), bad.Key().ID()
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	err := s.Update(ctx, func(tx *Tx) error {
		for _, m := range []Mailbox{good, bad} {
			if err := tx.PutMailbox(m); err != nil {
				return err
			}
			id := m.Key().ID()
			if err := tx.PutRun(Run{ID: "r-" + id[len(id)-1:], MailboxID: id, Status: RunSucceeded, CreatedAt: t0}); err != nil {
				return err
			}
			if err := tx.PutLLMSession(LLMSession{ID: "s-old", RunID: "r-" + id[len(id)-1:], MailboxID: id, AdapterID: "codex",
				NativeSessionID: ptr("n-old"), CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	badDir := mustDir(t, badID)
	corruptPath := badDir + "/mailbox.json"
	futurePath := badDir + "/llm_sessions/s-new.json"
	commit := craftCommit(t, dir, map[string]string{
		corruptPath:         `{"format_version": 1, "id": "` + badID + `", "title": `,
		futurePath:          `{"format_version": 99, "id": "s-new", "run_id": "r-2", "adapter_id": "codex", "native_session_id": "n-new"}`,
		"events/x/bad.json": `[1, 2`,
	})

	s, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatalf("Open with bad records: %v", err)
	}
	defer s.Close()
	probs := s.Problems()
	if len(probs) != 3 {
		t.Fatalf("Problems = %v, want 3", probs)
	}
	for _, p := range probs {
		if p.Commit != commit || !strings.Contains(p.Error(), p.Path) || !strings.Contains(p.Error(), commit) {
			t.Errorf("problem %v: want path and commit %s in it", p, commit)
		}
	}
	var ue *UnreadableError
	if _, err := s.Mailbox(bad.Key()); !errors.As(err, &ue) || ue.Path != corruptPath || ue.Commit != commit {
		t.Fatalf("Mailbox(bad) = %v, want UnreadableError for %s", err, corruptPath)
	}
	ls, found, err := s.PriorSession(badID, "codex", "")
	if !errors.As(err, &ue) || ue.Path != futurePath || !errors.Is(err, ErrFutureVersion) {
		t.Fatalf("PriorSession(bad) err = %v, want future-version UnreadableError for %s", err, futurePath)
	}
	if !found || ls.ID != "s-old" {
		t.Fatalf("PriorSession(bad) = %+v %v, want the readable s-old alongside the error", ls, found)
	}
	if _, _, err := s.RunWithSessions("r-2"); !errors.As(err, &ue) {
		t.Fatalf("RunWithSessions(r-2) = %v, want UnreadableError", err)
	}
	if _, err := s.Get("events/x/bad.json"); !errors.As(err, &ue) {
		t.Fatalf("Get(bad event) = %v, want UnreadableError", err)
	}
	var out bytes.Buffer
	if err := s.Show(ctx, &out, corruptPath); !errors.As(err, &ue) || !strings.Contains(out.String(), `"title": `) {
		t.Fatalf("Show(corrupt) = %q, %v", out.String(), err)
	}

	// Nothing else is lost.
	if m, err := s.Mailbox(good.Key()); err != nil || m.Title != good.Title {
		t.Fatalf("Mailbox(good) = %+v, %v", m, err)
	}
	if ls, found, err := s.PriorSession(goodID, "codex", ""); err != nil || !found || *ls.NativeSessionID != "n-old" {
		t.Fatalf("PriorSession(good) = %+v %v %v", ls, found, err)
	}
	if runs, err := s.Runs(badID); err != nil || len(runs) != 1 {
		t.Fatalf("Runs(bad) = %+v, %v", runs, err)
	}

	// Writing a good record over the corrupt one clears the problem, and the
	// store keeps committing on top of the crafted commit.
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(bad) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mailbox(bad.Key()); err != nil {
		t.Fatalf("Mailbox(bad) after rewrite: %v", err)
	}
	if n := len(s.Problems()); n != 2 {
		t.Fatalf("Problems after rewrite = %d, want 2", n)
	}
	if parent := strings.TrimSpace(gitCLI(t, dir, "rev-parse", string(RefName)+"^")); parent != commit {
		t.Fatalf("parent of the new tip = %s, want the crafted %s", parent, commit)
	}
	fsck(t, dir)
}

// TestReadOnlyInspection checks Log and Show on a read-only store while a
// writer holds the lock.
func TestReadOnlyInspection(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	ctx := context.Background()
	if _, err := Open(ctx, dir, Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only Open of a missing repository: %v", err)
	}
	s := openStore(t, dir)
	defer s.Close()
	mb := testMailbox(3)
	for i := range 3 {
		mb.LLMRetries = i
		if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(mb) }); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := Open(ctx, dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var log, show bytes.Buffer
	if err := ro.Log(ctx, &log, 2); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	path := mustDir(t, mb.Key().ID()) + "/mailbox.json"
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " put "+path) || !strings.HasPrefix(lines[0], ro.Tip()) {
		t.Fatalf("Log = %q", log.String())
	}
	if err := ro.Show(ctx, &show, path); err != nil || !strings.Contains(show.String(), `"llm_retries": 2`) {
		t.Fatalf("Show = %q, %v", show.String(), err)
	}
	if err := ro.Show(ctx, &show, "nope.json"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Show(missing) = %v", err)
	}
}

// TestLostRace moves the branch behind the store's back (the git CLI
// ignoring the lock): the next Update loses the compare-and-swap, re-reads
// the tip, runs its function again and commits on top of the foreign commit.
func TestLostRace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	ctx := context.Background()
	s := openStore(t, dir)
	defer s.Close()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.Put("events/a.json", map[string]int{"n": 1}) }); err != nil {
		t.Fatal(err)
	}
	foreign := craftCommit(t, dir, map[string]string{"events/foreign.json": `{"n": 2}`})
	calls := 0
	sawForeign := false
	err := s.Update(ctx, func(tx *Tx) error {
		calls++
		_, err := tx.Get("events/foreign.json")
		sawForeign = err == nil
		return tx.Put("events/b.json", map[string]int{"n": 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || !sawForeign {
		t.Fatalf("fn ran %d times (want 2), saw the foreign record on the last run: %v", calls, sawForeign)
	}
	for _, p := range []string{"events/a.json", "events/foreign.json", "events/b.json"} {
		if _, err := s.Get(p); err != nil {
			t.Errorf("Get(%s): %v", p, err)
		}
	}
	if parent := strings.TrimSpace(gitCLI(t, dir, "rev-parse", string(RefName)+"^")); parent != foreign {
		t.Fatalf("parent of the new tip = %s, want the foreign commit %s", parent, foreign)
	}
	fsck(t, dir)
}
