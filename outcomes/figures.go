package outcomes

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// All stands for every adapter or every model in Figures: the row of an
// adapter over all its models, or of a project over all its agents.
const All = "*"

// Figures is the summary of one group of issues as plain numbers, for an
// exporter (the metrics' gauges): the issues of a project (or of the
// projects pooled under Project ""), of an agent (Adapter and Model; All
// for every one). A figure with nothing behind it has its count at 0 and
// its value at 0: the exporter leaves it out.
type Figures struct {
	Forge, Project, Adapter, Model string
	// Issues counts every issue; Ends the finished ones by end, each
	// finished end named (at 0 when none ended so).
	Issues int
	Ends   map[string]int
	// MergeRate is over MergeRateOf finished issues meant to merge.
	MergeRateOf int
	MergeRate   float64
	// The medians and 90th percentiles of the times to the pull request and
	// to the merge, in seconds, over ToPullRequestN and ToMergeN issues.
	ToPullRequestN                        int
	ToPullRequestMedian, ToPullRequestP90 float64
	ToMergeN                              int
	ToMergeMedian, ToMergeP90             float64
	// Merged counts the merged changes; USDPerMerged and TokensPerMerged
	// are the merged issues' own spend per merged change, USD a lower
	// bound when Unpriced.
	Merged                        int
	USDPerMerged, TokensPerMerged float64
	Unpriced                      bool
}

// Store is what FiguresOf reads: the projects and their records.
type Store interface {
	Records
	Projects() []state.ProjectRef
}

// FiguresOf loads every issue of every project at now and sums them up by
// project, then by adapter and model, by adapter (Model All) and overall
// (Adapter and Model All). A project public does not accept is pooled with
// the other such projects of its forge under Project "": its name and its
// own figures are not told. It returns what could not be read, as Load.
func FiguresOf(ctx context.Context, st Store, public func(state.ProjectRef) bool, now time.Time) ([]Figures, []string) {
	type key struct{ forge, project string }
	lists := map[key][]Outcome{}
	var problems []string
	for _, p := range st.Projects() {
		list, ps := Load(ctx, st, p, Filter{Now: now, AbandonAfter: DefaultAbandonAfter})
		problems = append(problems, ps...)
		k := key{forge: p.Forge}
		if public != nil && public(p) {
			k.project = p.Owner + "/" + p.Project
		}
		lists[k] = append(lists[k], list...)
	}
	var out []Figures
	for k, list := range lists {
		s := Summarize(list)
		out = append(out, figuresOf(k.forge, k.project, Agent{Adapter: All, Model: All}, s))
		for _, g := range s.ByAdapter {
			out = append(out, figuresOf(k.forge, k.project, Agent{Adapter: g.Adapter, Model: All}, g.Summary))
		}
		for _, g := range s.ByAgent {
			out = append(out, figuresOf(k.forge, k.project, g.Agent, g.Summary))
		}
	}
	slices.SortFunc(out, func(a, b Figures) int {
		return cmp.Or(cmp.Compare(a.Forge, b.Forge), cmp.Compare(a.Project, b.Project), cmp.Compare(a.Adapter, b.Adapter), cmp.Compare(a.Model, b.Model))
	})
	return out, problems
}

// figuresOf writes summary s of one group as Figures.
func figuresOf(forge, project string, a Agent, s Summary) Figures {
	f := Figures{Forge: forge, Project: project, Adapter: a.Adapter, Model: a.Model, Issues: s.Issues, Ends: map[string]int{}}
	for _, e := range []End{EndMerged, EndClosed, EndDelivered, EndUnrecorded} {
		f.Ends[string(e)] = s.Ends[e]
	}
	if r := s.MergeRate; r != nil {
		f.MergeRateOf, f.MergeRate = r.Of, r.Value
	}
	if t := s.ToPullRequest; t != nil {
		f.ToPullRequestN, f.ToPullRequestMedian, f.ToPullRequestP90 = t.N, t.Median.Seconds(), t.P90.Seconds()
	}
	if t := s.ToMerge; t != nil {
		f.ToMergeN, f.ToMergeMedian, f.ToMergeP90 = t.N, t.Median.Seconds(), t.P90.Seconds()
	}
	if p := s.PerMerged; p != nil {
		f.Merged, f.USDPerMerged, f.TokensPerMerged, f.Unpriced = p.Merged, p.USD, p.Tokens, p.Unpriced
	}
	return f
}
