package lifecycle

import (
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// TestJudgeMergeRequest: the verdict's decision on the bot's merge
// request, pure: no forge, no git, no goroutine.
func TestJudgeMergeRequest(t *testing.T) {
	lim := Rules{ConflictFix: 3, CIFix: 3, CIHardCap: 10}
	inCI := state.Mailbox{Status: string(StatusInCI)}
	with := func(f func(*state.Mailbox)) state.Mailbox { mb := inCI; f(&mb); return mb }
	tests := []struct {
		name     string
		mb       state.Mailbox
		conflict bool
		ci       forges.CIState
		want     mrVerdict
	}{
		{"a conflict git confirms", inCI, true, "", mrVerdict{step: StepConflict}},
		{"a conflict wins over red CI", inCI, true, forges.CIFailure, mrVerdict{step: StepConflict}},
		{"conflicts past the limit block", with(func(m *state.Mailbox) { m.ConflictFixAttempts = 3 }), true, "", mrVerdict{block: agents.PhaseConflictResolution}},
		{"red CI", inCI, false, forges.CIFailure, mrVerdict{step: StepCIRed}},
		{"red CI past the limit blocks", with(func(m *state.Mailbox) { m.CIFixAttempts = 3 }), false, forges.CIFailure, mrVerdict{block: agents.PhaseCIFix}},
		{"until green goes on past the limit", with(func(m *state.Mailbox) { m.CIFixAttempts, m.UntilGreen = 3, true }), false, forges.CIFailure, mrVerdict{step: StepCIRed}},
		{"until green stops at the hard cap", with(func(m *state.Mailbox) { m.CIFixAttempts, m.UntilGreen = 10, true }), false, forges.CIFailure, mrVerdict{block: agents.PhaseCIFix}},
		{"green CI: in review", inCI, false, forges.CISuccess, mrVerdict{step: StepCIGreen}},
		{"green CI in review: nothing", with(func(m *state.Mailbox) { m.Status = string(StatusInReview) }), false, forges.CISuccess, mrVerdict{}},
		{"CI still running: nothing", inCI, false, forges.CIPending, mrVerdict{}},
		{"no CI at all: nothing", inCI, false, "", mrVerdict{}},
	}
	for _, tc := range tests {
		if got := judgeMergeRequest(tc.mb, tc.conflict, tc.ci, lim); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, tc := range tests { // every step it names is a row of the table, from in_ci
		if tc.want.step != "" {
			if tr, ok := TransitionOf(tc.want.step); !ok || !tr.Allows(StatusInCI) {
				t.Errorf("%s: step %s is not declared from in_ci", tc.name, tc.want.step)
			}
		}
	}
}

// TestDecideCommand: what a command label does, pure: the mailbox after it,
// the Actions, and that every step is a row of the table from the status.
func TestDecideCommand(t *testing.T) {
	r := Rules{LLMRetries: 2, CIFix: 3, CIHardCap: 10, ConflictFix: 3}
	at := func(s Status, f func(*state.Mailbox)) state.Mailbox {
		mb := state.Mailbox{ID: "m", Status: string(s), Labels: []string{s.Label(), CommandRetry.Label(), CommandValidatePlan.Label()}}
		if f != nil {
			f(&mb)
		}
		return mb
	}
	quarantined := func(m *state.Mailbox) { m.Quarantined = []state.QuarantinedEvent{{Delivery: "d1"}} }
	tests := []struct {
		name    string
		mb      state.Mailbox
		c       Command
		step    Step
		unlabel bool
		say     string // kind of the comment, "" none
		release bool
		check   func(state.Mailbox) bool
	}{
		{"validate a waiting plan", at(StatusWaitingValidation, nil), CommandValidatePlan, StepValidatePlan, true, KindPlanValidated, false, nil},
		{"validate while the plan is revised keeps the label", at(StatusTechnicalAnalysis, nil), CommandValidatePlan, "", false, "", false,
			func(m state.Mailbox) bool { return slices.Contains(m.Labels, CommandValidatePlan.Label()) }},
		{"validate with no plan waiting is removed, nothing else", at(StatusInDevelopment, nil), CommandValidatePlan, "", true, "", false, nil},
		{"retry a blocked development", at(StatusBlocked, func(m *state.Mailbox) { m.Phase, m.LLMRetries, m.CIFixAttempts = "development", 2, 3 }), CommandRetry, StepRetryDevelopment, true, KindRetryResumed, false,
			func(m state.Mailbox) bool { return m.LLMRetries == 0 && m.CIFixAttempts == 0 }},
		{"retry_once allows exactly one more", at(StatusBlocked, func(m *state.Mailbox) { m.Phase = "ci_fix" }), CommandRetryOnce, StepRetryDevelopment, true, KindRetryResumed, false,
			func(m state.Mailbox) bool {
				return m.LLMRetries == 2 && m.CIFixAttempts == 2 && m.ConflictFixAttempts == 2
			}},
		{"retry_until_green", at(StatusBlocked, func(m *state.Mailbox) { m.Phase = "ci_fix" }), CommandRetryUntilGreen, StepRetryDevelopment, true, KindRetryResumed, false,
			func(m state.Mailbox) bool { return m.UntilGreen }},
		{"retry of an analysis", at(StatusBlocked, nil), CommandRetry, StepRetryAnalysis, true, KindRetryResumed, false, nil},
		{"retry releases quarantined events, not a phase", at(StatusInDevelopment, quarantined), CommandRetry, "", true, KindRetryResumed, true, nil},
		{"retry of a blocked mailbox releases and runs again", at(StatusBlocked, quarantined), CommandRetry, StepRetryAnalysis, true, KindRetryResumed, true, nil},
		{"retry while a run works does nothing more", at(StatusBlocked, func(m *state.Mailbox) { m.ActiveRunID = "r1" }), CommandRetry, "", true, "", false, nil},
	}
	for _, tc := range tests {
		next, a := DecideCommand(tc.mb, tc.c, "alice", "d9", r)
		if a.Step != tc.step || (a.Unlabel != "") != tc.unlabel || a.Release != tc.release || saidKind(a) != tc.say {
			t.Errorf("%s: step %q unlabel %q release %v say %q; want %q %v %v %q", tc.name, a.Step, a.Unlabel, a.Release, saidKind(a), tc.step, tc.unlabel, tc.release, tc.say)
		}
		if tc.unlabel && slices.Contains(next.Labels, tc.c.Label()) {
			t.Errorf("%s: the command label stays in the mailbox's labels: %v", tc.name, next.Labels)
		}
		if tc.check != nil && !tc.check(next) {
			t.Errorf("%s: mailbox after it: %+v", tc.name, next)
		}
		checkDeclared(t, tc.name, tc.mb, a)
	}
}

// TestDecideRunEnd: what a finished run does to its mailbox, pure.
func TestDecideRunEnd(t *testing.T) {
	r := Rules{LLMRetries: 1, NeedValidation: true}
	mbAt := func(s Status, f func(*state.Mailbox)) state.Mailbox {
		mb := state.Mailbox{ID: "m", Status: string(s), ActiveRunID: "r1", Flow: string(FlowTask), LLMRetries: 1}
		if f != nil {
			f(&mb)
		}
		return mb
	}
	run := func(p agents.Phase, st state.RunStatus, f func(*state.Run)) state.Run {
		rn := state.Run{ID: "r1", Phase: string(p), Status: st, Result: "## Functional analysis\nwhat\n\n## Implementation plan\nhow"}
		if f != nil {
			f(&rn)
		}
		return rn
	}
	pushed := func(rn *state.Run) { rn.Pushed, rn.HeadSHA = true, "abc" }
	tests := []struct {
		name  string
		mb    state.Mailbox
		run   state.Run
		step  Step
		say   string
		check func(state.Mailbox, Actions) bool
	}{
		{"canceled: only saved", mbAt(StatusInDevelopment, nil), run(agents.PhaseDevelopment, state.RunCanceled, nil), "", "", nil},
		{"failed with retries left", mbAt(StatusInDevelopment, func(m *state.Mailbox) { m.LLMRetries = 0 }), run(agents.PhaseDevelopment, state.RunFailed, nil), StepRunFailed, "",
			func(m state.Mailbox, a Actions) bool { return m.LLMRetries == 1 && a.Phase == agents.PhaseDevelopment }},
		{"failed past the retries: blocked", mbAt(StatusInDevelopment, nil), run(agents.PhaseDevelopment, state.RunFailed, nil), StepBlocked, KindBlocked,
			func(m state.Mailbox, a Actions) bool { return m.Phase == "development" }},
		{"analysis posts the plan and waits", mbAt(StatusTechnicalAnalysis, nil), run(agents.PhaseAnalysis, state.RunSucceeded, nil), StepPlanPosted, KindPlan,
			func(m state.Mailbox, a Actions) bool { return a.Section == "what" && m.LLMRetries == 0 }},
		{"analysis with questions", mbAt(StatusFunctionalAnalysis, nil), run(agents.PhaseAnalysis, state.RunSucceeded, func(rn *state.Run) { rn.Result = "## Questions\nwhy?" }), StepQuestionsAsked, KindQuestions, nil},
		{"analysis validated while revised goes on", mbAt(StatusTechnicalAnalysis, func(m *state.Mailbox) { m.Labels = []string{CommandValidatePlan.Label()} }), run(agents.PhaseAnalysis, state.RunSucceeded, nil), StepPlanGoesOn, KindPlan,
			func(m state.Mailbox, a Actions) bool { return a.Unlabel == CommandValidatePlan && len(m.Labels) == 0 }},
		{"type::analysis stops at the plan", mbAt(StatusTechnicalAnalysis, func(m *state.Mailbox) { m.Flow = string(FlowAnalysis) }), run(agents.PhaseAnalysis, state.RunSucceeded, nil), StepPlanOnly, KindPlan, nil},
		{"answer of a type::question", mbAt(StatusFunctionalAnalysis, func(m *state.Mailbox) { m.Flow = string(FlowQuestion) }), run(agents.PhaseAnswer, state.RunSucceeded, nil), StepAnswered, KindAnswer, nil},
		{"answer in a task: comment only", mbAt(StatusInDevelopment, nil), run(agents.PhaseAnswer, state.RunSucceeded, nil), "", KindAnswer, nil},
		{"development pushed: merge request, CI", mbAt(StatusInDevelopment, nil), run(agents.PhaseDevelopment, state.RunSucceeded, pushed), StepPushed, "",
			func(m state.Mailbox, a Actions) bool { return a.EnsureMR && a.CheckMR == "r1" && m.HeadSHA == "abc" }},
		{"ci_fix pushed to an open merge request", mbAt(StatusInDevelopment, func(m *state.Mailbox) { m.MergeRequestIID = 4 }), run(agents.PhaseCIFix, state.RunSucceeded, pushed), StepPushed, "",
			func(m state.Mailbox, a Actions) bool { return !a.EnsureMR }},
		{"nothing to do", mbAt(StatusInDevelopment, nil), run(agents.PhaseCIFix, state.RunSucceeded, func(rn *state.Run) { rn.NothingToDo = true }), StepPushed, KindNothingToDo, nil},
		{"nothing pushed: retried or blocked", mbAt(StatusInDevelopment, nil), run(agents.PhaseDevelopment, state.RunSucceeded, nil), StepBlocked, KindBlocked, nil},
	}
	for _, tc := range tests {
		next, a := DecideRunEnd(tc.mb, tc.run, r)
		if a.Step != tc.step || saidKind(a) != tc.say || next.ActiveRunID != "" {
			t.Errorf("%s: step %q say %q active %q; want %q %q", tc.name, a.Step, saidKind(a), next.ActiveRunID, tc.step, tc.say)
		}
		if tc.check != nil && !tc.check(next, a) {
			t.Errorf("%s: mailbox %+v, Actions %+v", tc.name, next, a)
		}
		checkDeclared(t, tc.name, tc.mb, a)
	}
}

func saidKind(a Actions) string {
	if a.Say == nil {
		return ""
	}
	return a.Say.Kind
}

// checkDeclared fails when a decision takes a step the table does not
// declare from the mailbox's status.
func checkDeclared(t *testing.T, name string, mb state.Mailbox, a Actions) {
	t.Helper()
	if a.Step == "" {
		return
	}
	if tr, ok := TransitionOf(a.Step); !ok || !tr.Allows(Status(mb.Status)) {
		t.Errorf("%s: step %s is not declared from %q", name, a.Step, mb.Status)
	}
}
