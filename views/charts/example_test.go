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
