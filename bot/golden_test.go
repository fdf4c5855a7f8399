package bot

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// What people read, rendered from fixed inputs and compared with the files
// under testdata/comments and testdata/prompts, so that a change of wording
// is a visible diff in review. go test ./bot -run TestGolden -update
// rewrites them.

func TestGoldenComments(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	name, id, fallback := "agent/issue-7-add-a-greeting", "4f1c2d9e-0b7a-4c52-9d55-1a2b3c4d5e6f", "no_prior_session"
	rows := []SessionRow{
		{Run: state.Run{ID: "run-2", MailboxID: "forgejo/alice/demo/issue/7", Phase: "development", Status: state.RunRunning}, URL: "http://alfred.test/runs/run-2"},
		{Run: state.Run{ID: "run-1", MailboxID: "forgejo/alice/demo/issue/7", Phase: "analysis", Status: state.RunSucceeded},
			Session: &state.LLMSession{SessionName: &name, NativeSessionID: &id, ResumeFallback: &fallback, InputTokens: 1200, OutputTokens: 340, CostUSD: 0.0123},
			URL:     "http://alfred.test/runs/run-1"},
		{Run: state.Run{ID: "run-0", MailboxID: "forgejo/alice/demo/issue/7", Phase: "answer", Status: state.RunFailed, NoSession: "the host runner never resumes sessions"},
			Session: &state.LLMSession{}, URL: "http://alfred.test/runs/run-0"},
	}
	quarantined := []state.QuarantinedEvent{{Delivery: "d-42", Type: "comment_created", Error: "the forge did not allow Alfred's account @alfred to do this on alice/demo (403): give it write access", At: at}}
	plan := "## Implementation plan\n\n1. Add hello.go.\n2. Test it."
	for kind, text := range map[string]string{
		KindAcknowledgement:            textAcknowledgement("alice"),
		KindPlan:                       textPlan(plan, true),
		KindPlan + "-goes-on":          textPlan(plan, false),
		KindPlan + "-only":             textPlanOnly(plan),
		KindQuestions:                  textQuestions("- In which languages?"),
		KindPlanValidated:              textPlanValidated("alice"),
		KindStatusLabelRestored:        textStatusRestored(StatusInCI.Label()),
		KindRetryResumed:               textRetry("ci_fix"),
		KindRetryResumed + "-events":   textRetryEvents(2),
		KindBlocked:                    textBlocked("development", "the agent exited 1: out of memory", 3),
		KindBlocked + "-ci":            textCIBlocked(3),
		KindBlocked + "-conflict":      textConflictBlocked(3, "main"),
		KindNothingToDo:                textNothingToResolve("main"),
		KindBudgetPaused:               textBudgetPaused("development", state.Spend{Tokens: 123456, USD: 1.5}, limits{tokens: 100000, usd: 2}),
		KindBudgetPaused + "-unpriced": textBudgetPaused("ci_fix", state.Spend{Tokens: 250000, USD: 0.6, Unpriced: 2}, limits{usd: 0.25, steps: 1}),
		KindBudgetStep:                 textBudgetStep("alice", 2),
		KindSession:                    textSession(rows, quarantined),
		"merge_request_description":    textMergeRequest(7, "Added hello.go with its test."),
		KindAnswer + "-is-the-agents":  "(the agent's answer, posted as it is)",
	} {
		golden(t, filepath.Join("testdata", "comments", kind+".md"), text)
	}
}

func TestGoldenPrompts(t *testing.T) {
	base := PromptInput{
		Project: forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"},
		Issue:   forges.Issue{Number: 7, Title: "Add a greeting", Body: "The demo should greet its users."},
		Branch:  "agent/issue-7-add-a-greeting",
		Thread:  []forges.Comment{{Author: "bob", Body: "English and French, please."}},
	}
	withPlan := base
	withPlan.Plan = "1. Add hello.go.\n2. Test it."
	cases := map[string]PromptInput{}
	a := base
	a.Phase = agents.PhaseAnalysis
	cases["analysis"] = a
	again := withPlan
	again.Phase, again.Asked, again.Feedback = agents.PhaseAnalysis, "- In which languages?", "@alfred keep it in one file"
	cases["analysis-revision"] = again
	d := withPlan
	d.Phase = agents.PhaseDevelopment
	cases["development"] = d
	ci := withPlan
	ci.Phase, ci.CI = agents.PhaseCIFix, []forges.Check{{Name: "ci/test", State: forges.CIFailure, Description: "2 tests failed", URL: "http://ci.test/1"}}
	cases["ci_fix"] = ci
	rf := withPlan
	rf.Phase, rf.Review = agents.PhaseReviewFix, "Almost there."
	rf.Reviews = []forges.ReviewComment{{Path: "hello.go", Line: 3, Author: "bob", Body: "Say hello in French too"}}
	cases["review_fix"] = rf
	cr := withPlan
	cr.Phase, cr.Conflict = agents.PhaseConflictResolution, []string{"hello.go", "README.md"}
	cases["conflict_resolution"] = cr
	an := base
	an.Phase, an.Question = agents.PhaseAnswer, "@alfred why a new file?"
	cases["answer"] = an
	for name, in := range cases {
		golden(t, filepath.Join("testdata", "prompts", name+".md"), Prompt(in))
	}
}

// golden compares got with the file at path, or writes it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: write it with go test ./bot -run TestGolden -update", err)
	}
	if string(want) != got {
		t.Errorf("%s changed; if the new wording is meant, rewrite it with -update. Got:\n%s", path, got)
	}
}
