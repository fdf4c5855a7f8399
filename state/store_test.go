package state

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRoundTripAndQueries(t *testing.T) {
	dir := t.TempDir() + "/state.git"
	ctx := context.Background()
	s := openStore(t, dir)
	mb := testMailbox(7)
	id := mb.Key().ID()
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.PutMailbox(mb); err != nil {
			return err
		}
		for i, r := range []string{"run-b", "run-a", "run-c"} {
			if err := tx.PutRun(Run{ID: r, MailboxID: id, Phase: "analysis", Runner: "image", AdapterID: "claude-code",
				Status: RunSucceeded, CreatedAt: t0.Add(time.Duration(i) * time.Minute), Log: "ok"}); err != nil {
				return err
			}
		}
		sessions := []LLMSession{
			{ID: "s1", RunID: "run-b", AdapterID: "claude-code", NativeSessionID: ptr("n1"), CreatedAt: t0},
			{ID: "s2", RunID: "run-a", AdapterID: "codex", NativeSessionID: ptr("x2"), CreatedAt: t0.Add(time.Minute)},
			{ID: "s3", RunID: "run-a", AdapterID: "claude-code", NativeSessionID: ptr("n3"), CreatedAt: t0.Add(2 * time.Minute)},
			{ID: "s4", RunID: "run-c", AdapterID: "claude-code", CreatedAt: t0.Add(3 * time.Minute), ResumeFallback: ptr("no_prior_session")},
		}
		for _, ls := range sessions {
			ls.MailboxID = id
			if err := tx.PutLLMSession(ls); err != nil {
				return err
			}
		}
		// Reads inside the transaction see its own writes.
		got, err := tx.Mailbox(mb.Key())
		if err != nil || got.Title != mb.Title {
			t.Errorf("tx.Mailbox = %+v, %v", got, err)
		}
		if err := tx.PutInstallation(AgentInstallation{AdapterID: "claude-code", Runner: "image", Image: "alfred/agents:1", Version: "2.0.1", ResumableSessions: true}); err != nil {
			return err
		}
		if err := tx.PutSetting(SettingOverride{Scope: ScopeProject, Forge: "forgejo", Owner: "acme", Project: "widget", Key: "BRANCH_PREFIX", Value: []byte(`"bot/"`)}); err != nil {
			return err
		}
		return tx.Put("events/2026/11/30/d1.json", map[string]any{"delivery": "d1", "format_version": 1})
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	check := func(s *Store) {
		t.Helper()
		got, err := s.Mailbox(mb.Key())
		if err != nil || got.Title != mb.Title || got.ID != id || got.FormatVersion != FormatVersion {
			t.Fatalf("Mailbox = %+v, %v", got, err)
		}
		runs, err := s.Runs(id)
		if err != nil || len(runs) != 3 || runs[0].ID != "run-b" || runs[2].ID != "run-c" {
			t.Fatalf("Runs = %+v, %v", runs, err)
		}
		prior, found, err := s.PriorSession(id, "claude-code", "run-c")
		if err != nil || !found || prior.ID != "s3" {
			t.Fatalf("PriorSession = %+v %v %v, want s3", prior, found, err)
		}
		prior, found, _ = s.PriorSession(id, "claude-code", "run-a")
		if !found || prior.ID != "s1" {
			t.Fatalf("PriorSession excluding run-a = %+v %v, want s1", prior, found)
		}
		if _, found, _ := s.PriorSession(id, "gemini", ""); found {
			t.Fatalf("PriorSession for gemini found one")
		}
		if other, _ := s.OtherAdapterSession(id, "claude-code"); !other {
			t.Fatalf("OtherAdapterSession(claude-code) = false, want true (codex)")
		}
		if other, _ := s.OtherAdapterSession(id, "codex"); !other {
			t.Fatalf("OtherAdapterSession(codex) = false, want true")
		}
		run, sess, err := s.RunWithSessions("run-a")
		if err != nil || run.ID != "run-a" || len(sess) != 2 || sess[0].ID != "s2" || sess[1].ID != "s3" {
			t.Fatalf("RunWithSessions = %+v %+v %v", run, sess, err)
		}
		inst, err := s.Installations()
		if err != nil || len(inst) != 1 || !inst[0].ResumableSessions {
			t.Fatalf("Installations = %+v, %v", inst, err)
		}
		set, err := s.Settings(ScopeProject, "forgejo", "acme", "widget")
		if err != nil || len(set) != 1 || string(set[0].Value) != `"bot/"` {
			t.Fatalf("Settings = %+v, %v", set, err)
		}
		if raw, err := s.Get("events/2026/11/30/d1.json"); err != nil || !bytes.Contains(raw, []byte(`"d1"`)) {
			t.Fatalf("Get event = %s, %v", raw, err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dir)
	s = openStore(t, dir)
	check(s)

	// Null session fields stay null in JSON.
	raw, err := s.Get(strings.TrimSuffix(mustDir(t, id), "") + "/llm_sessions/s4.json")
	if err != nil || !bytes.Contains(raw, []byte(`"session_name": null`)) || !bytes.Contains(raw, []byte(`"native_session_id": null`)) {
		t.Fatalf("session JSON = %s, %v", raw, err)
	}

	// Cleanup removes the mailbox and everything under it; empty trees go.
	if err := s.Update(ctx, func(tx *Tx) error { return tx.DeleteMailbox(mb.Key()) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mailbox(mb.Key()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Mailbox after delete: %v", err)
	}
	if _, _, err := s.RunWithSessions("run-a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RunWithSessions after delete: %v", err)
	}
	if got := s.List("mailboxes"); len(got) != 0 {
		t.Fatalf("List(mailboxes) after delete = %v", got)
	}
	var log bytes.Buffer
	if err := s.Log(ctx, &log, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " delete 8 records") || !strings.HasSuffix(lines[1], " put 11 records") {
		t.Fatalf("Log = %q", log.String())
	}
	s.Close()
	fsck(t, dir)
	if ls := gitCLI(t, dir, "ls-tree", "-r", "--name-only", string(RefName)); strings.Contains(ls, "mailboxes") {
		t.Fatalf("ls-tree after cleanup still lists mailboxes:\n%s", ls)
	}
}

func mustDir(t *testing.T, id string) string {
	t.Helper()
	d, err := mailboxDir(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
