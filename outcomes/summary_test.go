package outcomes

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// issue is an outcome of end with a development run of adapter and model,
// its merge request after pr and its end after fin (0: not reached).
func issue(end End, adapter, model string, pr, fin time.Duration, sp Spend) Outcome {
	o := Outcome{End: end, Runs: 1, Spend: sp}
	if adapter != "" {
		o.Phases = []Phase{{Phase: phaseDevelopment, Runs: 1, Agents: []Agent{{Adapter: adapter, Model: model}}, Spend: sp}}
	}
	if pr > 0 {
		o.PullRequest = Milestone{After: dur(pr)}
	}
	if fin > 0 {
		o.Finished = Milestone{After: dur(fin)}
	}
	return o
}

func TestTimesOf(t *testing.T) {
	h := time.Hour
	for _, c := range []struct {
		name string
		in   []time.Duration
		want *Times
	}{
		{"none", nil, nil},
		{"one", []time.Duration{3 * h}, &Times{N: 1, Median: 3 * h, P90: 3 * h}},
		{"two: the mean of the middle, p90 the largest", []time.Duration{4 * h, 2 * h}, &Times{N: 2, Median: 3 * h, P90: 4 * h}},
		{"ties for the median", []time.Duration{h, 5 * h, 5 * h, 5 * h, 9 * h}, &Times{N: 5, Median: 5 * h, P90: 9 * h}},
		{"even with tied middles", []time.Duration{h, 2 * h, 2 * h, 7 * h}, &Times{N: 4, Median: 2 * h, P90: 7 * h}},
		{"ten: p90 is the ninth", []time.Duration{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, &Times{N: 10, Median: 5, P90: 9}},
		{"extremes do not overflow", []time.Duration{math.MaxInt64, math.MaxInt64 - 2}, &Times{N: 2, Median: math.MaxInt64 - 1, P90: math.MaxInt64}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := timesOf(c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("timesOf(%v) = %+v, want %+v", c.in, got, c.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	h := time.Hour
	paid := func(tokens int64, usd float64) Spend {
		return Spend{InputTokens: tokens, USD: usd, CLIRuns: 1}
	}
	for _, c := range []struct {
		name  string
		in    []Outcome
		check func(t *testing.T, s Summary)
	}{
		{"empty", nil, func(t *testing.T, s Summary) {
			if s.Note != NoFinished || s.MergeRate != nil || s.ToPullRequest != nil || s.ToMerge != nil || s.PerMerged != nil || len(s.ByAdapter) != 0 {
				t.Errorf("empty summary: %+v", s)
			}
		}},
		{"only open issues", []Outcome{issue(EndOpen, "codex", "", 2*h, 0, Spend{})}, func(t *testing.T, s Summary) {
			if s.Note != NoFinished || s.MergeRate != nil || s.ToPullRequest == nil || s.ToPullRequest.N != 1 {
				t.Errorf("open only: %+v", s)
			}
		}},
		{"one merged issue", []Outcome{issue(EndMerged, "claude-code", "opus", h, 3*h, paid(1000, 2))}, func(t *testing.T, s Summary) {
			want := &Rate{Count: 1, Of: 1, Value: 1, Few: true}
			if s.Note != "" || !reflect.DeepEqual(s.MergeRate, want) || s.MergeRate.String() != "100% (1 of 1, few)" {
				t.Errorf("merge rate %+v, note %q", s.MergeRate, s.Note)
			}
			if s.ToMerge == nil || s.ToMerge.Median != 3*h || s.ToMerge.P90 != 3*h {
				t.Errorf("to merge %+v", s.ToMerge)
			}
			if p := s.PerMerged; p == nil || p.Tokens != 1000 || p.USD != 2 || p.AllUSD != 2 {
				t.Errorf("per merged %+v", p)
			}
		}},
		{"delivered issues are finished but not in the merge rate", []Outcome{
			issue(EndDelivered, "codex", "", 0, h, Spend{}), issue(EndClosed, "codex", "", h, 2*h, Spend{}),
		}, func(t *testing.T, s Summary) {
			if s.Finished != 2 || s.MergeRate == nil || s.MergeRate.Of != 1 || s.MergeRate.Count != 0 || s.MergeRate.Value != 0 || s.PerMerged != nil {
				t.Errorf("finished %d, rate %+v, per merged %+v", s.Finished, s.MergeRate, s.PerMerged)
			}
		}},
		{"by adapter, one with no merge", []Outcome{
			issue(EndMerged, "claude-code", "opus", h, 2*h, paid(100, 1)),
			issue(EndMerged, "claude-code", "sonnet", 3*h, 4*h, paid(300, 3)),
			issue(EndClosed, "claude-code", "opus", h, 5*h, paid(200, 2)),
			issue(EndBlocked, "codex", "", 0, 0, paid(50, 0.5)),
			issue(EndClosed, "codex", "", 2*h, 6*h, paid(50, 0.5)),
			{End: EndOpen}, // ran nothing
		}, func(t *testing.T, s Summary) {
			if s.Issues != 6 || s.Finished != 4 || s.Ends[EndMerged] != 2 || s.Ends[EndBlocked] != 1 || s.Runs != 5 {
				t.Errorf("counts: %+v", s)
			}
			if r := s.MergeRate; r == nil || r.Count != 2 || r.Of != 4 || r.Value != 0.5 || !r.Few {
				t.Errorf("merge rate %+v", r)
			}
			if p := s.PerMerged; p == nil || p.Tokens != 200 || p.USD != 2 || p.AllTokens != 350 || p.AllUSD != 3.5 {
				t.Errorf("per merged %+v", p)
			}
			names := []string{}
			for _, g := range s.ByAdapter {
				names = append(names, g.Adapter+":"+g.Model)
			}
			if strings.Join(names, ",") != ":,claude-code:,codex:" {
				t.Errorf("by adapter: %v", names)
			}
			codex := s.ByAdapter[2]
			if codex.MergeRate == nil || codex.MergeRate.Value != 0 || codex.PerMerged != nil || codex.ToMerge != nil || codex.Note != "" {
				t.Errorf("codex, which merged nothing: %+v", codex.Summary)
			}
			if none := s.ByAdapter[0]; none.Note != NoFinished || none.MergeRate != nil {
				t.Errorf("the issue that ran nothing: %+v", none.Summary)
			}
			if len(s.ByAgent) != 4 || s.ByAgent[1].Model != "opus" || s.ByAgent[1].MergeRate.Of != 2 {
				t.Errorf("by agent: %+v", s.ByAgent)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Summarize(c.in)
			c.check(t, s)
			b, err := json.Marshal(s)
			if err != nil || strings.Contains(string(b), "NaN") {
				t.Errorf("json: %v %s", err, b)
			}
		})
	}
}

func TestAgentOfPrefersDevelopment(t *testing.T) {
	o := Outcome{Phases: []Phase{
		{Phase: phaseAnalysis, Agents: []Agent{{Adapter: "codex"}}},
		{Phase: phaseDevelopment, Agents: []Agent{{Adapter: "claude-code", Model: "opus"}, {Adapter: "codex"}}},
	}}
	if a := AgentOf(o); a != (Agent{Adapter: "claude-code", Model: "opus"}) {
		t.Errorf("AgentOf = %+v", a)
	}
	o.Phases = o.Phases[:1]
	if a := AgentOf(o); a.Adapter != "codex" {
		t.Errorf("without development: %+v", a)
	}
}

func TestStalledRunsCounted(t *testing.T) {
	mb := state.Mailbox{ID: "m1", Status: "in_development", Kind: state.KindIssue}
	o := Derive(mb, []state.Run{{ID: "r1", MailboxID: mb.ID, Phase: phaseDevelopment, Status: state.RunFailed, Stalled: true}}, nil, time.Time{}, 0)
	if o.StalledRuns != 1 || o.FailedRuns != 1 {
		t.Errorf("stalled %d, failed %d", o.StalledRuns, o.FailedRuns)
	}
}
