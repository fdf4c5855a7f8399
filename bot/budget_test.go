package bot

import (
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
)

func TestBudgetSettingsRefuseNonsense(t *testing.T) {
	for key, bad := range map[string][]string{
		"AGENT_BUDGET_TOKENS": {"0", "-5", "1.5", "lots"},
		"AGENT_BUDGET_USD":    {"0", "-1", "$2", "two"},
	} {
		d, err := LookupSetting(key)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range bad {
			if _, err := d.Parse(v); err == nil {
				t.Errorf("%s=%q accepted", key, v)
			}
		}
		for _, v := range []string{"", "100000", "2"} {
			if _, err := d.Parse(v); err != nil {
				t.Errorf("%s=%q: %v", key, v, err)
			}
		}
	}
}

// TestBudgetPausesThenStepGoesOn: the analysis run ends with the issue's
// spend exactly at its budget, so the development run it would start is held
// back and the issue paused with one comment; while paused nothing runs (a
// question is not answered); ai::budget_step grants one more step and the
// development runs; a run that crosses the budget finishes, and the next one
// (a CI fix) is held back again.
func TestBudgetPausesThenStepGoesOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) {
		s.settings = append(s.settings, projectSetting("REQUIRE_PLAN_VALIDATION", "false"), projectSetting("AGENT_BUDGET_TOKENS", "1000"))
	})
	h.adapter.Spend(1000, 0)
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusPaused)
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 || runs[0].Phase != string(agents.PhaseAnalysis) {
		t.Fatalf("runs before the pause: %d", len(runs))
	}
	if b := mb.Budget; b == nil || b.Tokens != 1000 || b.Paused == nil || b.Paused.Step != string(lifecycle.StepPlanGoesOn) || b.Paused.Phase != string(agents.PhaseDevelopment) {
		t.Fatalf("budget %+v", mb.Budget)
	}
	if labels := lifecycle.StatusLabels(h.forge.labels(7)); len(labels) != 1 || labels[0] != lifecycle.StatusPaused.Label() {
		t.Errorf("status labels %q", labels)
	}
	if n := count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindBudgetPaused); n != 1 {
		t.Errorf("%d budget comments", n)
	}

	// Paused: a question starts nothing, the step kept stays the first.
	h.send(forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: h.issueTarget(7),
		Comment: &forges.Comment{ID: 501, Author: "alice", Body: "@alfred how far are you?"}})
	mb = h.waitStatus(7, lifecycle.StatusPaused)
	if n := len(mustRuns(t, h.store, mb.ID)); n != 1 || mb.Budget.Paused.Step != string(lifecycle.StepPlanGoesOn) {
		t.Fatalf("while paused: %d runs, kept %+v", n, mb.Budget.Paused)
	}

	// One more step: the development runs from in_development, crosses the
	// budget (2000 of 2000 after it), finishes and pushes.
	h.command(7, lifecycle.CommandBudgetStep)
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	if mb.Budget == nil || mb.Budget.Steps != 1 || mb.Budget.Paused != nil || mb.Budget.Tokens != 2000 {
		t.Fatalf("after the step: %+v", mb.Budget)
	}
	if n := count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindBudgetStep); n != 1 {
		t.Errorf("%d budget step comments", n)
	}
	if slices.Contains(h.forge.labels(7), lifecycle.CommandBudgetStep.Label()) {
		t.Error("ai::budget_step left on the issue")
	}

	// Red CI: the ci_fix run is held back, a second pause comment.
	h.forge.setCI(mb.HeadSHA, forges.CIFailure)
	h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	mb = h.waitStatus(7, lifecycle.StatusPaused)
	if mb.Budget.Paused == nil || mb.Budget.Paused.Phase != string(agents.PhaseCIFix) || mb.Budget.Paused.From != string(lifecycle.StatusInCI) {
		t.Fatalf("second pause: %+v", mb.Budget.Paused)
	}
	if n := count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindBudgetPaused); n != 2 {
		t.Errorf("%d budget comments, want 2", n)
	}
	if n := len(mustRuns(t, h.store, mb.ID)); n != 2 {
		t.Errorf("%d runs, want analysis and development", n)
	}
}

// TestBudgetDollars: a dollar budget pauses on the CLIs' reported cost; a
// CLI that reports none (no price known) is never paused by it.
func TestBudgetDollars(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		usd  float64
		want lifecycle.Status
	}{
		{"priced", 0.25, lifecycle.StatusPaused},
		{"no price known", 0, lifecycle.StatusInCI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(s *setup) {
				s.settings = append(s.settings, projectSetting("REQUIRE_PLAN_VALIDATION", "false"), projectSetting("AGENT_BUDGET_USD", "0.25"))
			})
			h.adapter.Spend(500, tc.usd)
			h.assign(7)
			mb := h.waitStatus(7, tc.want)
			if mb.Budget == nil || mb.Budget.USD != 0.25 {
				t.Fatalf("budget %+v", mb.Budget)
			}
		})
	}
}

// TestBudgetStepWhenNotPaused: the label is removed and nothing happens.
func TestBudgetStepWhenNotPaused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	h.command(7, lifecycle.CommandBudgetStep)
	waitUntil(t, func() bool { return !slices.Contains(h.forge.labels(7), lifecycle.CommandBudgetStep.Label()) })
	mb = h.waitStatus(7, lifecycle.StatusWaitingValidation)
	if mb.Budget != nil || len(mustRuns(t, h.store, mb.ID)) != 1 {
		t.Errorf("budget %+v", mb.Budget)
	}
}
