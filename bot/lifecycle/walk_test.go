package lifecycle

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// TestEveryRowWalked walks the table through the package's own functions,
// the way the engine does: the dispatch table for each intent, the
// decisions for a command label, a run's end and a merge request, and the
// budget before a run. Every row of the table must be taken by some walk,
// from a status it is declared from, so a row nothing reaches fails every
// go test of the package. (bot's suite walks them all on the engine too.)
func TestEveryRowWalked(t *testing.T) {
	r := Rules{LLMRetries: 1, CIFix: 3, CIHardCap: 10, ConflictFix: 3, NeedValidation: true}
	at := func(s Status, f func(*state.Mailbox)) state.Mailbox {
		mb := state.Mailbox{ID: "m", Kind: state.KindIssue, Status: string(s), Flow: string(FlowTask), MergeRequestIID: 4}
		if f != nil {
			f(&mb)
		}
		return mb
	}
	walked := map[Step]int{}
	took := func(name string, mb state.Mailbox, s Step) {
		t.Helper()
		if s == "" {
			t.Errorf("%s: took no step", name)
			return
		}
		if tr, ok := TransitionOf(s); !ok || !tr.Allows(Status(mb.Status)) {
			t.Errorf("%s: step %s is not declared from %q", name, s, mb.Status)
		}
		walked[s]++
	}
	walkDispatch(t, at, took)
	walkCommands(r, at, took)
	walkRunEnds(r, at, took)
	walkMergeRequest(r, at, took)
	paused := at(StatusInDevelopment, nil)
	took("budget reached", paused, Limits{Tokens: 10}.PauseStep(state.Spend{Tokens: 10}))

	var missing []string
	for _, tr := range transitions {
		if walked[tr.Step] == 0 {
			missing = append(missing, string(tr.Step))
		}
	}
	if len(missing) > 0 {
		t.Errorf("no walk took these rows of the lifecycle table: %s", strings.Join(missing, ", "))
	}
}

type walkAt func(Status, func(*state.Mailbox)) state.Mailbox

type walkTook func(string, state.Mailbox, Step)

// walkDispatch takes the rows that an intent takes directly.
func walkDispatch(t *testing.T, at walkAt, took walkTook) {
	t.Helper()
	question := &forges.Event{Comment: &forges.Comment{Body: "@alfred why?"}}
	for _, w := range []struct {
		name string
		in   Intent
		ev   *forges.Event
		mb   *state.Mailbox
	}{
		{"assigned", Intent{Kind: IntentStart}, &forges.Event{}, nil},
		{"assigned a question", Intent{Kind: IntentStart, Labels: []string{"type::question"}}, &forges.Event{}, nil},
		{"answers given", Intent{Kind: IntentInfo}, nil, new(at(StatusWaitingInfo, nil))},
		{"plan feedback", Intent{Kind: IntentPlanFeedback}, nil, new(at(StatusWaitingValidation, nil))},
		{"a question", Intent{Kind: IntentQuestion}, question, new(at(StatusInCI, nil))},
		{"review feedback", Intent{Kind: IntentReview}, nil, new(at(StatusInReview, nil))},
		{"merged", Intent{Kind: IntentMerged}, nil, new(at(StatusInReview, nil))},
	} {
		row, why, ok := Dispatch(Facts{Intent: w.in, Event: w.ev, Mailbox: w.mb, Me: "alfred"})
		if !ok {
			t.Errorf("%s: no row: %s", w.name, why)
			continue
		}
		var mb state.Mailbox
		if w.mb != nil {
			mb = *w.mb
		}
		took(w.name, mb, row.Step)
	}
}

// walkCommands takes the rows of the command labels.
func walkCommands(r Rules, at walkAt, took walkTook) {
	paused := at(StatusPaused, func(m *state.Mailbox) {
		m.Budget = &state.Budget{Paused: &state.PausedStep{Step: string(StepCIRed), From: string(StatusInCI)}}
	})
	for _, w := range []struct {
		name string
		mb   state.Mailbox
		c    Command
	}{
		{"validate", at(StatusWaitingValidation, nil), CommandValidatePlan},
		{"retry an analysis", at(StatusBlocked, func(m *state.Mailbox) { m.Phase = string(agents.PhaseAnalysis) }), CommandRetry},
		{"retry a development", at(StatusBlocked, func(m *state.Mailbox) { m.Phase = string(agents.PhaseDevelopment) }), CommandRetryOnce},
		{"a budget step", paused, CommandBudgetStep},
	} {
		_, a := DecideCommand(w.mb, w.c, "alice", "d1", r)
		s := a.Step
		if a.Resume != nil {
			s = StepBudgetStep // the engine takes it, then the step held back
		}
		took(w.name, w.mb, s)
	}
}

// walkRunEnds takes the rows a run's end takes.
func walkRunEnds(r Rules, at walkAt, took walkTook) {
	plan := "## Implementation plan\nhow"
	run := func(p agents.Phase, st state.RunStatus, f func(*state.Run)) state.Run {
		rn := state.Run{ID: "r1", Phase: string(p), Status: st, Result: plan}
		if f != nil {
			f(&rn)
		}
		return rn
	}
	for _, w := range []struct {
		name string
		mb   state.Mailbox
		run  state.Run
	}{
		{"plan changed", at(StatusInDevelopment, nil), run(agents.PhaseDevelopment, state.RunQueued, func(rn *state.Run) { rn.PlanChanged = "the description was edited" })},
		{"failed, tries left", at(StatusInDevelopment, nil), run(agents.PhaseDevelopment, state.RunFailed, nil)},
		{"failed, no try left", at(StatusInDevelopment, func(m *state.Mailbox) { m.LLMRetries = 1 }), run(agents.PhaseDevelopment, state.RunFailed, nil)},
		{"questions", at(StatusFunctionalAnalysis, nil), run(agents.PhaseAnalysis, state.RunSucceeded, func(rn *state.Run) { rn.Result = "## Questions\nwhy?" })},
		{"plan posted", at(StatusTechnicalAnalysis, nil), run(agents.PhaseAnalysis, state.RunSucceeded, nil)},
		{"plan only", at(StatusFunctionalAnalysis, func(m *state.Mailbox) { m.Flow = string(FlowAnalysis) }), run(agents.PhaseAnalysis, state.RunSucceeded, nil)},
		{"plan goes on", at(StatusFunctionalAnalysis, func(m *state.Mailbox) { m.Labels = []string{CommandValidatePlan.Label()} }), run(agents.PhaseAnalysis, state.RunSucceeded, nil)},
		{"answered", at(StatusFunctionalAnalysis, func(m *state.Mailbox) { m.Flow = string(FlowQuestion) }), run(agents.PhaseAnswer, state.RunSucceeded, nil)},
		{"pushed", at(StatusInDevelopment, nil), run(agents.PhaseDevelopment, state.RunSucceeded, func(rn *state.Run) { rn.Pushed = true })},
	} {
		_, a := DecideRunEnd(w.mb, w.run, r)
		took(w.name, w.mb, a.Step)
	}
}

// walkMergeRequest takes the rows the state of the merge request takes.
func walkMergeRequest(r Rules, at walkAt, took walkTook) {
	for _, w := range []struct {
		name     string
		conflict bool
		ci       forges.CIState
	}{
		{"red CI", false, forges.CIFailure},
		{"green CI", false, forges.CISuccess},
		{"a conflict", true, ""},
	} {
		mb := at(StatusInCI, nil)
		_, a := DecideMergeRequest(mb, forges.MergeRequest{HeadSHA: "abc", TargetBranch: "main"}, w.conflict, w.ci, r, "d1")
		took(w.name, mb, a.Step)
	}
}
