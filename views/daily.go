package views

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/views/charts"
)

// chartDays is how many days the charts cover, today included.
const chartDays = 30

// runOutcomes orders the run statuses of the charts' stacks.
var runOutcomes = []state.RunStatus{state.RunSucceeded, state.RunFailed, state.RunTimeout, state.RunCanceled, state.RunRunning, state.RunQueued}

// chartView is one chart of a page and the table of its numbers beside it.
type chartView struct {
	Name  string
	Title string
	SVG   template.HTML
	Cols  []string   // the table's columns after the day
	Rows  [][]string // one per day: the day, then a value per column
}

// charts reads the last chartDays days of f and draws runs per day by
// outcome, tokens per day and cost per day.
func (d Deps) charts(f state.RunFilter) []chartView {
	now := d.now()
	days := d.Records.Daily(f, now.AddDate(0, 0, 1-chartDays), now)
	labels := make([]string, len(days))
	for i, t := range days {
		labels[i] = strings.TrimPrefix(t.Day[min(4, len(t.Day)):], "-") // MM-DD: the table says the year
	}
	return []chartView{
		chartOf("runs", charts.Chart{Title: "Runs per day by outcome", Labels: labels, Series: runSeries(days), Unit: "runs"}, days, "%.0f"),
		chartOf("tokens", charts.Chart{Title: "Tokens per day", Labels: labels, Unit: "tokens", Series: []charts.Series{
			{Name: "input", Values: perDay(days, func(t state.DayTotal) float64 { return float64(t.InputTokens) })},
			{Name: "output", Values: perDay(days, func(t state.DayTotal) float64 { return float64(t.OutputTokens) })},
		}}, days, "%.0f"),
		chartOf("cost", charts.Chart{Title: "Cost per day", Labels: labels, Unit: "USD", Series: []charts.Series{
			{Name: "cost", Values: perDay(days, func(t state.DayTotal) float64 { return t.CostUSD })},
		}}, days, "$%.4f"),
	}
}

// runSeries is one series per run status seen in days, in runOutcomes'
// order (an unknown status last).
func runSeries(days []state.DayTotal) []charts.Series {
	var names []string
	for _, t := range days {
		for s, n := range t.Runs {
			if n > 0 && !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
	}
	rank := func(s string) int {
		if i := slices.Index(runOutcomes, state.RunStatus(s)); i >= 0 {
			return i
		}
		return len(runOutcomes)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]charts.Series, len(names))
	for i, name := range names {
		out[i] = charts.Series{Name: name, Values: perDay(days, func(t state.DayTotal) float64 { return float64(t.Runs[name]) })}
	}
	return out
}

func perDay(days []state.DayTotal, f func(state.DayTotal) float64) []float64 {
	out := make([]float64, len(days))
	for i, t := range days {
		out[i] = f(t)
	}
	return out
}

// chartOf draws c and writes its numbers as a table, format being the
// cells' fmt verb.
func chartOf(name string, c charts.Chart, days []state.DayTotal, format string) chartView {
	v := chartView{Name: name, Title: c.Title, SVG: charts.StackedBars(c)}
	for _, s := range c.Series {
		v.Cols = append(v.Cols, s.Name)
	}
	for i, t := range days {
		row := []string{t.Day}
		for _, s := range c.Series {
			row = append(row, fmt.Sprintf(format, s.Values[i]))
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}
