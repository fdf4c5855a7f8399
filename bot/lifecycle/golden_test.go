package lifecycle

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// What people read, rendered from fixed inputs and compared with the files
// under testdata/comments, so that a change of wording is a visible diff in
// review. go test ./bot/lifecycle -run TestGolden -update rewrites them (the
// prompts are bot's TestGoldenPrompts).

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
		KindAcknowledgement:            TextAcknowledgement("alice"),
		KindPlan:                       textPlan(plan, true),
		KindPlan + "-goes-on":          textPlan(plan, false),
		KindPlan + "-only":             textPlanOnly(plan),
		KindQuestions:                  textQuestions("- In which languages?"),
		KindPlanValidated:              textPlanValidated("alice"),
		KindStatusLabelRestored:        TextStatusRestored(StatusInCI.Label()),
		KindRetryResumed:               textRetry("ci_fix"),
		KindRetryResumed + "-events":   textRetryEvents(2),
		KindBlocked:                    textBlocked("development", "the agent exited 1: out of memory", 3),
		KindBlocked + "-ci":            textCIBlocked(3),
		KindBlocked + "-conflict":      textConflictBlocked(3, "main"),
		KindNothingToDo:                TextNothingToResolve("main"),
		KindBudgetPaused:               TextBudgetPaused("development", state.Spend{Tokens: 123456, USD: 1.5}, Limits{Tokens: 100000, USD: 2}),
		KindBudgetPaused + "-unpriced": TextBudgetPaused("ci_fix", state.Spend{Tokens: 250000, USD: 0.6, Unpriced: 2}, Limits{USD: 0.25, Steps: 1}),
		KindBudgetStep:                 textBudgetStep("alice", 2),
		KindSession:                    TextSession(rows, quarantined),
		"merge_request_description":    TextMergeRequest(7, "Added hello.go with its test."),
		KindAnswer + "-is-the-agents":  "(the agent's answer, posted as it is)",
	} {
		golden(t, filepath.Join("testdata", "comments", kind+".md"), text)
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
		t.Fatalf("%v: write it with go test ./bot/lifecycle -run TestGolden -update", err)
	}
	if string(want) != got {
		t.Errorf("%s changed; if the new wording is meant, rewrite it with -update. Got:\n%s", path, got)
	}
}
