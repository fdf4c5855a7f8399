package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

func openStore(t testing.TB) *state.Store {
	t.Helper()
	st, err := state.Open(context.Background(), filepath.Join(t.TempDir(), "state.git"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func ptr(s string) *string { return &s }

// record stores a finished run of mb with one llm session.
func record(t *testing.T, st *state.Store, mb state.Mailbox, runID, adapterID, nativeID string) {
	t.Helper()
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		if err := tx.PutRun(state.Run{ID: runID, MailboxID: mb.ID, Phase: "analysis", Status: state.RunSucceeded, AdapterID: adapterID}); err != nil {
			return err
		}
		ls := state.LLMSession{ID: runID + "-1", RunID: runID, MailboxID: mb.ID, AdapterID: adapterID, SessionName: ptr(mb.BranchName)}
		if nativeID != "" {
			ls.NativeSessionID = ptr(nativeID)
		}
		return tx.PutLLMSession(ls)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSessionResolver(t *testing.T) {
	st := openStore(t)
	mb := state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 7,
		BranchName: "agent/issue-7-add-a-name"}
	mb.ID = mb.Key().ID()
	if err := st.Update(context.Background(), func(tx *state.Tx) error { return tx.PutMailbox(mb) }); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	r := SessionResolver{History: st, Store: SessionStore{Base: base}}
	claude := agents.Capabilities{Kind: agents.KindLocal, ResumableSessions: true, SessionStatePath: "/home/agent/.claude/projects"}
	installed := &state.AgentInstallation{AdapterID: "claude-code", Runner: "image", Version: "2.1.197", ResumableSessions: true}
	in := func(mut func(*SessionInput)) SessionInput {
		x := SessionInput{Mailbox: mb, RunID: "run-new", Enabled: true, Adapter: claude, AdapterID: "claude-code",
			Installation: installed, Runner: "image"}
		if mut != nil {
			mut(&x)
		}
		return x
	}

	// First run: fresh, no prior session, named after the branch.
	d, err := r.Resolve(in(nil))
	if err != nil || d.Ref == nil {
		t.Fatalf("first run: %+v %v", d, err)
	}
	if d.Ref.Name != mb.BranchName || d.Ref.ResumeID != "" || d.Ref.FreshReason != agents.FallbackNoPriorSession {
		t.Fatalf("first run ref: %+v", d.Ref)
	}
	if want := filepath.Join(base, ".agent-sessions", "forgejo", "alice-demo-issue-7", "claude-code"); d.Ref.HostStateDir != want {
		t.Fatalf("state dir %s, want %s", d.Ref.HostStateDir, want)
	}

	// Another adapter ran before: fresh, adapter_changed.
	record(t, st, mb, "run-1", "codex", "thread-1")
	if d, _ := r.Resolve(in(nil)); d.Ref == nil || d.Ref.FreshReason != agents.FallbackAdapterChanged || d.Ref.ResumeID != "" {
		t.Fatalf("after a codex run: %+v", d.Ref)
	}

	// The same adapter ran: resume its latest id, whatever provider or model.
	record(t, st, mb, "run-2", "claude-code", "uuid-a")
	record(t, st, mb, "run-3", "claude-code", "") // a run whose CLI reported no id does not hide the prior one
	record(t, st, mb, "run-4", "claude-code", "uuid-b")
	if d, _ := r.Resolve(in(nil)); d.Ref == nil || d.Ref.ResumeID != "uuid-b" || d.Ref.FreshReason != "" {
		t.Fatalf("resume: %+v", d.Ref)
	}
	// The asking run's own session is never its prior.
	if d, _ := r.Resolve(in(func(x *SessionInput) { x.RunID = "run-4" })); d.Ref.ResumeID != "uuid-a" {
		t.Fatalf("excluding the asking run: %+v", d.Ref)
	}

	// Every condition of rule 1, off one at a time: no session at all.
	off := []struct {
		why string
		mut func(*SessionInput)
	}{
		{"AGENT_SESSION_RESUME is off", func(x *SessionInput) { x.Enabled = false }},
		{"does not declare", func(x *SessionInput) { x.Adapter = agents.Capabilities{Kind: agents.KindLocal} }},
		{"does not declare", func(x *SessionInput) { x.Adapter = agents.Capabilities{Kind: agents.KindAPI} }},
		{"not detected", func(x *SessionInput) { x.Installation = nil }},
		{"outside the verified range", func(x *SessionInput) { x.Installation = &state.AgentInstallation{Version: "1.0.0"} }},
		{"host runner", func(x *SessionInput) { x.Runner = "host" }},
		{"only issue mailboxes", func(x *SessionInput) { x.Mailbox.Kind = state.KindMR }},
		{"overlaps the session path", func(x *SessionInput) {
			x.Credentials = sandbox.CredentialMounts{"claude-code": {{Host: "/srv/claude", Container: "/home/agent/.claude", ReadOnly: true}}}
		}},
		{"no branch name", func(x *SessionInput) { x.Mailbox.BranchName = "" }},
	}
	for _, tt := range off {
		d, err := r.Resolve(in(tt.mut))
		if err != nil || d.Ref != nil || !strings.Contains(d.Why, tt.why) {
			t.Errorf("%s: got %+v, %v", tt.why, d, err)
		}
	}
	// A credential mount of another adapter, or beside the path, is no overlap.
	d, _ = r.Resolve(in(func(x *SessionInput) {
		x.Credentials = sandbox.CredentialMounts{
			"codex":       {{Container: "/home/agent/.claude"}},
			"claude-code": {{Container: "/home/agent/.claude-credentials"}},
		}
	}))
	if d.Ref == nil {
		t.Errorf("non-overlapping credentials must not turn sessions off: %s", d.Why)
	}
}

func TestSessionStoreEnsureAndRemove(t *testing.T) {
	s := SessionStore{Base: t.TempDir()}
	mb := state.Mailbox{ID: "x", Forge: "gitlab", Owner: "grp/sub", Project: "demo", IID: 3, Kind: state.KindIssue}
	dir, err := s.Ensure(mb, "codex", os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Base, ".agent-sessions", "gitlab", "grp%2Fsub-demo-issue-3", "codex"); dir != want {
		t.Errorf("session folder %s, want %s (a group path must not add folders)", dir, want)
	}
	for _, d := range []string{filepath.Join(s.Base, ".agent-sessions"), filepath.Join(s.Base, ".agent-sessions", "gitlab"), filepath.Dir(dir), dir} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %o, want 0700", d, fi.Mode().Perm())
		}
	}
	os.WriteFile(filepath.Join(dir, "rollout.jsonl"), []byte("{}"), 0o600)
	var others []string // the same numbers elsewhere are other mailboxes
	for _, o := range []state.Mailbox{
		{Forge: "gitlab", Owner: "grp/sub", Project: "demo", IID: 4, Kind: state.KindIssue},
		{Forge: "forgejo", Owner: "grp/sub", Project: "demo", IID: 3, Kind: state.KindIssue},
		{Forge: "gitlab", Owner: "grp/sub", Project: "demo", IID: 3, Kind: state.KindMR},
	} {
		d, err := s.Ensure(o, "codex", os.Getuid(), os.Getgid())
		if err != nil || d == dir {
			t.Fatalf("%+v: folder %s (%v), the same as %s", o, d, err, dir)
		}
		others = append(others, d)
	}
	if err := s.RemoveMailbox(mb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("mailbox state still there: %v", err)
	}
	for _, o := range others {
		if _, err := os.Stat(o); err != nil {
			t.Errorf("another mailbox's state was removed: %v", err)
		}
	}
}

// TestSessionAdopt: the folders of a bot that knew one forge, which had no
// forge level, move under that forge, so an upgrade resumes every session.
func TestSessionAdopt(t *testing.T) {
	s := SessionStore{Base: t.TempDir()}
	old := filepath.Join(s.Base, ".agent-sessions", "alice-demo-issue-7", "claude-code")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(old, "session.jsonl"), []byte("{}"), 0o600)
	mb := state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", IID: 7, Kind: state.KindIssue}
	for i, want := range []int{1, 0} { // and again: nothing left to move
		if n, err := s.Adopt("forgejo"); err != nil || n != want {
			t.Fatalf("adopt #%d: %d moved (%v), want %d", i+1, n, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(mb, "claude-code"), "session.jsonl")); err != nil {
		t.Fatalf("the session is not where the mailbox looks: %v", err)
	}
	if n, err := (SessionStore{Base: t.TempDir()}).Adopt("forgejo"); err != nil || n != 0 {
		t.Fatalf("no sessions yet: %d %v", n, err)
	}
}
