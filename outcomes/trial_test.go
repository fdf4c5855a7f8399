package outcomes

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// armed makes the outcomes of n issues of arm: merged ones first (the
// i-th merged after i+1 hours, each at 0.5 dollars), then closed unmerged
// ones, then open ones.
func armed(arm string, merged, closed, open int) []Outcome {
	var out []Outcome
	for i := range merged + closed + open {
		o := Outcome{Trial: arm, End: EndOpen, Spend: Spend{USD: 0.5, CLIRuns: 1, InputTokens: 10}}
		switch {
		case i < merged:
			d := time.Duration(i+1) * time.Hour
			o.End, o.Finished = EndMerged, Milestone{At: time.Unix(0, 0), After: &d}
		case i < merged+closed:
			o.End = EndClosed
		}
		out = append(out, o)
	}
	return out
}

func join(lists ...[]Outcome) []Outcome { return slices.Concat(lists...) }

func TestCompareTrial(t *testing.T) {
	for _, tt := range []struct {
		name    string
		list    []Outcome
		verdict string // "" for no comparison at all
		better  string
		than    []string
		why     []string // in Why
	}{
		{name: "no trial", list: armed("", 3, 1, 0)},
		{name: "0 finished", list: join(armed("claude-code", 0, 0, 2), armed("codex", 0, 0, 1)), verdict: VerdictNoise,
			why: []string{"within noise: fewer than 5 finished issues meant to merge in claude-code none finished meant to merge (2 issues); codex none finished meant to merge (1 issues)"}},
		{name: "1 issue", list: armed("codex", 1, 0, 0), verdict: VerdictNoise,
			why: []string{"only codex has issues yet"}},
		{name: "3 vs 3", list: join(armed("claude-code", 3, 0, 0), armed("codex", 0, 3, 0)), verdict: VerdictNoise,
			why: []string{"fewer than 5", "claude-code 3 of 3 merged (100%, 95% interval 44–100%)", "codex 0 of 3 merged (0%, 95% interval 0–56%)"}},
		{name: "30 vs 30, a clear difference", list: join(armed("claude-code", 25, 5, 2), armed("codex", 10, 20, 0)),
			verdict: VerdictBetter, better: "claude-code", than: []string{"codex"},
			why: []string{"claude-code merges more: claude-code 25 of 30 merged (83%, 95% interval 66–93%), against codex 10 of 30 merged (33%, 95% interval 19–51%)"}},
		{name: "30 vs 30, close", list: join(armed("claude-code", 16, 14, 0), armed("codex", 14, 16, 0)), verdict: VerdictNoise,
			why: []string{"within noise: the 95% intervals of the merge rates overlap: claude-code 16 of 30 merged (53%", "codex 14 of 30 merged (47%"}},
		{name: "three arms, one behind", list: join(armed("a", 28, 2, 0), armed("b", 27, 3, 0), armed("c/m", 5, 25, 0)),
			verdict: VerdictBetter, better: "a", than: []string{"c/m"}, why: []string{"a merges more", "against c/m 5 of 30"}},
		{name: "issues outside the trial left out", list: join(armed("", 0, 40, 0), armed("x", 3, 0, 0), armed("y", 3, 0, 0)),
			verdict: VerdictNoise, why: []string{"x 3 of 3", "y 3 of 3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := CompareTrial(tt.list)
			if tt.verdict == "" {
				if got != nil {
					t.Fatalf("a comparison of no trial: %+v", got)
				}
				return
			}
			if got == nil || got.Verdict != tt.verdict || got.Better != tt.better || !slices.Equal(got.Than, tt.than) {
				t.Fatalf("%+v, want %s %q over %q", got, tt.verdict, tt.better, tt.than)
			}
			for _, w := range tt.why {
				if !strings.Contains(got.Why, w) {
					t.Errorf("why %q lacks %q", got.Why, w)
				}
			}
			if _, err := json.Marshal(got); err != nil { // NaN or an infinity fails
				t.Errorf("json: %v", err)
			}
		})
	}
}

// Each arm has its finished, merged, rate with interval, median time to
// merge and dollars per merged change; nil where nothing is behind them.
func TestTrialArmFigures(t *testing.T) {
	c := CompareTrial(join(armed("claude-code", 3, 1, 1), armed("codex", 0, 2, 0)))
	if c == nil || len(c.Arms) != 2 {
		t.Fatalf("%+v", c)
	}
	a, b := c.Arms[0], c.Arms[1]
	if a.Arm != "claude-code" || a.Issues != 5 || a.Finished != 4 || a.MergeRate == nil || a.MergeRate.Count != 3 || a.MergeRate.Of != 4 {
		t.Errorf("claude-code: %+v", a)
	}
	if a.ToMerge == nil || a.ToMerge.Median != 2*time.Hour || a.USDPerMerged == nil || math.Abs(*a.USDPerMerged-2.5/3) > 1e-9 {
		t.Errorf("claude-code to merge %+v, usd %v", a.ToMerge, a.USDPerMerged)
	}
	if a.Interval == nil || a.Interval.Low <= 0 || a.Interval.High >= 1 || a.Interval.Low > 0.75 || a.Interval.High < 0.75 {
		t.Errorf("claude-code interval %+v around 75%%", a.Interval)
	}
	if b.Arm != "codex" || b.MergeRate == nil || b.MergeRate.Count != 0 || b.ToMerge != nil || b.USDPerMerged != nil || b.Interval == nil || b.Interval.Low != 0 {
		t.Errorf("codex: %+v", b)
	}
}

func TestWilson(t *testing.T) {
	for _, tt := range []struct {
		k, n      int
		low, high float64
	}{
		{0, 0, 0, 1},
		{0, -3, 0, 1},
		{0, 5, 0, 0.4345},
		{5, 5, 0.5655, 1},
		{7, 5, 0.5655, 1}, // more than n counts as n
		{25, 30, 0.6644, 0.9266},
		{10, 30, 0.1923, 0.5122},
		{500, 1000, 0.4691, 0.5309},
	} {
		iv := wilson(tt.k, tt.n)
		if math.IsNaN(iv.Low) || math.IsNaN(iv.High) || math.Abs(iv.Low-tt.low) > 5e-4 || math.Abs(iv.High-tt.high) > 5e-4 {
			t.Errorf("wilson(%d, %d) = %+v, want [%.4f, %.4f]", tt.k, tt.n, iv, tt.low, tt.high)
		}
	}
}

// Derive carries the arm the mailbox was given.
func TestDeriveCarriesTheTrialArm(t *testing.T) {
	mb := state.Mailbox{ID: "forgejo/alice/demo/issue/3", Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 3,
		Trial: &state.Trial{Arm: "codex/gpt-5", Adapter: "codex", Model: "gpt-5", Setting: "claude-code:1,codex/gpt-5:1"}}
	if o := Derive(mb, nil, nil, time.Time{}, 0); o.Trial != "codex/gpt-5" {
		t.Errorf("trial %q, want codex/gpt-5", o.Trial)
	}
	mb.Trial = nil
	if o := Derive(mb, nil, nil, time.Time{}, 0); o.Trial != "" {
		t.Errorf("trial %q outside a trial", o.Trial)
	}
}
