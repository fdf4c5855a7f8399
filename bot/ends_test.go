package bot

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/state"
)

// outcome derives the outcome of mb from what the store holds.
func (h *harness) outcome(mb state.Mailbox) outcomes.Outcome {
	h.t.Helper()
	runs := mustRuns(h.t, h.store, mb.ID)
	var sessions []state.LLMSession
	for _, r := range runs {
		_, ss, err := h.store.RunWithSessions(r.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		sessions = append(sessions, ss...)
	}
	return outcomes.Derive(mb, runs, sessions, time.Now(), 7*24*time.Hour)
}

// setMRState makes the forge's merge request n merged (by by) or closed,
// as a person's click does.
func (f *memForge) setMRState(n int64, s, by string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mrs[n].State, f.mrs[n].MergedBy = s, by
}

// TestMailboxKeepsItsMilestones: the mailbox records when the first plan was
// posted and when its merge request was opened (what outcomes measure from
// the assignment), and neither moves when the loop goes on.
func TestMailboxKeepsItsMilestones(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	if mb.PlannedAt.IsZero() || mb.PlannedAt.Before(mb.CreatedAt) || !mb.MergeRequestAt.IsZero() || mb.End != nil {
		t.Fatalf("after the plan: planned %v, merge request %v, created %v, end %+v", mb.PlannedAt, mb.MergeRequestAt, mb.CreatedAt, mb.End)
	}
	planned := mb.PlannedAt
	h.command(7, lifecycle.CommandValidatePlan)
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	if !mb.PlannedAt.Equal(planned) || mb.MergeRequestAt.Before(planned) || mb.MergeRequestIID == 0 {
		t.Fatalf("after the merge request: planned %v (was %v), merge request %v #%d", mb.PlannedAt, planned, mb.MergeRequestAt, mb.MergeRequestIID)
	}
	opened := mb.MergeRequestAt

	// A red CI: a ci_fix run pushes again; the merge request is the same one.
	h.forge.setCI(mb.HeadSHA, forges.CIFailure)
	head := mb.HeadSHA
	h.poke(mb)
	waitUntil(t, func() bool { m := h.mailbox(7); return m.HeadSHA != head && m.ActiveRunID == "" })
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	if !mb.MergeRequestAt.Equal(opened) || !mb.PlannedAt.Equal(planned) {
		t.Errorf("after a ci_fix: planned %v (was %v), merge request %v (was %v)", mb.PlannedAt, planned, mb.MergeRequestAt, opened)
	}
	o := h.outcome(mb)
	if o.End != outcomes.EndOpen || o.Rounds != (outcomes.Rounds{CIFix: 1}) || o.Runs != 3 || o.Spend.Source() == outcomes.SourceNone ||
		len(o.Phases) != 3 || o.Phases[0].Agents[0].Adapter != "fake" || o.Finished.Reached() || len(o.Problems) != 0 {
		t.Errorf("outcome %+v", o)
	}

	// Green: in_review, since then. Polled again, the mailbox is saved
	// (UpdatedAt moves) but its status has not changed since.
	if mb.StatusSince.Before(opened) {
		t.Errorf("in_ci since %v, before the merge request %v", mb.StatusSince, opened)
	}
	h.forge.setCI(mb.HeadSHA, forges.CISuccess)
	h.poke(mb)
	mb = h.waitStatus(7, lifecycle.StatusInReview)
	since, updated := mb.StatusSince, mb.UpdatedAt
	time.Sleep(20 * time.Millisecond)
	h.poke(mb)
	if m := h.mailbox(7); !m.StatusSince.Equal(since) || !m.UpdatedAt.After(updated) {
		t.Errorf("polled in review: since %v (was %v), updated %v (was %v)", m.StatusSince, since, m.UpdatedAt, updated)
	}
	if o := outcomes.Derive(h.mailbox(7), mustRuns(t, h.store, mb.ID), nil, time.Now().Add(8*24*time.Hour), 7*24*time.Hour); o.End != outcomes.EndAbandoned || o.Status != "in_review" {
		t.Errorf("eight days in review: %s, left %s", o.End, o.Status)
	}
}

// TestMailboxEnds: how a mailbox ends is recorded where it happens: merged
// (by the event's actor), closed without a merge (by who closed), an issue
// closed by its merge request's merge told before the merge (merged, by
// whom the forge says merged), a merge or a close the bot reads on the
// merge request (by whom the forge says merged; a close names nobody).
func TestMailboxEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		act    func(h *harness, mb state.Mailbox)
		how    string
		by     string
		closed bool // the forge's merge request stays open
	}{
		{"merged", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestMerged, "alice")
			h.send(forges.Event{Type: forges.EventMergeRequestMerged, Actor: "alice",
				Target: forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: mb.MergeRequestIID}})
		}, state.EndMerged, "alice", false},
		{"closed unmerged", func(h *harness, mb state.Mailbox) {
			h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "bob", Target: h.issueTarget(7)})
		}, state.EndClosed, "bob", true},
		{"merge request closed", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestClosed, "")
			h.send(forges.Event{Type: forges.EventMergeRequestClosed, Actor: "carol",
				Target: forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: mb.MergeRequestIID}})
		}, state.EndClosed, "carol", false},
		{"issue closed by the merge, told first", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestMerged, "dave")
			h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "erin", Target: h.issueTarget(7)})
		}, state.EndMerged, "dave", false},
		{"merge read on the merge request", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestMerged, "dave")
			h.poke(mb)
		}, state.EndMerged, "dave", false},
		{"merge read, the forge naming nobody", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestMerged, "")
			h.poke(mb)
		}, state.EndMerged, "", false},
		{"close read on the merge request", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestClosed, "")
			h.poke(mb)
		}, state.EndClosed, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			mb := h.toInCI(7)
			before := time.Now()
			tc.act(h, mb)
			mb = h.waitStatus(7, lifecycle.StatusDone)
			if mb.End == nil || mb.End.How != tc.how || mb.End.By != tc.by || mb.End.At.Before(before.Add(-time.Second)) {
				t.Fatalf("end %+v, want %s by %q", mb.End, tc.how, tc.by)
			}
			o := h.outcome(mb)
			want := outcomes.EndMerged
			if tc.how == state.EndClosed {
				want = outcomes.EndClosed
			}
			if o.End != want || o.By != tc.by || o.Plan.After == nil || o.PullRequest.After == nil || o.Finished.After == nil ||
				*o.Plan.After > *o.PullRequest.After || *o.PullRequest.After > *o.Finished.After || o.Runs != 2 || len(o.Problems) != 0 {
				t.Errorf("outcome %+v", o)
			}
			if tc.closed {
				mr, err := h.forge.MergeRequest(t.Context(), h.project, mb.MergeRequestIID)
				if err != nil || mr.State != forges.MergeRequestOpen {
					t.Errorf("the merge request of an issue closed unmerged: %+v %v", mr, err)
				}
			}
		})
	}
}

// TestPlanOnlyEndsWithoutEnd: type::analysis is done at its plan; it was
// neither merged nor closed, and the mailbox says so by keeping no End.
func TestPlanOnlyEndsWithoutEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.openIssue(8, "Study the greeting", "type::analysis")
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(8), Labels: []string{"type::analysis"}})
	mb := h.waitStatus(8, lifecycle.StatusDone)
	if mb.End != nil || mb.PlannedAt.IsZero() {
		t.Fatalf("plan only: end %+v, planned %v", mb.End, mb.PlannedAt)
	}
	if o := h.outcome(mb); o.End != outcomes.EndDelivered || o.Plan.Derived || o.PullRequest.Reached() || !o.Finished.Reached() {
		t.Errorf("outcome %+v", o)
	}
}

// TestOutcomeBlockedAndPaused: the outcome of an issue blocked after its
// retries, and of one paused at its budget with its plan posted and the
// development held back.
func TestOutcomeBlockedAndPaused(t *testing.T) {
	t.Parallel()
	t.Run("blocked", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(s *setup) { s.settings = append(s.settings, projectSetting("LLM_MAX_RETRIES", "1")) })
		h.adapter.FailNext("API Error: Unable to connect to API")
		h.adapter.FailNext("API Error: Unable to connect to API")
		h.assign(7)
		mb := h.waitStatus(7, lifecycle.StatusBlocked)
		o := h.outcome(mb)
		if o.End != outcomes.EndBlocked || o.Runs != 2 || o.Retries != 1 || o.FailedRuns != 2 || o.Plan.Reached() || o.Idle == nil {
			t.Errorf("outcome %+v", o)
		}
		if o = outcomes.Derive(mb, nil, nil, time.Now().Add(8*24*time.Hour), 7*24*time.Hour); o.End != outcomes.EndAbandoned || o.Status != "blocked" {
			t.Errorf("eight days later: %s, left %s", o.End, o.Status)
		}
	})
	t.Run("paused", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(s *setup) {
			s.settings = append(s.settings, projectSetting("REQUIRE_PLAN_VALIDATION", "false"), projectSetting("AGENT_BUDGET_TOKENS", "1000"))
		})
		h.adapter.Spend(1000, 0)
		h.assign(7)
		mb := h.waitStatus(7, lifecycle.StatusPaused)
		o := h.outcome(mb)
		if o.End != outcomes.EndPaused || o.Runs != 1 || !o.Plan.Reached() || o.Plan.Derived || o.PullRequest.Reached() || o.Spend.Tokens() < 1000 {
			t.Errorf("outcome %+v", o)
		}
	})
}
