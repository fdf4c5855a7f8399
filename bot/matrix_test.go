package bot

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// renamed gives an adapter another id, as a second CLI would have.
type renamed struct {
	agents.Adapter
	id string
}

func (r renamed) ID() string { return r.id }

// apiMode declares the API kind: never resumable.
type apiMode struct{ agents.Adapter }

func (apiMode) Capabilities() agents.Capabilities { return agents.Capabilities{Kind: agents.KindAPI} }

// twoRuns runs analysis then development for issue 7 and returns both llm
// sessions and the two adapter requests.
func (h *harness) twoRuns(between func()) (state.Mailbox, []state.LLMSession) {
	h.t.Helper()
	h.openIssue(7, "Add a greeting", "type::task")
	issue := h.issueTarget(7)
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: issue, Labels: []string{"type::task"}})
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	if between != nil {
		between()
	}
	h.forge.AddLabels(context.Background(), issue, "ai::validate_plan")
	h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue, Labels: h.forge.labels(7)})
	mb := h.waitStatus(7, lifecycle.StatusInCI)
	return mb, h.sessions(h.t, mb)
}

// TestSessionMatrix is the seed's test list at the engine level: what the
// adapter is asked, what is mounted and what is recorded, run by run.
func TestSessionMatrix(t *testing.T) {
	t.Run("second run resumes the first's id", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		_, ls := h.twoRuns(nil)
		if *ls[0].ResumeFallback != "no_prior_session" || ls[0].Resumed {
			t.Errorf("first: %+v", ls[0])
		}
		reqs := h.adapter.Requests()
		if reqs[1].Session == nil || reqs[1].Session.ResumeID != *ls[0].NativeSessionID || !ls[1].Resumed {
			t.Errorf("second request %+v, record %+v", reqs[1].Session, ls[1])
		}
		if reqs[0].Prompt == reqs[1].Prompt {
			t.Error("analysis and development prompts are the same")
		}
	})

	t.Run("adapter changed between analysis and development", func(t *testing.T) {
		t.Parallel()
		var h *harness
		h = newHarness(t, func(s *setup) {
			fa, _ := fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply})
			s.adapters["fake-b"] = renamed{&scripted{Adapter: fa}, "fake-b"}
		})
		_, ls := h.twoRuns(func() { h.setSetting(projectSetting("AGENT_ADAPTER", "fake-b")) })
		if ls[1].AdapterID != "fake-b" || ls[1].ResumeFallback == nil || *ls[1].ResumeFallback != "adapter_changed" || ls[1].Resumed {
			t.Errorf("second: %+v", ls[1])
		}
	})

	t.Run("a model or provider change still resumes", func(t *testing.T) {
		t.Parallel()
		var h *harness
		h = newHarness(t)
		_, ls := h.twoRuns(func() {
			h.setSetting(projectSetting("AGENT_MODEL", "bigger-model"))
			h.setSetting(projectSetting("AGENT_PROVIDER", "other-provider"))
		})
		if ls[1].Model != "bigger-model" || ls[1].Provider != "other-provider" || !ls[1].Resumed {
			t.Errorf("second: %+v", ls[1])
		}
	})

	t.Run("a refused resume falls back silently", func(t *testing.T) {
		t.Parallel()
		var h *harness
		h = newHarness(t)
		var commentsBefore, labelsBefore int
		mb, ls := h.twoRuns(func() {
			h.adapter.RefuseNextResume()
			commentsBefore = len(h.forge.commentKinds(h.issueTarget(7)))
			labelsBefore = len(h.forge.labels(7))
		})
		if ls[1].Resumed || ls[1].ResumeFallback == nil || *ls[1].ResumeFallback != "refused" || ls[1].Outcome != "succeeded" {
			t.Errorf("second: %+v", ls[1])
		}
		if mb.LLMRetries != 0 {
			t.Errorf("llm_retries %d", mb.LLMRetries)
		}
		// Development's own effects only: plan_validated and the status comment edit; no blocked or retry comment.
		kinds := h.forge.commentKinds(h.issueTarget(7))
		if len(kinds) != commentsBefore+1 || kinds[len(kinds)-1] != lifecycle.KindPlanValidated {
			t.Errorf("comments: %q (had %d)", kinds, commentsBefore)
		}
		if n := len(h.forge.labels(7)); n != labelsBefore {
			t.Errorf("labels: %q", h.forge.labels(7))
		}
	})

	noSession := []struct {
		name string
		opt  func(*setup)
	}{
		{"API mode", func(s *setup) { s.wrap = func(a agents.Adapter) agents.Adapter { return apiMode{a} } }},
		{"host runner", func(s *setup) { s.runner = "host" }},
		{"setting off at organization scope", func(s *setup) { s.settings = append(s.settings, orgSetting("AGENT_SESSION_RESUME", "false")) }},
		{"setting off at project scope", func(s *setup) {
			s.settings = append(s.settings, orgSetting("AGENT_SESSION_RESUME", "true"), projectSetting("AGENT_SESSION_RESUME", "false"))
		}},
		{"adapter without the capability", func(s *setup) {
			fa, _ := fake.New(fake.Options{Reply: analysisReply})
			s.adapter = &scripted{Adapter: fa}
		}},
		{"installation outside the verified range", func(s *setup) {
			s.installation = &state.AgentInstallation{Runner: "image", Image: "alfred-test", Version: "0.9.0", Reason: "version 0.9.0 is outside the verified range"}
		}},
		{"credential mount overlaps the session path", func(s *setup) {
			// Any existing host folder will do: nothing is mounted.
			s.settings = append(s.settings, projectSetting("AGENT_CREDENTIAL_MOUNTS", fake.ID+"="+os.TempDir()+":/home/agent/.fake"))
		}},
	}
	for _, tt := range noSession {
		t.Run("no session: "+tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.opt)
			_, ls := h.twoRuns(nil)
			if len(ls) != 2 {
				t.Fatalf("%d llm sessions", len(ls))
			}
			for _, s := range ls {
				if s.SessionName != nil || s.NativeSessionID != nil || s.Resumed || s.ResumeFallback != nil {
					t.Errorf("session fields set: %+v", s)
				}
			}
			reqs := h.adapter.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d adapter requests", len(reqs))
			}
			for i, r := range reqs {
				if r.Session != nil {
					t.Errorf("request %d has a session: %+v", i, r.Session)
				}
			}
			if _, err := os.Stat(filepath.Join(h.base, ".agent-sessions")); !os.IsNotExist(err) {
				t.Errorf("a session folder was made: %v", err)
			}
		})
	}

	t.Run("merge request mailbox: no session", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.forge.mu.Lock()
		h.forge.mrs[40] = &forges.MergeRequest{Number: 40, Title: "Someone's change", Body: "Does this work?", State: forges.MergeRequestOpen,
			Author: "alice", SourceBranch: "main", TargetBranch: "main"}
		h.forge.mu.Unlock()
		h.send(forges.Event{Type: forges.EventCommentCreated, Actor: "alice",
			Target:  forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: 40},
			Comment: &forges.Comment{ID: 5, Author: "alice", Body: "@alfred what does this change do?"}})
		key := state.MailboxKey{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindMR, IID: 40}
		waitUntil(t, func() bool {
			mb, err := h.store.Mailbox(key)
			return err == nil && mb.ActiveRunID == "" && count(h.forge.commentKinds(forges.Target{Kind: forges.TargetMergeRequest, Number: 40}), lifecycle.KindAnswer) == 1
		})
		mb, _ := h.store.Mailbox(key)
		ls := h.sessions(t, mb)
		if len(ls) != 1 || ls[0].SessionName != nil || mb.BranchName != "" {
			t.Errorf("merge request mailbox: %+v %+v", mb, ls)
		}
		if reqs := h.adapter.Requests(); len(reqs) != 1 || reqs[0].Session != nil || reqs[0].Phase != agents.PhaseAnswer {
			t.Errorf("requests: %+v", reqs)
		}
	})

	t.Run("cleanup keeps the state when the setting is off", func(t *testing.T) {
		t.Parallel()
		var h *harness
		h = newHarness(t)
		mb, _ := h.twoRuns(nil)
		dir := h.engine.cfg.Sessions.Dir(mb, fake.ID)
		h.setSetting(projectSetting("AGENT_SESSION_RESUME", "false"))
		h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "alice", Target: h.issueTarget(7)})
		h.waitStatus(7, lifecycle.StatusDone)
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("state removed with the setting off: %v", err)
		}
	})
}
