package bot

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
)

// changesOf is the "Changes since your last run" section of prompt, ""
// without one.
func changesOf(prompt string) string {
	_, section, ok := strings.Cut(prompt, "# Changes since your last run\n")
	if !ok {
		return ""
	}
	section, _, _ = strings.Cut(section, "# Your task")
	return section
}

// TestTakeoverChangesInPrompt: a person takes the session over, pushes a
// commit to the issue branch and asks in the thread; the answer run
// resumes the session and its prompt lists that commit, its subject quoted
// as data. That run pushed nothing, yet the next (a review_fix) lists
// nothing: every run records the head it ended at. A second push shows in
// the run after it alone, without the first.
func TestTakeoverChangesInPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const iid = 33
	h.planned(iid)
	h.validate(iid)
	mb := h.waitStatus(iid, lifecycle.StatusInCI)
	if ch := changesOf(h.lastPrompt(agents.PhaseDevelopment)); ch != "" {
		t.Errorf("the development run lists changes, with nobody else on the branch:\n%s", ch)
	}

	first := h.git.commit(t, "alice", "demo", mb.BranchName, "greet_fr.go", "package demo // bonjour\n")
	h.say(iid, "alice", "@alfred I added the French greeting on the branch: does it fit the plan?")
	waitUntil(t, func() bool {
		return len(h.forge.commentKinds(h.issueTarget(iid))) > 0 && h.mailbox(iid).Phase == string(agents.PhaseAnswer)
	})
	mb = h.waitStatus(iid, lifecycle.StatusInCI)
	ch := changesOf(h.lastPrompt(agents.PhaseAnswer))
	if !strings.Contains(ch, "> "+first[:12]+" · alice · change greet_fr.go") || !strings.Contains(ch, mb.BranchName) {
		t.Fatalf("the answer's prompt lacks the pushed commit %s:\n%s", first[:12], h.lastPrompt(agents.PhaseAnswer))
	}
	ls := h.sessions(t, mb)
	if last := ls[len(ls)-1]; !last.Resumed {
		t.Errorf("the run after the takeover did not resume the session: %+v", last)
	}

	h.forge.setCI(first, forges.CISuccess) // the branch's head, the person's commit; the event names the head the bot knows
	h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	mb = h.waitStatus(iid, lifecycle.StatusInReview)
	h.send(forges.Event{Type: forges.EventCommentCreated, Actor: "alice",
		Target:  forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: mb.MergeRequestIID},
		Comment: &forges.Comment{ID: 991, Author: "alice", Body: "Please test the French greeting"}})
	waitUntil(t, func() bool {
		m := h.mailbox(iid)
		return m.Phase == string(agents.PhaseReviewFix) && m.ActiveRunID == ""
	})
	mb = h.waitStatus(iid, lifecycle.StatusInCI)
	if ch := changesOf(h.lastPrompt(agents.PhaseReviewFix)); ch != "" {
		t.Errorf("the review_fix lists changes the answer already saw:\n%s", ch)
	}

	second := h.git.commit(t, "alice", "demo", mb.BranchName, "greet_de.go", "package demo // hallo\n")
	h.forge.setCI(second, forges.CIFailure)
	h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	waitUntil(t, func() bool { m := h.mailbox(iid); return m.CIFixAttempts == 1 && m.ActiveRunID == "" })
	ch = changesOf(h.lastPrompt(agents.PhaseCIFix))
	if !strings.Contains(ch, second[:12]) || strings.Contains(ch, first[:12]) {
		t.Errorf("the ci_fix lists %q; want %s alone", ch, second[:12])
	}
}
