package bot

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
)

// walked collects the steps the engines of this package's tests took: once
// the whole package has run, every row of the lifecycle table must have been
// walked on the in-memory forge (or the fake Forgejo), so a row no scenario
// reaches fails the suite (checkEveryStepWalked, from TestMain).
var walked = &stepSet{seen: map[lifecycle.Step]int{}}

type stepSet struct {
	mu   sync.Mutex
	seen map[lifecycle.Step]int
}

func (s *stepSet) add(st lifecycle.Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[st]++
}

// checkEveryStepWalked fails (1) when the whole package ran and a row of the
// table was never taken; a run narrowed with -run or -short checks nothing.
func checkEveryStepWalked() int {
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" || testing.Short() {
		return 0
	}
	walked.mu.Lock()
	defer walked.mu.Unlock()
	var missing []string
	for _, t := range lifecycle.Transitions() {
		if walked.seen[t.Step] == 0 {
			missing = append(missing, string(t.Step))
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: no test walked these rows of the lifecycle table: %s\n", strings.Join(missing, ", "))
		return 1
	}
	return 0
}

// TestTableLimitsAreSettings: the setting that bounds a row of the
// lifecycle table is one of the settings catalogue.
func TestTableLimitsAreSettings(t *testing.T) {
	for _, tr := range lifecycle.Transitions() {
		if tr.Limit != "" {
			if _, err := LookupSetting(string(tr.Limit)); err != nil {
				t.Errorf("%s: limit %q is not a setting", tr.Step, tr.Limit)
			}
		}
	}
}

// TestLifecycleSettingsAreTheCatalogues: the settings the lifecycle names
// (lifecycle.Setting) are the keys of the declarations the engine reads.
func TestLifecycleSettingsAreTheCatalogues(t *testing.T) {
	for s, key := range map[lifecycle.Setting]string{
		lifecycle.SettingRequirePlanValidation: RequirePlanValidation.Key(), lifecycle.SettingLLMMaxRetries: LLMMaxRetries.Key(),
		lifecycle.SettingCIFixMaxAttempts: CIFixMaxAttempts.Key(), lifecycle.SettingCIFixHardCap: CIFixHardCap.Key(),
		lifecycle.SettingConflictFixMaxAttempts: ConflictFixMaxAttempts.Key(), lifecycle.SettingAgentBudgetTokens: AgentBudgetTokens.Key(),
		lifecycle.SettingAgentBudgetUSD: AgentBudgetUSD.Key(),
	} {
		if string(s) != key {
			t.Errorf("lifecycle names %s, the catalogue declares %s", s, key)
		}
	}
}

// TestTypeFlows walks the rows only the type labels and a question reach:
// type::question is answered and done, type::analysis stops after its plan,
// and a person naming the bot on an issue in CI gets an answer run that
// changes no status.
func TestTypeFlows(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kinds := func(iid int64) map[string]int {
		out := map[string]int{}
		for _, k := range h.forge.commentKinds(forges.Target{Kind: forges.TargetIssue, Number: iid}) {
			out[k]++
		}
		return out
	}
	start := func(iid int64, label string) {
		h.openIssue(iid, "About greetings", label)
		h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(iid), Labels: []string{label}})
	}

	start(8, "type::question")
	mb := h.waitStatus(8, lifecycle.StatusDone)
	if runs, _ := h.store.Runs(mb.ID); len(runs) != 1 || runs[0].Phase != string(agents.PhaseAnswer) {
		t.Errorf("type::question runs: %+v, want one answer", runs)
	}
	if k := kinds(8); k[lifecycle.KindAnswer] != 1 || k[lifecycle.KindPlan] != 0 {
		t.Errorf("type::question comments %v, want one answer and no plan", k)
	}

	start(9, "type::analysis")
	mb = h.waitStatus(9, lifecycle.StatusDone)
	if runs, _ := h.store.Runs(mb.ID); len(runs) != 1 || runs[0].Phase != string(agents.PhaseAnalysis) {
		t.Errorf("type::analysis runs: %+v, want one analysis", runs)
	}
	if k := kinds(9); k[lifecycle.KindPlan] != 1 {
		t.Errorf("type::analysis comments %v, want the plan", k)
	}

	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	h.command(7, lifecycle.CommandValidatePlan)
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	h.say(7, "alice", "@alfred why a new file?")
	waitUntil(t, func() bool { return kinds(7)[lifecycle.KindAnswer] == 1 })
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	if runs, _ := h.store.Runs(mb.ID); runs[len(runs)-1].Phase != string(agents.PhaseAnswer) {
		t.Errorf("last run %s, want the answer", runs[len(runs)-1].Phase)
	}
}
