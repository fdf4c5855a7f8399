package charts_test

import (
	"fmt"
	"strings"

	"github.com/alchemic-studio/alfred/views/charts"
)

// A page puts the chart in its template data as template.HTML:
// {{.RunsChart}} then writes the <svg> as it is.
func ExampleStackedBars() {
	svg := charts.StackedBars(charts.Chart{
		Title:  "Runs per day by outcome",
		Labels: []string{"Mon", "Tue"},
		Unit:   "runs",
		Series: []charts.Series{
			{Name: "succeeded", Values: []float64{3, 5}},
			{Name: "failed", Values: []float64{1, 0}},
		},
	})
	fmt.Println(strings.Count(string(svg), `<rect class="bar"`))
	// Output: 3
}

// A merge rate per agent: each bar says the counts behind it, and a rate
// over too few issues is hatched.
func ExampleHorizontalBars() {
	svg := charts.HorizontalBars(charts.Bars{
		Title: "Merge rate by agent",
		Scale: charts.Ratio,
		Empty: "no finished issue yet",
		Rows: []charts.Row{
			{Label: "claude-code", Value: 0.8, Text: "80% (8 of 10)"},
			{Label: "codex", Value: 0.5, Text: "50% (1 of 2, few)", Few: true},
		},
	})
	fmt.Println(strings.Count(string(svg), `<rect class="bar"`), strings.Count(string(svg), `<rect class="bar few"`))
	// Output: 1 1
}
