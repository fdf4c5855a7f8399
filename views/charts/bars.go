package charts

import (
	"html/template"
	"math"
)

// Scale says how the values of a Bars chart read, and so its axis.
type Scale int

// The scales.
const (
	// Number: values in Bars.Unit, the axis at round values from 0.
	Number Scale = iota
	// Ratio: values from 0 to 1, the axis from 0% to 100%.
	Ratio
	// Seconds: durations in seconds, the axis at round durations (15m, 1h, 2d).
	Seconds
)

// Row is one bar of a Bars chart.
type Row struct {
	Label string
	// Value is the bar's length. Upper, when above Value, draws a whisker
	// from the bar's end to it: a 90th percentile beside a median.
	Value, Upper float64
	// Text is written after the bar: the figure and the counts behind it
	// ("67% · 2 of 3"). Without it the bar's value is written.
	Text string
	// Few says the figure rests on too few cases to compare with another:
	// the bar is hatched, with a dashed outline, and its tooltip and the
	// chart's description say "few".
	Few bool
	// Missing says there is no figure: no bar is drawn and Text says why.
	// A value that is NaN, infinite or below zero is missing too.
	Missing bool
	// Sub is a breakdown of the row above: its label is indented and its
	// bar lighter.
	Sub bool
}

// Bars is what HorizontalBars draws: one horizontal bar per row, with its
// label before it and its text after it.
type Bars struct {
	Title string
	// Unit names what a Number chart counts ("USD", "tokens").
	Unit  string
	Scale Scale
	Rows  []Row
	// Key explains the marks, under the plot ("bar: median · whisker:
	// 90th percentile"); empty: none.
	Key string
	// Empty is said instead of the plot when no row has a figure; "no
	// data" when empty.
	Empty string
}

// HorizontalBars renders c as an inline <svg role="img"> with a <title>
// and a <desc> that says every row's label and text: a bar per row, its
// label before it and its figures written after it, an axis of round
// values under the plot. A chart with no figure at all says c.Empty and
// draws no axis, no bar.
func HorizontalBars(c Bars) template.HTML { return template.HTML(renderBars(c)) }

// figure returns row r's value and upper end on scale s, and whether it
// has a figure: a missing, NaN, infinite or negative value has none; an
// upper end that is not above the value is none (0); a ratio is at most 1.
func figure(r Row, s Scale) (v, upper float64, ok bool) {
	if r.Missing || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) || r.Value < 0 {
		return 0, 0, false
	}
	limit := 1e300
	if s == Ratio {
		limit = 1
	}
	v = math.Min(r.Value, limit)
	if u := r.Upper; !math.IsNaN(u) && !math.IsInf(u, 0) && u > v {
		upper = math.Min(u, limit)
	}
	return v, upper, true
}
