package lifecycle

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
)

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
// every status reached by some row (that each limit is a setting of the
// catalogue is bot's TestTableLimitsAreSettings).
func TestTable(t *testing.T) {
	known := append(Statuses(), statusNew)
	phases := append(agents.Phases(), PhaseFailed, phaseHeld, "")
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

var update = flag.Bool("update", false, "rewrite the generated files: docs/lifecycle.md, testdata/comments")

// TestLifecycleDiagram: docs/lifecycle.md is what Diagram makes of the
// table; -update rewrites it.
func TestLifecycleDiagram(t *testing.T) {
	path := "../../docs/lifecycle.md"
	want := Diagram()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with go test ./bot/lifecycle -run TestLifecycleDiagram -update", err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: the lifecycle table changed; run go test ./bot/lifecycle -run TestLifecycleDiagram -update", path)
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
	text := TextStatusRestored(StatusInCI.Label())
	for _, d := range commandDefs {
		if !strings.Contains(text, "`"+d.Command.Label()+"`") {
			t.Errorf("the restored-label comment lacks %s:\n%s", d.Command.Label(), text)
		}
	}
}
