package views

import (
	"fmt"

	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/state"
)

// projectTrial is the comparison of the arms of one project's agent trial
// (AGENT_TRIAL, outcomes.CompareTrial): the "trial" list of /api/outcomes,
// and a section of /outcomes (templates/outcomes_trial.html).
type projectTrial struct {
	Forge   string `json:"forge"`
	Project string `json:"project"` // owner/name
	outcomes.Trial

	// the page
	URL  string     `json:"-"`
	Rows []trialRow `json:"-"`
}

// trialRow is one arm on the page, its figures written out ("—" for none).
type trialRow struct {
	Arm       string
	Issues    int
	Finished  int
	MergeRate string
	Interval  string
	ToMerge   string
	CostPer   string
}

// withTrial adds to list the comparison of project p's trial when some of
// its issues (outs) were given an arm.
func withTrial(list []projectTrial, p state.ProjectRef, outs []outcomes.Outcome) []projectTrial {
	t := outcomes.CompareTrial(outs)
	if t == nil {
		return list
	}
	pt := projectTrial{Forge: p.Forge, Project: p.Owner + "/" + p.Project, Trial: *t, URL: projectURL(p.Forge, p.Owner, p.Project)}
	for _, a := range t.Arms {
		pt.Rows = append(pt.Rows, trialRowOf(a))
	}
	return append(list, pt)
}

func trialRowOf(a outcomes.TrialArm) trialRow {
	row := trialRow{Arm: a.Arm, Issues: a.Issues, Finished: a.Finished, MergeRate: "—", Interval: "—", ToMerge: "—", CostPer: "—"}
	if r := a.MergeRate; r != nil {
		row.MergeRate = fmt.Sprintf("%.0f%% (%d of %d)", 100*r.Value, r.Count, r.Of)
	}
	if iv := a.Interval; iv != nil {
		row.Interval = fmt.Sprintf("%.0f–%.0f%%", 100*iv.Low, 100*iv.High)
	}
	if a.ToMerge != nil {
		row.ToMerge = fmt.Sprintf("%s (n=%d)", span(a.ToMerge.Median), a.ToMerge.N)
	}
	if a.USDPerMerged != nil {
		row.CostPer = fmt.Sprintf("$%.2f", *a.USDPerMerged)
		if a.Unpriced {
			row.CostPer = "≥ " + row.CostPer
		}
	}
	return row
}
