package bot

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
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

// TestDeadSessionStartsFresh: two resumes of the same native id that fail in
// a way the adapter does not recognise, and the next run starts fresh
// (resume_failed) instead of looping on a dead session.
func TestDeadSessionStartsFresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) { s.settings = append(s.settings, projectSetting("LLM_MAX_RETRIES", "3")) })
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	h.adapter.FailNext("the CLI crashed: SIGSEGV")
	h.adapter.FailNext("the CLI crashed: SIGSEGV")
	h.command(7, lifecycle.CommandValidatePlan)
	mb := h.waitStatus(7, lifecycle.StatusInCI)
	ls := h.sessions(t, mb)
	if len(ls) != 4 {
		t.Fatalf("%d sessions, want 4 (analysis, two failed resumes, a fresh development): %+v", len(ls), ls)
	}
	native := *ls[0].NativeSessionID
	for i, s := range ls[1:3] {
		if s.ResumeOf == nil || *s.ResumeOf != native || s.Outcome != "failed" {
			t.Errorf("session %d: resume of %v, outcome %s; want a failed resume of %s", i+1, s.ResumeOf, s.Outcome, native)
		}
	}
	last := ls[3]
	if last.Resumed || last.ResumeOf != nil || last.ResumeFallback == nil || *last.ResumeFallback != string(agents.FallbackResumeFailed) || last.Outcome != "succeeded" {
		t.Errorf("the run after two failed resumes: %+v; want fresh with resume_failed", last)
	}
}
