package charts

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// The layout of HorizontalBars, in viewBox units.
const (
	rowH      = 24.0
	barH      = 14.0
	barsTop   = 24.0  // room for the unit
	labelMax  = 190.0 // widest label column
	textMax   = 210.0 // widest room for the texts after the bars
	subIndent = 12.0
	emptyH    = 40.0
)

// barsLayout is where a Bars chart's parts go.
type barsLayout struct {
	id           string
	x0, x1       float64 // the plot's left and right
	top          float64 // the first row's top
	baseline     float64 // the axis's y
	labelChars   int
	scale        float64 // viewBox units per unit of value
	topValue     float64
	step         float64
	div          float64 // tick labels' divisor and suffix (Number)
	suffix       string
	decimals     int
	hasFew, none bool
}

// renderBars draws c as the SVG of HorizontalBars.
func renderBars(c Bars) string {
	l := layOut(c)
	var b strings.Builder
	height := l.baseline + 24
	if c.Key != "" {
		height += 18
	}
	if l.none {
		height = barsTop + emptyH
	}
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart bars" role="img" viewBox="0 0 ` + num(width) + " " + num(height) +
		`" width="100%" style="max-width:100%;height:auto" font-family="system-ui,sans-serif" font-size="11" aria-labelledby="` +
		l.id + `-title" aria-describedby="` + l.id + `-desc">`)
	b.WriteString(`<title id="` + l.id + `-title">` + clean(c.Title) + `</title>`)
	b.WriteString(`<desc id="` + l.id + `-desc">` + clean(describeBars(c)) + `</desc>`)
	if c.Unit != "" && c.Scale == Number {
		b.WriteString(`<text x="8" y="14" fill="currentColor">` + clean(c.Unit) + `</text>`)
	}
	if l.none {
		empty := c.Empty
		if empty == "" {
			empty = "no data"
		}
		b.WriteString(`<text class="nodata" x="` + num(width/2) + `" y="` + num(barsTop+emptyH/2) +
			`" text-anchor="middle" fill="currentColor" opacity="0.7">` + clean(empty) + `</text></svg>`)
		return b.String()
	}
	if l.hasFew {
		b.WriteString(`<defs><pattern id="` + l.id + `-few" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">` +
			`<rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="` + colour(0) + `" stroke-width="3"/></pattern></defs>`)
	}
	writeBarsAxis(&b, c.Scale, l)
	for i, r := range c.Rows {
		writeRow(&b, c, r, l, l.top+float64(i)*rowH)
	}
	if c.Key != "" {
		b.WriteString(`<text class="key" x="` + num(l.x0) + `" y="` + num(l.baseline+34) + `" fill="currentColor" opacity="0.8">` + clean(c.Key) + `</text>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// layOut measures c: its columns, its rows, its axis.
func layOut(c Bars) barsLayout {
	l := barsLayout{id: barsID(c), top: barsTop, none: true}
	longest, texts := 0, 0
	var peak float64
	integers := true
	for _, r := range c.Rows {
		longest = max(longest, len([]rune(r.Label))+2*bool01(r.Sub))
		text := rowText(c, r)
		texts = max(texts, len([]rune(text+fewNote(r, text))))
		v, u, ok := figure(r, c.Scale)
		if !ok {
			continue
		}
		l.none = false
		l.hasFew = l.hasFew || r.Few
		peak = math.Max(peak, math.Max(v, u))
		integers = integers && v == math.Trunc(v) && u == math.Trunc(u)
	}
	l.x0 = math.Min(float64(longest)*charW+16, labelMax)
	l.labelChars = max1(int((l.x0 - 16) / charW))
	l.x1 = width - right - math.Min(float64(texts)*charW+10, textMax)
	l.baseline = l.top + float64(len(c.Rows))*rowH + 4
	switch {
	case c.Scale == Ratio:
		l.topValue, l.step = 1, 0.25
	case peak <= 0: // every figure is zero: an axis of one step
		l.topValue, l.step, l.div = 1, 1, 1
	case c.Scale == Seconds:
		l.step = durationStep(peak)
		l.topValue = math.Ceil(peak/l.step-1e-9) * l.step
	default:
		step, count := ticks(peak, integers)
		l.step, l.topValue = step, float64(count)*step
		l.div, l.suffix = magnitude(l.topValue)
		if l.div != 0 {
			l.decimals = decimalsOf(step / l.div)
		}
	}
	l.scale = (l.x1 - l.x0) / l.topValue
	return l
}

// writeBarsAxis draws the vertical grid lines at round values and their
// labels under the plot.
func writeBarsAxis(b *strings.Builder, s Scale, l barsLayout) {
	count := int(math.Round(l.topValue / l.step))
	for i := 0; i <= count; i++ {
		v := float64(i) * l.step
		x := round2(l.x0 + v*l.scale)
		stroke := `stroke="#d1d9e0"`
		if i == 0 {
			stroke = `stroke="#8c959f"`
		}
		b.WriteString(line(x, l.top-4, x, l.baseline, stroke))
		var label string
		switch s {
		case Ratio:
			label = strconv.Itoa(int(math.Round(v*100))) + "%"
		case Seconds:
			label = durationIn(v, l.step)
		default:
			label = tickLabel(v, l.div, l.suffix, l.decimals)
		}
		b.WriteString(`<text x="` + num(x) + `" y="` + num(l.baseline+14) + `" text-anchor="middle" fill="currentColor">` + label + `</text>`)
	}
}

// writeRow draws row r at y: its label, its bar and whisker, its text.
func writeRow(b *strings.Builder, c Bars, r Row, l barsLayout, y float64) {
	lx, fill := 8.0, colour(0)
	if r.Sub {
		lx, fill = 8+subIndent, colour(5)
	}
	cy := y + rowH/2
	b.WriteString(`<text class="label" x="` + num(lx) + `" y="` + num(cy+4) + `" fill="currentColor">` +
		clean(truncate(r.Label, l.labelChars-2*bool01(r.Sub))) + `</text>`)
	v, u, ok := figure(r, c.Scale)
	text := rowText(c, r)
	if !ok {
		b.WriteString(`<text class="missing" x="` + num(l.x0+4) + `" y="` + num(cy+4) + `" fill="currentColor" opacity="0.7">` + clean(text) + `</text>`)
		return
	}
	end := l.x0 + v*l.scale
	class, paint := "bar", `fill="`+fill+`"`
	if r.Few {
		class, paint = "bar few", `fill="url(#`+l.id+`-few)" stroke="`+colour(0)+`" stroke-dasharray="3 2"`
	}
	tip := r.Label + ": " + text + fewNote(r, text)
	b.WriteString(`<rect class="` + class + `" x="` + num(l.x0) + `" y="` + num(cy-barH/2) + `" width="` + num(end-l.x0) + `" height="` + num(barH) +
		`" ` + paint + `><title>` + clean(tip) + `</title></rect>`)
	after := end
	if u > 0 {
		ue := l.x0 + u*l.scale
		b.WriteString(`<g class="whisker">` + line(end, cy, ue, cy, `stroke="currentColor" stroke-width="1.5"`) +
			line(ue, cy-5, ue, cy+5, `stroke="currentColor" stroke-width="1.5"`) + `</g>`)
		after = ue
	}
	b.WriteString(`<text class="figure" x="` + num(after+6) + `" y="` + num(cy+4) + `" fill="currentColor">` + clean(text+fewNote(r, text)) + `</text>`)
}

// rowText is what is written after row r's bar: its Text, else its value,
// else for a row without figure "—".
func rowText(c Bars, r Row) string {
	if r.Text != "" {
		return r.Text
	}
	v, _, ok := figure(r, c.Scale)
	switch {
	case !ok:
		return "—"
	case c.Scale == Ratio:
		return strconv.Itoa(int(math.Round(v*100))) + "%"
	case c.Scale == Seconds:
		return durationLabel(v)
	}
	return valueText(v, c.Unit)
}

// describeBars is the chart's text alternative: every row's label and text.
func describeBars(c Bars) string {
	if !hasFigure(c) {
		if c.Empty != "" {
			return c.Empty + "."
		}
		return "No data."
	}
	parts := make([]string, 0, len(c.Rows))
	for _, r := range c.Rows {
		text := rowText(c, r)
		parts = append(parts, r.Label+": "+text+fewNote(r, text))
	}
	s := strings.Join(parts, "; ") + "."
	if c.Key != "" {
		s += " " + c.Key + "."
	}
	return s
}

// fewNote is " (few)" for a row that rests on few cases whose text does
// not say so already.
func fewNote(r Row, text string) string {
	if !r.Few || strings.Contains(text, "few") {
		return ""
	}
	return " (few)"
}

// hasFigure tells whether a row of c has a figure.
func hasFigure(c Bars) bool {
	for _, r := range c.Rows {
		if _, _, ok := figure(r, c.Scale); ok {
			return true
		}
	}
	return false
}

// durationSteps are the round steps of a Seconds axis.
var durationSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600,
	86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400}

// durationStep is the smallest round step that covers peak in at most
// five steps; past 150 days, a round number of days (ticks').
func durationStep(peak float64) float64 {
	for _, s := range durationSteps {
		if peak/s <= 5+1e-9 {
			return s
		}
	}
	step, _ := ticks(peak/86400, true)
	return step * 86400
}

// durationLabel writes seconds s as the largest whole unit that says it
// exactly (90s: 1m30s is said "1.5m"): 0, 30s, 15m, 1.5h, 2d.
func durationLabel(s float64) string {
	units := []struct {
		secs float64
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}}
	if s <= 0 {
		return "0"
	}
	for _, u := range units {
		if s >= u.secs {
			return tenths(s/u.secs) + u.name
		}
	}
	return strconv.FormatFloat(s, 'g', 2, 64) + "s"
}

// durationIn writes the tick at s seconds in the unit of the axis's step
// (0, 6h, 12h, 18h, 24h, 30h).
func durationIn(s, step float64) string {
	if s <= 0 {
		return "0"
	}
	for _, u := range []struct {
		secs float64
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}} {
		if step >= u.secs {
			return tenths(s/u.secs) + u.name
		}
	}
	return tenths(s) + "s"
}

// tenths writes v to a tenth, in scientific notation past a million.
func tenths(v float64) string {
	if v >= 1e6 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// barsID names the chart's <title>, <desc> and hatch pattern from a hash
// of its content: two charts of a page do not share ids.
func barsID(c Bars) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%#v", c)
	return "bars-" + strconv.FormatUint(h.Sum64(), 16)
}

func bool01(b bool) int {
	if b {
		return 1
	}
	return 0
}
