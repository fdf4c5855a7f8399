package bot

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
)

// walked collects the steps the engines of this package's tests took: once
// the whole package has run, every row of the lifecycle table must have been
// walked on the in-memory forge (or the fake Forgejo), so a row no scenario
// reaches fails the suite (checkEveryStepWalked, from TestMain).
var walked = &stepSet{seen: map[Step]int{}}

type stepSet struct {
	mu   sync.Mutex
	seen map[Step]int
}

func (s *stepSet) add(st Step) {
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
	for _, t := range transitions {
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

// TestLabels: the catalogue the table makes has each label once, a colour
// and a description, and the counts of the lifecycle.
func TestLabels(t *testing.T) {
	hex6 := regexp.MustCompile(`^[0-9a-f]{6}$`)
	seen := map[string]bool{}
	count := map[string]int{}
	for _, l := range Labels() {
		if seen[l.Name] {
			t.Errorf("duplicate label %s", l.Name)
		}
		seen[l.Name] = true
		if !hex6.MatchString(l.Color) || l.Description == "" {
			t.Errorf("label %+v: want six lowercase hex digits and a description", l)
		}
		for _, p := range []string{forges.StatusPrefix, forges.CommandPrefix, forges.TypePrefix} {
			if strings.HasPrefix(l.Name, p) {
				count[p]++
			}
		}
	}
	if count[forges.StatusPrefix] != len(statuses) || count[forges.CommandPrefix] != len(commandDefs) || count[forges.TypePrefix] != len(types) {
		t.Errorf("catalogue counts = %v", count)
	}
	for _, n := range []string{"status::waiting_validation", "status::blocked", "ai::validate_plan", "ai::retry_until_green", "type::question"} {
		if !seen[n] {
			t.Errorf("catalogue lacks %s", n)
		}
	}
}

// TestTable: every row is well formed: a step named once, statuses of the
// table, a phase the agents know, a limit the settings catalogue has, and
// every status reached by some row.
func TestTable(t *testing.T) {
	known := append(Statuses(), statusNew)
	phases := append(agents.Phases(), phaseFailed, phaseHeld, "")
	steps := map[Step]bool{}
	reached := map[Status]bool{}
	for _, tr := range transitions {
		if steps[tr.Step] {
			t.Errorf("step %s declared twice", tr.Step)
		}
		steps[tr.Step] = true
		for _, s := range tr.From {
			if !slices.Contains(known, s) {
				t.Errorf("%s: from unknown status %q", tr.Step, s)
			}
		}
		if tr.To != "" && !slices.Contains(known, tr.To) {
			t.Errorf("%s: to unknown status %q", tr.Step, tr.To)
		}
		reached[tr.To] = true
		if !slices.Contains(phases, tr.Run) {
			t.Errorf("%s: runs unknown phase %q", tr.Step, tr.Run)
		}
		if tr.Limit != "" {
			if _, err := LookupSetting(tr.Limit); err != nil {
				t.Errorf("%s: limit %q is not a setting", tr.Step, tr.Limit)
			}
		}
		if tr.On == "" {
			t.Errorf("%s: says not what happens", tr.Step)
		}
	}
	for _, s := range Statuses() {
		if !reached[s] {
			t.Errorf("no row leads to status %s", s)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the generated files: docs/lifecycle.md, testdata/comments, testdata/prompts")

// TestLifecycleDiagram: docs/lifecycle.md is what Diagram makes of the
// table; -update rewrites it.
func TestLifecycleDiagram(t *testing.T) {
	path := "../docs/lifecycle.md"
	want := Diagram()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with go test ./bot -run TestLifecycleDiagram -update", err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: the lifecycle table changed; run go test ./bot -run TestLifecycleDiagram -update", path)
	}
	for _, tr := range transitions {
		if !strings.Contains(want, "| "+string(tr.Step)+" |") {
			t.Errorf("the diagram's table lacks step %s", tr.Step)
		}
	}
}

// TestStatusRestoredNamesEveryCommand: the comment that points people to
// the command labels lists those of the table.
func TestStatusRestoredNamesEveryCommand(t *testing.T) {
	text := textStatusRestored(StatusInCI.Label())
	for _, d := range commandDefs {
		if !strings.Contains(text, "`"+d.Command.Label()+"`") {
			t.Errorf("the restored-label comment lacks %s:\n%s", d.Command.Label(), text)
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
	mb := h.waitStatus(8, StatusDone)
	if runs, _ := h.store.Runs(mb.ID); len(runs) != 1 || runs[0].Phase != string(agents.PhaseAnswer) {
		t.Errorf("type::question runs: %+v, want one answer", runs)
	}
	if k := kinds(8); k[KindAnswer] != 1 || k[KindPlan] != 0 {
		t.Errorf("type::question comments %v, want one answer and no plan", k)
	}

	start(9, "type::analysis")
	mb = h.waitStatus(9, StatusDone)
	if runs, _ := h.store.Runs(mb.ID); len(runs) != 1 || runs[0].Phase != string(agents.PhaseAnalysis) {
		t.Errorf("type::analysis runs: %+v, want one analysis", runs)
	}
	if k := kinds(9); k[KindPlan] != 1 {
		t.Errorf("type::analysis comments %v, want the plan", k)
	}

	h.assign(7)
	h.waitStatus(7, StatusWaitingValidation)
	h.command(7, CommandValidatePlan)
	mb = h.waitStatus(7, StatusInCI)
	h.say(7, "alice", "@alfred why a new file?")
	waitUntil(t, func() bool { return kinds(7)[KindAnswer] == 1 })
	mb = h.waitStatus(7, StatusInCI)
	if runs, _ := h.store.Runs(mb.ID); runs[len(runs)-1].Phase != string(agents.PhaseAnswer) {
		t.Errorf("last run %s, want the answer", runs[len(runs)-1].Phase)
	}
}
