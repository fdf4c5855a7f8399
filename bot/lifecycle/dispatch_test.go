package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// intentKinds are the IntentKind constants declared in the package, read
// from its source: a kind added without a row fails TestEveryIntentHasARow.
func intentKinds(t *testing.T) []IntentKind {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "classify.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []IntentKind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			v := sp.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "IntentKind" {
				for _, val := range v.Values {
					if lit, ok := val.(*ast.BasicLit); ok {
						out = append(out, IntentKind(lit.Value[1:len(lit.Value)-1]))
					}
				}
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("found %d intent kinds in classify.go", len(out))
	}
	return out
}

// TestEveryIntentHasARow: every intent kind but Ignore has a row of the
// dispatch table and says whether it steers; every row's intent, statuses,
// effect and step are declared, and its step is declared from its statuses.
func TestEveryIntentHasARow(t *testing.T) {
	for _, k := range intentKinds(t) {
		if k == IntentIgnore {
			continue
		}
		if !slices.ContainsFunc(dispatch, func(r Row) bool { return r.On == k }) {
			t.Errorf("intent %s has no row in the dispatch table", k)
		}
		if !slices.ContainsFunc(intents, func(d intentDef) bool { return d.kind == k }) {
			t.Errorf("intent %s is not in intents (does it steer?)", k)
		}
	}
	known := append(Statuses(), statusNew)
	for _, r := range dispatch {
		if !slices.Contains(Effects(), r.Effect) {
			t.Errorf("%s: unknown effect %q", r.On, r.Effect)
		}
		for _, s := range r.From {
			if !slices.Contains(known, s) {
				t.Errorf("%s: from unknown status %q", r.On, s)
			}
		}
		if r.Step == "" {
			continue
		}
		tr, ok := TransitionOf(r.Step)
		if !ok {
			t.Errorf("%s: unknown step %q", r.On, r.Step)
			continue
		}
		if len(r.From) == 0 && len(tr.From) > 0 {
			t.Errorf("%s: from any status, but step %s is declared from %v only", r.On, r.Step, tr.From)
		}
		for _, s := range r.From {
			if !tr.Allows(s) {
				t.Errorf("%s: from %q, but step %s is not declared from it", r.On, s, r.Step)
			}
		}
	}
}

// TestDispatch: the lookup, pure: the row an intent finds from a status, and
// why none when its guards do not hold.
func TestDispatch(t *testing.T) {
	mb := func(s Status, f func(*state.Mailbox)) *state.Mailbox {
		m := &state.Mailbox{Kind: state.KindIssue, Status: string(s), MergeRequestIID: 4}
		if f != nil {
			f(m)
		}
		return m
	}
	busy := func(m *state.Mailbox) { m.ActiveRunID = "r1" }
	comment := func(body string) *forges.Event {
		return &forges.Event{Type: forges.EventCommentCreated, Comment: &forges.Comment{Body: body}}
	}
	tests := []struct {
		name   string
		f      Facts
		effect Effect // "" none
		step   Step
	}{
		{"an issue assigned", Facts{Intent: Intent{Kind: IntentStart}, Event: &forges.Event{}}, EffectStart, StepStart},
		{"a type::question assigned", Facts{Intent: Intent{Kind: IntentStart, Labels: []string{"type::question"}}, Event: &forges.Event{}}, EffectStart, StepStartQuestion},
		{"a merge request asked about", Facts{Intent: Intent{Kind: IntentStart}, Event: &forges.Event{Target: forges.Target{Kind: forges.TargetMergeRequest}}}, EffectAnswerMergeRequest, ""},
		{"a command in any status", Facts{Intent: Intent{Kind: IntentCommand}, Mailbox: mb(StatusBlocked, nil)}, EffectCommand, ""},
		{"answers to the questions", Facts{Intent: Intent{Kind: IntentInfo}, Mailbox: mb(StatusWaitingInfo, nil)}, EffectStep, StepInfoGiven},
		{"answers while a run works wait", Facts{Intent: Intent{Kind: IntentInfo}, Mailbox: mb(StatusWaitingInfo, busy)}, "", ""},
		{"plan feedback", Facts{Intent: Intent{Kind: IntentPlanFeedback}, Mailbox: mb(StatusWaitingValidation, nil)}, EffectStep, StepPlanFeedback},
		{"a question naming the bot", Facts{Intent: Intent{Kind: IntentQuestion}, Event: comment("@Alfred why?"), Mailbox: mb(StatusInCI, nil), Me: "alfred"}, EffectStep, StepAnswer},
		{"a question on a type::question issue", Facts{Intent: Intent{Kind: IntentQuestion}, Event: comment("why?"), Mailbox: mb(StatusFunctionalAnalysis, func(m *state.Mailbox) { m.Flow = string(FlowQuestion) }), Me: "alfred"}, EffectStep, StepAnswer},
		{"a remark between people", Facts{Intent: Intent{Kind: IntentQuestion}, Event: comment("why?"), Mailbox: mb(StatusInCI, nil), Me: "alfred"}, "", ""},
		{"review feedback in review", Facts{Intent: Intent{Kind: IntentReview}, Mailbox: mb(StatusInReview, nil)}, EffectReview, StepReview},
		{"review feedback in development", Facts{Intent: Intent{Kind: IntentReview}, Mailbox: mb(StatusInDevelopment, nil)}, "", ""},
		{"review feedback without a merge request", Facts{Intent: Intent{Kind: IntentReview}, Mailbox: mb(StatusInCI, func(m *state.Mailbox) { m.MergeRequestIID = 0 })}, "", ""},
		{"CI in CI", Facts{Intent: Intent{Kind: IntentCI}, Mailbox: mb(StatusInCI, nil)}, EffectCheckMergeRequest, ""},
		{"CI while a run works", Facts{Intent: Intent{Kind: IntentCI}, Mailbox: mb(StatusInCI, busy)}, "", ""},
		{"CI while blocked", Facts{Intent: Intent{Kind: IntentCI}, Mailbox: mb(StatusBlocked, nil)}, "", ""},
		{"merged", Facts{Intent: Intent{Kind: IntentMerged}, Mailbox: mb(StatusInReview, busy)}, EffectMerged, StepFinished},
		{"closed", Facts{Intent: Intent{Kind: IntentClosed}, Mailbox: mb(StatusWaitingValidation, nil)}, EffectClosed, StepFinished},
		{"branch deleted", Facts{Intent: Intent{Kind: IntentBranchDeleted}, Mailbox: mb(StatusInCI, nil)}, EffectForgetBranch, ""},
		{"an ignored event", Facts{Intent: Intent{Kind: IntentIgnore}, Mailbox: mb(StatusInCI, nil)}, "", ""},
	}
	for _, tc := range tests {
		row, why, ok := Dispatch(tc.f)
		if ok != (tc.effect != "") || row.Effect != tc.effect || row.Step != tc.step {
			t.Errorf("%s: row %+v, ok %v; want %q %q", tc.name, row, ok, tc.effect, tc.step)
		}
		if !ok && why == "" {
			t.Errorf("%s: no row, and no why", tc.name)
		}
	}
}

// TestSteers: the intents only people with write access may cause.
func TestSteers(t *testing.T) {
	for k, want := range map[IntentKind]bool{IntentStart: true, IntentCommand: true, IntentQuestion: true, IntentInfo: true,
		IntentPlanFeedback: true, IntentReview: true, IntentRestoreStatus: false, IntentCI: false, IntentMerged: false,
		IntentClosed: false, IntentBranchDeleted: false, IntentIgnore: false} {
		if Steers(k) != want {
			t.Errorf("Steers(%s) = %v, want %v", k, !want, want)
		}
	}
}

// TestEveryCommandDecides: every command label's row names its decision.
func TestEveryCommandDecides(t *testing.T) {
	for _, d := range commandDefs {
		if d.decide == nil {
			t.Errorf("command %s names no decision", d.Command)
		}
	}
}
