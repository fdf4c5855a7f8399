package bot

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
)

// gated holds every run until the test releases it.
type gated struct {
	agents.Adapter
	started, release chan struct{}
}

func (g gated) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	g.started <- struct{}{}
	<-g.release
	return g.Adapter.Run(ctx, req)
}

func (g gated) step(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(20 * time.Second):
		t.Fatal("no run started")
	}
	g.release <- struct{}{}
}

// say posts a person's comment in the issue thread and sends its webhook.
func (h *harness) say(iid int64, author, body string) forges.Event {
	h.t.Helper()
	h.forge.mu.Lock()
	h.forge.nextID++
	c := forges.Comment{ID: h.forge.nextID, Author: author, Body: body, CreatedAt: time.Now()}
	t := forges.Target{Kind: forges.TargetIssue, Number: iid}
	h.forge.comments[t] = append(h.forge.comments[t], c)
	h.forge.mu.Unlock()
	return h.send(forges.Event{Type: forges.EventCommentCreated, Actor: author, Target: h.issueTarget(iid), Comment: &c})
}

// TestQuestionsThenPlanFeedback: the analysis asks questions (waiting_info),
// the answer starts it again (functional_analysis) with the questions in the
// prompt; a person naming the bot asks for another plan (technical_analysis),
// and ai::validate_plan added while the plan is revised applies to the new
// plan.
func TestQuestionsThenPlanFeedback(t *testing.T) {
	t.Parallel()
	g := gated{started: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, func(s *setup) {
		s.wrap = func(a agents.Adapter) agents.Adapter { g.Adapter = a; return g }
	})
	issue := h.issueTarget(7)
	h.adapter.ReplyNext("## Functional analysis\n\nGreet whom?\n\n## Questions\n\n- Which language?")
	h.assign(7)
	g.step(t)
	mb := h.waitStatus(7, lifecycle.StatusWaitingInfo)
	kinds := h.forge.commentKinds(issue)
	if count(kinds, lifecycle.KindQuestions) != 1 || count(kinds, lifecycle.KindPlan) != 0 {
		t.Fatalf("comments while waiting for information: %q", kinds)
	}
	if got := h.forge.labels(7); !slices.Contains(got, lifecycle.StatusWaitingInfo.Label()) || len(lifecycle.StatusLabels(got)) != 1 {
		t.Errorf("labels %q", got)
	}

	// The answer: the analysis again, with the questions and the answer.
	h.say(7, "alice", "English only.")
	g.step(t)
	mb = h.waitStatus(7, lifecycle.StatusWaitingValidation)
	reqs := h.adapter.Requests()
	if p := reqs[1].Prompt; !strings.Contains(p, "You asked these questions") || !strings.Contains(p, "Which language?") || !strings.Contains(p, "English only.") {
		t.Errorf("second analysis prompt: %q", p)
	}
	if count(h.forge.calls, "add status::functional_analysis") != 2 {
		t.Errorf("forge calls: %q", h.forge.calls)
	}

	// People talk among themselves: nothing runs.
	// (alice has write access: her comment is handled, not refused.)
	chat := h.say(7, "alice", "Looks fine to me, Bob?")
	if rec := h.handled(chat.DeliveryID); rec.Outcome != string(lifecycle.IntentQuestion) {
		t.Errorf("a comment among people was handled as %q", rec.Outcome)
	}
	if m := h.mailbox(7); m.ActiveRunID != "" || m.Status != string(lifecycle.StatusWaitingValidation) {
		t.Fatalf("a comment not for the bot started something: %+v", m)
	}

	// Naming the bot asks for another plan; validation arrives meanwhile.
	h.say(7, "alice", "@alfred please reuse the existing logger")
	select {
	case <-g.started:
	case <-time.After(20 * time.Second):
		t.Fatal("no plan revision started")
	}
	if m := h.mailbox(7); m.Status != string(lifecycle.StatusTechnicalAnalysis) {
		t.Errorf("status while revising the plan: %s", m.Status)
	}
	h.command(7, lifecycle.CommandValidatePlan)
	waitUntil(t, func() bool { return slices.Contains(h.mailbox(7).Labels, lifecycle.CommandValidatePlan.Label()) })
	if !slices.Contains(h.forge.labels(7), lifecycle.CommandValidatePlan.Label()) {
		t.Error("the validation label was removed before the revised plan")
	}
	g.release <- struct{}{}
	g.step(t) // development
	mb = h.waitStatus(7, lifecycle.StatusInCI)

	reqs = h.adapter.Requests()
	if p := reqs[2].Prompt; !strings.Contains(p, "Revise the plan") || !strings.Contains(p, "reuse the existing logger") {
		t.Errorf("plan revision prompt: %q", p)
	}
	if reqs[3].Phase != agents.PhaseDevelopment {
		t.Errorf("after the revised plan: %s", reqs[3].Phase)
	}
	if v := mb.Validated; v == nil || v.PlanSHA256 == "" || !strings.Contains(h.forge.commentOf(issue, lifecycle.KindPlan), "Starting the development") {
		t.Errorf("the revised plan is not the validated one: %+v", v)
	}
	if count(h.forge.commentKinds(issue), lifecycle.KindPlan) != 2 {
		t.Errorf("plan comments: %q", h.forge.commentKinds(issue))
	}
	if got := h.forge.labels(7); slices.Contains(got, lifecycle.CommandValidatePlan.Label()) {
		t.Errorf("labels after development started: %q", got)
	}
	if !slices.Contains(h.forge.calls, "add status::technical_analysis") {
		t.Errorf("forge calls: %q", h.forge.calls)
	}
	// Every run resumed the one session.
	for _, s := range h.sessions(t, mb)[1:] {
		if !s.Resumed {
			t.Errorf("run %s did not resume", s.RunID)
		}
	}
}
