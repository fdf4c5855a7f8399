package bot

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// setMRState makes the forge's merge request n merged or closed, as a
// person's click does.
func (f *memForge) setMRState(n int64, s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mrs[n].State = s
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
}

// TestMailboxEnds: how a mailbox ends is recorded where it happens: merged
// (by the event's actor), closed without a merge (by who closed), an issue
// closed by its merge request's merge told before the merge (merged, by
// nobody named), and a merge the bot reads on the merge request (merged, by
// nobody named).
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
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestMerged)
			h.send(forges.Event{Type: forges.EventMergeRequestMerged, Actor: "alice",
				Target: forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: mb.MergeRequestIID}})
		}, state.EndMerged, "alice", false},
		{"closed unmerged", func(h *harness, mb state.Mailbox) {
			h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "bob", Target: h.issueTarget(7)})
		}, state.EndClosed, "bob", true},
		{"merge request closed", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestClosed)
			h.send(forges.Event{Type: forges.EventMergeRequestClosed, Actor: "carol",
				Target: forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: mb.MergeRequestIID}})
		}, state.EndClosed, "carol", false},
		{"issue closed by the merge, told first", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestMerged)
			h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "alice", Target: h.issueTarget(7)})
		}, state.EndMerged, "", false},
		{"merge read on the merge request", func(h *harness, mb state.Mailbox) {
			h.forge.setMRState(mb.MergeRequestIID, forges.MergeRequestMerged)
			h.poke(mb)
		}, state.EndMerged, "", false},
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
}
