package outcomes

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// FewFinished is the number of finished issues under which a merge rate is
// flagged as resting on too few (Rate.Few): a rate over 3 issues says so.
const FewFinished = 5

// NoFinished is what a summary of no finished issue says instead of its
// figures.
const NoFinished = "no finished issue yet"

// Summary is what the work on a set of issues came to: how many ended
// each way, the merge rate with the counts behind it, the times to the
// merge request and to the merge, and per merged change the rounds, tokens
// and dollars; the runs that failed or stalled. A figure with nothing
// behind it is nil, never a zero or NaN.
//
// ByAdapter and ByAgent break the same figures down by the issue's agent:
// the adapter and model of its development phase (the first agent it
// used), or of its first phase when it had no development run; an issue
// that ran nothing is under the adapter "" (Agent.Adapter empty).
type Summary struct {
	// Issues counts the outcomes summarized; Finished those whose end is
	// final (End.Finished); Ends every end met, finished or not.
	Issues   int         `json:"issues"`
	Finished int         `json:"finished"`
	Ends     map[End]int `json:"ends"`
	// Note is NoFinished when no issue finished, else empty.
	Note string `json:"note,omitempty"`
	// MergeRate is the merged issues over the finished issues that were
	// meant to merge (merged, closed unmerged, done with no record of how;
	// not the delivered analyses and answers, whose flow has no merge
	// request); nil when there is none.
	MergeRate *Rate `json:"merge_rate,omitempty"`
	// ToPullRequest is the time from the assignment to the merge request,
	// over the issues that reached it; ToMerge the time to the end of the
	// merged ones. Nil when no issue has the time.
	ToPullRequest *Times `json:"to_pull_request,omitempty"`
	ToMerge       *Times `json:"to_merge,omitempty"`
	// PerMerged is the rounds, tokens and dollars per merged change; nil
	// when none merged.
	PerMerged *PerMerged `json:"per_merged,omitempty"`
	// Runs counts the runs of every issue, FailedRuns those that failed or
	// timed out, StalledRuns those stopped because their CLI stalled.
	Runs        int   `json:"runs"`
	FailedRuns  int   `json:"failed_runs"`
	StalledRuns int   `json:"stalled_runs"`
	Spend       Spend `json:"spend"`

	ByAdapter []Group `json:"by_adapter,omitempty"`
	ByAgent   []Group `json:"by_agent,omitempty"`
}

// Group is the summary of the issues of one adapter (Model empty in
// Summary.ByAdapter) or one adapter and model (Summary.ByAgent, Model ""
// being the CLI's default); its own Group lists are empty.
type Group struct {
	Agent
	Summary
}

// Rate is Count out of Of, and their quotient; Few says Of is under
// FewFinished, too few for the rate to compare with another.
type Rate struct {
	Count int     `json:"count"`
	Of    int     `json:"of"`
	Value float64 `json:"value"`
	Few   bool    `json:"few,omitempty"`
}

// String writes the rate as "67% (2 of 3, few)".
func (r Rate) String() string {
	s := fmt.Sprintf("%.0f%% (%d of %d", 100*r.Value, r.Count, r.Of)
	if r.Few {
		s += ", few"
	}
	return s + ")"
}

// Times is the median and the 90th percentile of N durations. The median
// of an even number is the mean of the two middle values; the percentile
// is the nearest rank (the smallest value at or above 90% of them: the
// largest one when N < 10).
type Times struct {
	N      int           `json:"n"`
	Median time.Duration `json:"median"`
	P90    time.Duration `json:"p90"`
}

// PerMerged is what a merged change took on average, over Merged changes:
// the rounds and the spend of the merged issues themselves, and the spend
// of every issue summarized (the failed ones too) per merged change.
type PerMerged struct {
	Merged    int     `json:"merged"`
	CIFix     float64 `json:"ci_fix_rounds"`
	ReviewFix float64 `json:"review_fix_rounds"`
	Conflict  float64 `json:"conflict_rounds"`
	Tokens    float64 `json:"tokens"`
	USD       float64 `json:"usd"`
	AllTokens float64 `json:"all_tokens"`
	AllUSD    float64 `json:"all_usd"`
	// Unpriced says some run used tokens with no dollar figure: the
	// dollars are then lower bounds.
	Unpriced bool `json:"unpriced,omitempty"`
}

// Summarize sums up the outcomes, with their breakdown by adapter and by
// adapter and model.
func Summarize(list []Outcome) Summary {
	s := summarize(list)
	s.ByAdapter = groups(list, func(o Outcome) Agent { return Agent{Adapter: AgentOf(o).Adapter} })
	s.ByAgent = groups(list, AgentOf)
	return s
}

// AgentOf is the agent an issue is counted under: the first agent of its
// development phase, else of its first phase; none when it ran nothing.
func AgentOf(o Outcome) Agent {
	for _, p := range o.Phases {
		if p.Phase == phaseDevelopment && len(p.Agents) > 0 {
			return p.Agents[0]
		}
	}
	for _, p := range o.Phases {
		if len(p.Agents) > 0 {
			return p.Agents[0]
		}
	}
	return Agent{}
}

// groups summarizes the outcomes of each agent key gives, by adapter then
// model.
func groups(list []Outcome, key func(Outcome) Agent) []Group {
	by := map[Agent][]Outcome{}
	for _, o := range list {
		k := key(o)
		by[k] = append(by[k], o)
	}
	out := make([]Group, 0, len(by))
	for a, l := range by {
		out = append(out, Group{Agent: a, Summary: summarize(l)})
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(a.Adapter, b.Adapter), cmp.Compare(a.Model, b.Model))
	})
	return out
}

// summarize is Summarize without the groups.
func summarize(list []Outcome) Summary {
	s := Summary{Issues: len(list), Ends: map[End]int{}}
	var toPR, toMerge []time.Duration
	var merged []Outcome
	meant := 0
	for _, o := range list {
		s.Ends[o.End]++
		if o.End.Finished() {
			s.Finished++
		}
		if o.End.Finished() && o.End != EndDelivered {
			meant++
		}
		s.Runs += o.Runs
		s.FailedRuns += o.FailedRuns
		s.StalledRuns += o.StalledRuns
		s.Spend = s.Spend.Add(o.Spend)
		if o.PullRequest.After != nil {
			toPR = append(toPR, *o.PullRequest.After)
		}
		if o.End == EndMerged {
			merged = append(merged, o)
			if o.Finished.After != nil {
				toMerge = append(toMerge, *o.Finished.After)
			}
		}
	}
	if s.Finished == 0 {
		s.Note = NoFinished
	}
	if meant > 0 {
		s.MergeRate = &Rate{Count: len(merged), Of: meant, Value: float64(len(merged)) / float64(meant), Few: meant < FewFinished}
	}
	s.ToPullRequest = timesOf(toPR)
	s.ToMerge = timesOf(toMerge)
	s.PerMerged = perMerged(merged, s.Spend)
	return s
}

// timesOf is the median and 90th percentile of ds; nil when empty.
func timesOf(ds []time.Duration) *Times {
	n := len(ds)
	if n == 0 {
		return nil
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		a, b := sorted[n/2-1], sorted[n/2]
		median = a + (b-a)/2 // no overflow, unlike (a+b)/2
	}
	rank := (9*n + 9) / 10 // ceil(0.9 n), 1-based
	return &Times{N: n, Median: median, P90: sorted[rank-1]}
}

// perMerged is the rounds and spend per merged change, all being the spend
// of every issue summarized; nil when merged is empty.
func perMerged(merged []Outcome, all Spend) *PerMerged {
	if len(merged) == 0 {
		return nil
	}
	var r Rounds
	var sp Spend
	for _, o := range merged {
		r.CIFix += o.Rounds.CIFix
		r.ReviewFix += o.Rounds.ReviewFix
		r.Conflict += o.Rounds.Conflict
		sp = sp.Add(o.Spend)
	}
	n := float64(len(merged))
	return &PerMerged{
		Merged: len(merged),
		CIFix:  float64(r.CIFix) / n, ReviewFix: float64(r.ReviewFix) / n, Conflict: float64(r.Conflict) / n,
		Tokens: float64(sp.Tokens()) / n, USD: sp.USD / n,
		AllTokens: float64(all.Tokens()) / n, AllUSD: all.USD / n,
		Unpriced: !all.Priced(),
	}
}

// DefaultAbandonAfter is how long an unfinished issue may go without
// activity before it counts as abandoned, while no setting says otherwise
// (there is none yet): 30 days.
const DefaultAbandonAfter = 30 * 24 * time.Hour
