package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/outcomes"
)

// projectOutTab is one project's table on the outcomes page.
type projectOutTab struct {
	Forge, Project, URL string
	Note                string
	Rows                []outcomeRow
	Charts              []outcomeChart
}

// outcomeRow is one line of an outcomes table, its figures written out: a
// figure with nothing behind it is "—".
type outcomeRow struct {
	Group      string // "all", an adapter, or an adapter and model
	Sub        bool   // a breakdown row
	Issues     int
	Finished   int
	Merged     int
	MergeRate  string
	Few        bool
	ToPR       string
	ToMerge    string
	Rounds     string
	TokensPer  string
	CostPer    string
	FailedRuns int
	Stalled    int
	Note       string
}

// outcomeRows is the row of a summary, then those of its adapters, then
// those of its adapters and models.
func outcomeRows(s outcomes.Summary) []outcomeRow {
	rows := []outcomeRow{outcomeRowOf("all", false, s)}
	for _, g := range s.ByAdapter {
		rows = append(rows, outcomeRowOf(adapterName(g.Adapter), true, g.Summary))
	}
	for _, g := range s.ByAgent {
		model := g.Model
		if model == "" {
			model = "default model"
		}
		rows = append(rows, outcomeRowOf(adapterName(g.Adapter)+" · "+model, true, g.Summary))
	}
	return rows
}

func adapterName(a string) string {
	if a == "" {
		return "(no run)"
	}
	return a
}

func outcomeRowOf(group string, sub bool, s outcomes.Summary) outcomeRow {
	row := outcomeRow{Group: group, Sub: sub, Issues: s.Issues, Finished: s.Finished, Merged: s.Ends[outcomes.EndMerged],
		MergeRate: "—", ToPR: timesText(s.ToPullRequest), ToMerge: timesText(s.ToMerge), Rounds: "—", TokensPer: "—", CostPer: "—",
		FailedRuns: s.FailedRuns, Stalled: s.StalledRuns, Note: s.Note}
	if r := s.MergeRate; r != nil {
		row.MergeRate, row.Few = r.String(), r.Few
	}
	if p := s.PerMerged; p != nil {
		row.Rounds = fmt.Sprintf("%.1f CI · %.1f review · %.1f conflict", p.CIFix, p.ReviewFix, p.Conflict)
		row.TokensPer = fmt.Sprintf("%.0f (all issues: %.0f)", p.Tokens, p.AllTokens)
		row.CostPer = fmt.Sprintf("$%.2f (all issues: $%.2f)", p.USD, p.AllUSD)
		if p.Unpriced {
			row.CostPer = "≥ " + row.CostPer
		}
	}
	return row
}

// timesText writes a median and p90 as "2h · p90 5h (n=3)".
func timesText(t *outcomes.Times) string {
	if t == nil {
		return "—"
	}
	return fmt.Sprintf("%s · p90 %s (n=%d)", span(t.Median), span(t.P90), t.N)
}

// span writes a duration to the second under a minute, to the minute
// under two days, else in days.
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute).Minutes()))
	case d < 48*time.Hour:
		m := int(d.Round(time.Minute).Minutes())
		if m%60 == 0 {
			return fmt.Sprintf("%dh", m/60)
		}
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	}
	return fmt.Sprintf("%.1fd", d.Hours()/24)
}

// ownerOf and nameOf split owner/name at its last slash.
func ownerOf(full string) string {
	if i := strings.LastIndex(full, "/"); i >= 0 {
		return full[:i]
	}
	return ""
}

func nameOf(full string) string { return full[strings.LastIndex(full, "/")+1:] }
