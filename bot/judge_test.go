package bot

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// TestJudgeMergeRequest: the lifecycle's decision on the bot's merge
// request, pure: no forge, no git, no goroutine.
func TestJudgeMergeRequest(t *testing.T) {
	lim := loopLimits{Conflict: 3, CI: 3, CIHardCap: 10}
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
			if tr, ok := transitionOf(tc.want.step); !ok || !tr.allows(StatusInCI) {
				t.Errorf("%s: step %s is not declared from in_ci", tc.name, tc.want.step)
			}
		}
	}
}
