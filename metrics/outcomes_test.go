package metrics

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestOutcomes: each figure as its series, none for a figure with nothing
// behind it, every value as given.
func TestOutcomes(t *testing.T) {
	ends := func(merged, closed int) map[string]int {
		return map[string]int{"merged": merged, "closed_unmerged": closed, "delivered": 0, "done_unrecorded": 0}
	}
	list := []Outcome{
		{Forge: "gitea", Project: "alice/demo", Adapter: "claude-code", Model: "opus", Issues: 3, Ends: ends(2, 1), MergeRateOf: 3, MergeRate: 2.0 / 3,
			ToPullRequestN: 3, ToPullRequestMedian: 3600, ToPullRequestP90: 7200, ToMergeN: 2, ToMergeMedian: 10800, ToMergeP90: 14400,
			Merged: 2, USDPerMerged: 1.5, TokensPerMerged: 1500},
		{Forge: "gitea", Project: "", Adapter: "*", Model: "*", Issues: 1, Ends: ends(0, 0)},
		{Forge: "gitea", Project: "broken", Adapter: "x", Model: "y", Issues: 1, Ends: ends(1, 0), Merged: 1, USDPerMerged: math.NaN(), TokensPerMerged: 10},
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newOutcomesCollector(time.Minute, time.Now, func() []Outcome { return list }))
	// The labels as the exposition sorts them.
	const l = `adapter="claude-code",forge="gitea",model="opus",project="alice/demo"`
	const pooled = `adapter="*",forge="gitea",model="*",project=""`
	const broken = `adapter="x",forge="gitea",model="y",project="broken"`
	for _, tc := range []struct {
		name, want string
	}{
		{"alfred_outcomes_issues", "alfred_outcomes_issues{" + pooled + "} 1\nalfred_outcomes_issues{" + l + "} 3\nalfred_outcomes_issues{" + broken + "} 1\n"},
		{"alfred_outcomes_merge_rate", "alfred_outcomes_merge_rate{" + l + "} 0.6666666666666666\n"},
		{"alfred_outcomes_time_to_pull_request_seconds", "alfred_outcomes_time_to_pull_request_seconds{" + l + `,quantile="0.5"} 3600` + "\n" +
			"alfred_outcomes_time_to_pull_request_seconds{" + l + `,quantile="0.9"} 7200` + "\n"},
		{"alfred_outcomes_time_to_merge_seconds", "alfred_outcomes_time_to_merge_seconds{" + l + `,quantile="0.5"} 10800` + "\n" +
			"alfred_outcomes_time_to_merge_seconds{" + l + `,quantile="0.9"} 14400` + "\n"},
		{"alfred_outcomes_cost_per_merged_usd", "alfred_outcomes_cost_per_merged_usd{" + l + "} 1.5\n"},
		{"alfred_outcomes_tokens_per_merged", "alfred_outcomes_tokens_per_merged{" + l + "} 1500\nalfred_outcomes_tokens_per_merged{" + broken + "} 10\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.GatherAndCompare(reg, strings.NewReader(header(t, reg, tc.name)+tc.want), tc.name); err != nil {
				t.Error(err)
			}
		})
	}
	n, err := testutil.GatherAndCount(reg, "alfred_outcomes_finished_issues")
	if err != nil || n != 12 {
		t.Errorf("%d finished-issue series (%v), want 4 ends × 3 groups", n, err)
	}
}

// header is the HELP and TYPE lines of series name, as reg has them.
func header(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return "# HELP " + name + " " + mf.GetHelp() + "\n# TYPE " + name + " gauge\n"
		}
	}
	t.Fatalf("no series %s", name)
	return ""
}

// TestOutcomesCached: the figures are read once a TTL, however many
// scrapes come; a clock that went back reads again.
func TestOutcomesCached(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	reads := 0
	c := newOutcomesCollector(time.Minute, func() time.Time { return now }, func() []Outcome {
		reads++
		return []Outcome{{Forge: "f", Project: "p", Adapter: "a", Model: "m", Issues: reads}}
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for _, step := range []struct {
		advance time.Duration
		reads   int
	}{{0, 1}, {30 * time.Second, 1}, {29 * time.Second, 1}, {time.Second, 2}, {10 * time.Second, 2}, {-time.Hour, 3}} {
		now = now.Add(step.advance)
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
		if reads != step.reads {
			t.Errorf("after %v: %d reads, want %d", step.advance, reads, step.reads)
		}
	}
	if list, _ := c.figures(); list[0].Issues != 3 {
		t.Errorf("the figures served are of read %d, want 3", list[0].Issues)
	}
}

// TestOutcomesNil: a nil Metrics registers nothing and does not read.
func TestOutcomesNil(t *testing.T) {
	var m *Metrics
	m.Outcomes(time.Minute, func() []Outcome { t.Error("read"); return nil })
}
