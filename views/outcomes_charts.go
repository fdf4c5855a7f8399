package views

import (
	"fmt"
	"html/template"

	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/views/charts"
)

// outcomeChart is one chart of the outcomes page.
type outcomeChart struct {
	Name  string // for tests: merge-rate, to-pull-request, to-merge, cost, tokens
	Title string
	SVG   template.HTML
}

// timesKey and rateKey explain the marks of the charts.
var (
	timesKey = fmt.Sprintf("bar: median · whisker: 90th percentile · hatched: fewer than %d issues", outcomes.FewFinished)
	rateKey  = fmt.Sprintf("hatched: fewer than %d finished issues, too few to compare", outcomes.FewFinished)
)

// outcomeCharts draws a summary's figures by agent: the merge rate (each
// adapter, then each of its models), the times to the pull request and to
// the merge, the cost and tokens per merged change (by adapter).
func outcomeCharts(s outcomes.Summary) []outcomeChart {
	noMerge := "no merged change yet"
	if s.Note != "" {
		noMerge = s.Note
	}
	draw := func(name string, c charts.Bars) outcomeChart {
		return outcomeChart{Name: name, Title: c.Title, SVG: charts.HorizontalBars(c)}
	}
	return []outcomeChart{
		draw("merge-rate", charts.Bars{Title: "Merge rate by agent", Scale: charts.Ratio, Rows: mergeRateRows(s),
			Key: rateKey, Empty: outcomes.NoFinished}),
		draw("to-pull-request", charts.Bars{Title: "Time to pull request by adapter", Scale: charts.Seconds, Key: timesKey,
			Rows: timesRows(s, func(s outcomes.Summary) *outcomes.Times { return s.ToPullRequest }, "no pull request yet"), Empty: "no pull request yet"}),
		draw("to-merge", charts.Bars{Title: "Time to merge by adapter", Scale: charts.Seconds, Key: timesKey,
			Rows: timesRows(s, func(s outcomes.Summary) *outcomes.Times { return s.ToMerge }, "none merged yet"), Empty: noMerge}),
		draw("cost", charts.Bars{Title: "Cost per merged change by adapter", Unit: "USD", Rows: perMergedRows(s, costText), Empty: noMerge,
			Key: "the merged issues' own cost; ≥: some run reported no cost"}),
		draw("tokens", charts.Bars{Title: "Tokens per merged change by adapter", Unit: "tokens", Rows: perMergedRows(s, tokensText), Empty: noMerge}),
	}
}

// mergeRateRows is a row per adapter, each followed by a row per model.
func mergeRateRows(s outcomes.Summary) []charts.Row {
	var rows []charts.Row
	for _, a := range s.ByAdapter {
		rows = append(rows, rateRow(adapterName(a.Adapter), false, a.MergeRate))
		for _, g := range s.ByAgent {
			if g.Adapter == a.Adapter {
				rows = append(rows, rateRow(agentName(g.Agent), true, g.MergeRate))
			}
		}
	}
	return rows
}

func rateRow(label string, sub bool, r *outcomes.Rate) charts.Row {
	if r == nil {
		return charts.Row{Label: label, Sub: sub, Missing: true, Text: "none finished to merge yet"}
	}
	return charts.Row{Label: label, Sub: sub, Value: r.Value, Text: r.String(), Few: r.Few}
}

// agentName is "adapter · model", the CLI's default model said so.
func agentName(a outcomes.Agent) string {
	model := a.Model
	if model == "" {
		model = "default model"
	}
	return adapterName(a.Adapter) + " · " + model
}

// timesRows is a row per adapter: the median as the bar, the 90th
// percentile as the whisker, hatched under outcomes.FewFinished issues.
func timesRows(s outcomes.Summary, of func(outcomes.Summary) *outcomes.Times, none string) []charts.Row {
	rows := make([]charts.Row, 0, len(s.ByAdapter))
	for _, a := range s.ByAdapter {
		t := of(a.Summary)
		if t == nil {
			rows = append(rows, charts.Row{Label: adapterName(a.Adapter), Missing: true, Text: none})
			continue
		}
		rows = append(rows, charts.Row{Label: adapterName(a.Adapter), Value: t.Median.Seconds(), Upper: t.P90.Seconds(),
			Text: timesText(t), Few: t.N < outcomes.FewFinished})
	}
	return rows
}

// perMergedRows is a row per adapter of what one merged change took, as
// value and text say.
func perMergedRows(s outcomes.Summary, figure func(*outcomes.PerMerged) (float64, string)) []charts.Row {
	rows := make([]charts.Row, 0, len(s.ByAdapter))
	for _, a := range s.ByAdapter {
		p := a.PerMerged
		if p == nil {
			rows = append(rows, charts.Row{Label: adapterName(a.Adapter), Missing: true, Text: "none merged yet"})
			continue
		}
		v, text := figure(p)
		rows = append(rows, charts.Row{Label: adapterName(a.Adapter), Value: v, Text: text, Few: p.Merged < outcomes.FewFinished})
	}
	return rows
}

func costText(p *outcomes.PerMerged) (float64, string) {
	text := fmt.Sprintf("$%.2f (%s)", p.USD, mergedCount(p.Merged))
	if p.Unpriced {
		text = "≥ " + text
	}
	return p.USD, text
}

func tokensText(p *outcomes.PerMerged) (float64, string) {
	return p.Tokens, fmt.Sprintf("%.0f tokens (%s)", p.Tokens, mergedCount(p.Merged))
}

func mergedCount(n int) string {
	if n == 1 {
		return "1 merged"
	}
	return fmt.Sprintf("%d merged", n)
}
