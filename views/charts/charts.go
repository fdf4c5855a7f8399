// Package charts owns the small charts of Alfred's pages: stacked bars over
// days (StackedBars: runs, cost, tokens per day) and horizontal bars with
// their figures written beside them (HorizontalBars: a rate, a median with
// its 90th percentile as a whisker, a cost per change, a bar hatched when it
// rests on few cases). They are rendered on the server as inline SVG: no
// JavaScript and no external assets, so they work on a network with no
// internet. The output is deterministic (the same Chart gives the same
// bytes), every text from the records is escaped, and the SVG is sized by
// its viewBox so that it scales to the width of its container.
package charts

import (
	"html/template"
	"math"
	"strings"
)

// Series is one stacked part of every bar: one value per label of the Chart.
// Missing values count as 0; negative, NaN and infinite values too.
type Series struct {
	Name   string
	Values []float64
}

// Chart is what StackedBars draws: one bar per label, each bar stacked from
// the series' values for that label, in the order of Series from the bottom.
// Unit names what is counted, e.g. "runs", "tokens", "USD".
type Chart struct {
	Title  string
	Labels []string
	Series []Series
	Unit   string
}

// Palette is the fixed order of the series' colours: the Okabe-Ito colours
// (distinguishable with the common colour-vision deficiencies) with the
// yellow, unreadable on white, replaced by a brown, then a grey. A chart with
// more series than colours reuses them in order.
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#8C6D31", "#555555"}

// StackedBars renders c as an inline <svg role="img"> labelled by a <title>
// holding c.Title: one stacked bar per label, y-axis ticks at round values, a
// legend, and a <title> on every bar segment (shown on hover) with its label,
// series and value. An empty or all-zero chart says "no data".
func StackedBars(c Chart) template.HTML { return template.HTML(render(c)) }

// clean makes s safe to put in the SVG's text: valid UTF-8 with none of the
// characters XML forbids, then escaped for HTML and XML alike.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case r < 0x20, r >= 0x7F && r <= 0x9F, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return '\uFFFD'
		}
		return r
	}, s)
	return template.HTMLEscapeString(s)
}

// value returns the i-th value of s, 0 when missing or unusable.
func value(s Series, i int) float64 {
	if i >= len(s.Values) {
		return 0
	}
	v := s.Values[i]
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0
	}
	// Capped so that the sum of a bar stays finite.
	return math.Min(v, 1e300)
}
