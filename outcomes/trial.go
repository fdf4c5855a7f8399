package outcomes

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/alchemic-studio/alfred/state"
)

// A project's agent trial (the AGENT_TRIAL setting) gives each new issue an
// arm, recorded in its mailbox (state.Trial) and carried by its outcome
// (Outcome.Trial). CompareTrial puts the arms side by side and says whether
// their merge rates differ by more than chance would: a rate over a few
// issues is not a ranking.

// trialZ is the normal quantile of a two-sided 95% interval.
const trialZ = 1.959963984540054

// The verdicts of a trial's comparison.
const (
	// VerdictNoise: no arm merges more than another by more than chance
	// would give, or some arm has too few finished issues to say.
	VerdictNoise = "within_noise"
	// VerdictBetter: an arm's merge rate is above another's, their 95%
	// intervals apart.
	VerdictBetter = "better"
)

// Interval is a 95% Wilson score interval of a rate, from 0 to 1.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// TrialArm is what one arm of a trial came to over its issues.
type TrialArm struct {
	Arm      string `json:"arm"`
	Issues   int    `json:"issues"`
	Finished int    `json:"finished"`
	// MergeRate is the merged issues over the finished ones meant to merge
	// (as Summary.MergeRate), Interval its 95% Wilson interval; both nil
	// when no issue of the arm finished meant to merge.
	MergeRate *Rate     `json:"merge_rate,omitempty"`
	Interval  *Interval `json:"interval,omitempty"`
	// ToMerge is the median (and 90th percentile) time from the assignment
	// to the merge; nil when none merged with that time known.
	ToMerge *Times `json:"to_merge,omitempty"`
	// USDPerMerged is the dollars of every issue of the arm per merged
	// change, a lower bound when Unpriced; nil when none merged.
	USDPerMerged *float64 `json:"usd_per_merged,omitempty"`
	Unpriced     bool     `json:"unpriced,omitempty"`
}

// Trial is the comparison of the arms of one project's trial: each arm's
// figures, by name, and the verdict between them with the counts behind it.
type Trial struct {
	Arms    []TrialArm `json:"arms"`
	Verdict string     `json:"verdict"`
	// Better is the arm that merges more, and Than the arms it beats, for
	// VerdictBetter; empty otherwise.
	Better string   `json:"better,omitempty"`
	Than   []string `json:"than,omitempty"`
	// Why says the verdict in one sentence, with the counts.
	Why string `json:"why"`
}

// armOf is the trial arm a mailbox was assigned; "" outside a trial.
func armOf(mb state.Mailbox) string {
	if mb.Trial == nil {
		return ""
	}
	return mb.Trial.Arm
}

// CompareTrial compares the arms of the outcomes of one project's trial;
// the outcomes of no arm (issues assigned outside a trial) are left out.
// Nil when no outcome has an arm. The verdict is VerdictNoise while an arm
// has fewer than FewFinished issues finished meant to merge, or when the
// 95% intervals of the best arm's merge rate and every other's overlap (a
// cautious test: overlapping intervals may still hide a real difference,
// separate ones do not come from chance but one time in twenty or less).
func CompareTrial(list []Outcome) *Trial {
	by := map[string][]Outcome{}
	for _, o := range list {
		if o.Trial != "" {
			by[o.Trial] = append(by[o.Trial], o)
		}
	}
	if len(by) == 0 {
		return nil
	}
	t := &Trial{Arms: make([]TrialArm, 0, len(by))}
	for arm, l := range by {
		t.Arms = append(t.Arms, trialArm(arm, l))
	}
	slices.SortFunc(t.Arms, func(a, b TrialArm) int { return cmp.Compare(a.Arm, b.Arm) })
	t.verdict()
	return t
}

// trialArm sums up the outcomes of one arm.
func trialArm(arm string, list []Outcome) TrialArm {
	s := Summarize(list)
	a := TrialArm{Arm: arm, Issues: s.Issues, Finished: s.Finished, MergeRate: s.MergeRate, ToMerge: s.ToMerge}
	if r := s.MergeRate; r != nil {
		iv := wilson(r.Count, r.Of)
		a.Interval = &iv
	}
	if p := s.PerMerged; p != nil {
		usd := p.AllUSD
		a.USDPerMerged, a.Unpriced = &usd, p.Unpriced
	}
	return a
}

// wilson is the 95% Wilson score interval of k successes out of n; the
// whole range [0, 1] when n is 0.
func wilson(k, n int) Interval {
	if n <= 0 {
		return Interval{Low: 0, High: 1}
	}
	k = min(max(k, 0), n)
	nf, p, z2 := float64(n), float64(k)/float64(n), trialZ*trialZ
	denom := 1 + z2/nf
	center := (p + z2/(2*nf)) / denom
	half := trialZ * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / denom
	return Interval{Low: max(0, center-half), High: min(1, center+half)}
}

// verdict says whether an arm merges more than others beyond noise.
func (t *Trial) verdict() {
	t.Verdict = VerdictNoise
	if len(t.Arms) < 2 {
		t.Why = fmt.Sprintf("only %s has issues yet: nothing to compare it with", t.Arms[0].Arm)
		return
	}
	var few []string
	for _, a := range t.Arms {
		if a.MergeRate == nil || a.MergeRate.Of < FewFinished {
			few = append(few, a.describe())
		}
	}
	if len(few) > 0 {
		t.Why = fmt.Sprintf("within noise: fewer than %d finished issues meant to merge in %s", FewFinished, strings.Join(few, "; "))
		return
	}
	best := t.Arms[0]
	for _, a := range t.Arms[1:] {
		if a.MergeRate.Value > best.MergeRate.Value {
			best = a
		}
	}
	var beaten []string
	for _, a := range t.Arms {
		if a.Arm != best.Arm && best.Interval.Low > a.Interval.High {
			t.Than = append(t.Than, a.Arm)
			beaten = append(beaten, a.describe())
		}
	}
	if len(t.Than) == 0 {
		all := make([]string, len(t.Arms))
		for i, a := range t.Arms {
			all[i] = a.describe()
		}
		t.Why = "within noise: the 95% intervals of the merge rates overlap: " + strings.Join(all, "; ")
		return
	}
	t.Verdict, t.Better = VerdictBetter, best.Arm
	t.Why = fmt.Sprintf("%s merges more: %s, against %s", best.Arm, best.describe(), strings.Join(beaten, "; "))
}

// describe says an arm's merge rate with its counts and interval:
// "codex 2 of 3 merged (67%, 95% interval 21–94%)".
func (a TrialArm) describe() string {
	r := a.MergeRate
	if r == nil {
		return fmt.Sprintf("%s none finished meant to merge (%d issues)", a.Arm, a.Issues)
	}
	return fmt.Sprintf("%s %d of %d merged (%.0f%%, 95%% interval %.0f–%.0f%%)", a.Arm, r.Count, r.Of,
		100*r.Value, 100*a.Interval.Low, 100*a.Interval.High)
}
