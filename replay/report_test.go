package replay

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// worked is the outcome of an issue developed by adapter whose pull
// request came after toPR, with its spend.
func worked(adapter string, toPR time.Duration, in, out int64, usd float64) outcomes.Outcome {
	o := outcomes.Outcome{Status: "in_ci", AssignedAt: t0, End: outcomes.EndOpen, Runs: 2,
		PullRequest: outcomes.Milestone{At: t0.Add(toPR), After: &toPR},
		Spend:       outcomes.Spend{InputTokens: in, OutputTokens: out, USD: usd, GatewayRuns: 2},
		Phases:      []outcomes.Phase{{Phase: "development", Runs: 1, Agents: []outcomes.Agent{{Adapter: adapter}}}}}
	return o
}

// results are two adapters over three cases: claude-code solves two,
// codex one, and one of codex's cases ends blocked with no pull request.
func results() []Result {
	exit := func(code int) *CheckResult {
		return &CheckResult{Commit: "abc", Outcome: sandbox.OutcomeExited, ExitCode: code, Duration: time.Second}
	}
	solved := func(c, a string, toPR time.Duration, ok bool) Result {
		r := Result{Case: c, Adapter: a, Status: "in_ci", PullRequest: 2, Branch: "agent/issue-1-x", Check: exit(0), Solved: ok, Wall: toPR + 10*time.Second}
		if !ok {
			r.Check = exit(1)
		}
		r.Outcome = settle(worked(a, toPR, 1000, 200, 0.05), r, t0.Add(toPR+5*time.Second))
		return r
	}
	blocked := Result{Case: "port-to-rust", Adapter: "codex", Status: "blocked", Wall: 3 * time.Minute,
		Error: "the time limit passed\tbefore a pull request\nor an end",
		Outcome: outcomes.Outcome{Status: "blocked", AssignedAt: t0, End: outcomes.EndBlocked, Runs: 3, FailedRuns: 3,
			Phases: []outcomes.Phase{{Phase: "development", Runs: 3, Agents: []outcomes.Agent{{Adapter: "codex"}}}}}}
	return []Result{
		solved("add-double", "claude-code", time.Minute, true),
		solved("add-double", "codex", 2*time.Minute, true),
		solved("fix-add", "claude-code", 90*time.Second, true),
		solved("fix-add", "codex", 3*time.Minute, false),
		solved("port-to-rust", "claude-code", 2*time.Minute, false),
		blocked,
	}
}

// TestReportText: the tables people read, against a golden file.
func TestReportText(t *testing.T) {
	rep := Build(results(), "", 7*time.Minute)
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden := "testdata/report.txt"
	if *update {
		must(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("report:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestReportFigures: per adapter, the cases, the solved ones, the merge
// rate (a solved case merged, a checked unsolved one closed), the time to
// the pull request and the spend; the JSON holds them and no NaN.
func TestReportFigures(t *testing.T) {
	rep := Build(results(), "", time.Minute)
	if len(rep.Adapters) != 2 {
		t.Fatalf("adapters %+v", rep.Adapters)
	}
	cc, cx := rep.Adapters[0], rep.Adapters[1]
	if cc.Adapter != "claude-code" || cc.Cases != 3 || cc.Solved != 2 || cc.Summary.MergeRate == nil || cc.Summary.MergeRate.Count != 2 || cc.Summary.MergeRate.Of != 3 {
		t.Errorf("claude-code: %+v", cc)
	}
	if cc.Tokens != 3600 || cc.Summary.ToPullRequest == nil || cc.Summary.ToPullRequest.Median != 90*time.Second || cc.Summary.ToMerge == nil {
		t.Errorf("claude-code's figures: tokens %d, %+v", cc.Tokens, cc.Summary)
	}
	// codex: one merged, one closed, one blocked (not finished: out of the rate).
	if cx.Cases != 3 || cx.Solved != 1 || cx.Summary.MergeRate.Of != 2 || cx.Summary.Ends[outcomes.EndBlocked] != 1 || cx.Summary.FailedRuns != 3 {
		t.Errorf("codex: %+v", cx)
	}
	var b bytes.Buffer
	must(t, rep.WriteJSON(&b))
	if strings.Contains(b.String(), "NaN") || strings.Contains(b.String(), "Inf") {
		t.Errorf("the JSON has a NaN: %s", b.String())
	}
	var back Report
	must(t, json.Unmarshal(b.Bytes(), &back))
	if back.Adapters[0].Solved != 2 || len(back.Results) != 6 || back.Results[0].Check.Commit != "abc" {
		t.Errorf("the JSON read back: %+v", back)
	}
}

// TestReportEmpty: no result makes an empty report, not a panic or a NaN.
func TestReportEmpty(t *testing.T) {
	rep := Build(nil, "m", 0)
	var b bytes.Buffer
	must(t, rep.WriteText(&b))
	must(t, rep.WriteJSON(&b))
	if len(rep.Adapters) != 0 || strings.Contains(b.String(), "NaN") {
		t.Errorf("%+v\n%s", rep, b.String())
	}
}

// TestSettle: how a replay ends an outcome.
func TestSettle(t *testing.T) {
	at := t0.Add(5 * time.Minute)
	for _, tc := range []struct {
		name    string
		o       outcomes.Outcome
		res     Result
		end     outcomes.End
		after   time.Duration // 0: none
		reached bool
	}{
		{"solved", worked("a", time.Minute, 1, 1, 0), Result{Check: &CheckResult{}, Solved: true}, outcomes.EndMerged, 5 * time.Minute, true},
		{"check failed", worked("a", time.Minute, 1, 1, 0), Result{Check: &CheckResult{ExitCode: 1}}, outcomes.EndClosed, 5 * time.Minute, true},
		{"no pull request", outcomes.Outcome{End: outcomes.EndBlocked, AssignedAt: t0}, Result{}, outcomes.EndBlocked, 0, false},
		{"assignment unknown", outcomes.Outcome{End: outcomes.EndOpen}, Result{Check: &CheckResult{}, Solved: true}, outcomes.EndMerged, 0, true},
		{"assignment after the check", outcomes.Outcome{End: outcomes.EndOpen, AssignedAt: at.Add(time.Hour)}, Result{Check: &CheckResult{}, Solved: true}, outcomes.EndMerged, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := settle(tc.o, tc.res, at)
			if o.End != tc.end || o.Finished.Reached() != tc.reached {
				t.Fatalf("end %s, finished %+v", o.End, o.Finished)
			}
			if got := o.Finished.After; (tc.after == 0) != (got == nil) || got != nil && *got != tc.after {
				t.Errorf("after %v, want %s", got, tc.after)
			}
		})
	}
}
