package charts

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// The layout, in viewBox units: the SVG is 640 wide and scales to its
// container; its height grows with the rows of the legend.
const (
	width     = 640.0
	left      = 60.0 // room for the y-axis tick labels
	right     = 12.0
	top       = 28.0 // room for the unit
	plotH     = 180.0
	barMax    = 56.0 // widest bar, for charts with few labels
	legendRow = 20.0
	charW     = 6.5 // estimated width of a character at font-size 11

	plotW    = width - left - right
	baseline = top + plotH // the y of the x-axis
)

// render draws c as the SVG of StackedBars.
func render(c Chart) string {
	totals, integers := barTotals(c.Series, len(c.Labels))
	var peak, sum float64
	for _, t := range totals {
		peak = math.Max(peak, t)
		sum += t
	}
	legendTop := baseline + 40
	legend, rows := legendItems(c.Series, legendTop)
	height := legendTop + float64(rows)*legendRow

	var b strings.Builder
	writeHead(&b, c, height, describe(c, sum, peak))
	if peak <= 0 {
		b.WriteString(line(left, baseline, width-right, baseline, `stroke="#8c959f"`))
		b.WriteString(`<text class="nodata" x="` + num(left+plotW/2) + `" y="` + num(top+plotH/2) +
			`" text-anchor="middle" fill="currentColor" opacity="0.7">no data</text>`)
	} else {
		scale := writeYAxis(&b, peak, integers)
		writeBars(&b, c, scale)
	}
	writeXLabels(&b, c.Labels)
	b.WriteString(legend)
	b.WriteString(`</svg>`)
	return b.String()
}

// barTotals returns the height in value of each of the n bars, and whether
// every value is a whole number.
func barTotals(series []Series, n int) (totals []float64, integers bool) {
	totals = make([]float64, n)
	integers = true
	for _, s := range series {
		for i := range totals {
			v := value(s, i)
			totals[i] += v
			if v != math.Trunc(v) {
				integers = false
			}
		}
	}
	return totals, integers
}

// writeHead opens the <svg>, of the given height, and writes the chart's
// title, its text alternative desc and its unit.
func writeHead(b *strings.Builder, c Chart, height float64, desc string) {
	id := chartID(c)
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 ` + num(width) + " " + num(height) +
		`" width="100%" style="max-width:100%;height:auto" font-family="system-ui,sans-serif" font-size="11" aria-labelledby="` +
		id + `-title" aria-describedby="` + id + `-desc">`)
	b.WriteString(`<title id="` + id + `-title">` + clean(c.Title) + `</title>`)
	b.WriteString(`<desc id="` + id + `-desc">` + clean(desc) + `</desc>`)
	if c.Unit != "" {
		b.WriteString(`<text x="8" y="14" fill="currentColor">` + clean(c.Unit) + `</text>`)
	}
}

// writeYAxis draws the horizontal grid lines at round values from 0 to
// above peak, with their labels, and returns the plot's scale in viewBox
// units per unit of value.
func writeYAxis(b *strings.Builder, peak float64, integers bool) (scale float64) {
	step, count := ticks(peak, integers)
	topValue := float64(count) * step
	scale = plotH / topValue
	div, suffix := magnitude(topValue)
	decimals := decimalsOf(step / div)
	for i := 0; i <= count; i++ {
		v := float64(i) * step
		y := round2(baseline - v*scale)
		stroke := `stroke="#d1d9e0"`
		if i == 0 {
			stroke = `stroke="#8c959f"`
		}
		b.WriteString(line(left, y, width-right, y, stroke))
		b.WriteString(`<text x="` + num(left-6) + `" y="` + num(y+4) + `" text-anchor="end" fill="currentColor">` +
			tickLabel(v, div, suffix, decimals) + `</text>`)
	}
	return scale
}

// writeBars draws one bar per label, stacked from the series' values in
// order from the bottom, each segment with a tooltip of its label, series
// and value.
func writeBars(b *strings.Builder, c Chart, scale float64) {
	n := len(c.Labels)
	band := plotW / float64(n)
	barW := math.Min(band*0.7, barMax)
	for i := range n {
		x := left + float64(i)*band + (band-barW)/2
		cum := 0.0
		for j, s := range c.Series {
			v := value(s, i)
			if v <= 0 {
				continue
			}
			y0, y1 := round2(baseline-cum*scale), round2(baseline-(cum+v)*scale)
			cum += v
			b.WriteString(`<rect class="bar" x="` + num(x) + `" y="` + num(y1) + `" width="` + num(barW) + `" height="` + num(y0-y1) +
				`" fill="` + colour(j) + `"><title>` + clean(c.Labels[i]+" · "+seriesName(s, j)+": "+valueText(v, c.Unit)) + `</title></rect>`)
		}
	}
}

// writeXLabels writes the labels under their bars: every k-th when they
// would not all fit, each cut to the room it has.
func writeXLabels(b *strings.Builder, labels []string) {
	n := len(labels)
	if n == 0 {
		return
	}
	band := plotW / float64(n)
	longest := 0
	for _, l := range labels {
		longest = max(longest, len([]rune(l)))
	}
	labelW := float64(min(longest, 16))*charW + 8
	k := max1(int(math.Ceil(float64(n) * labelW / plotW)))
	fit := max1(int((band*float64(k) - 4) / charW))
	for i := 0; i < n; i += k {
		x := left + float64(i)*band + band/2
		b.WriteString(`<text x="` + num(x) + `" y="` + num(baseline+16) + `" text-anchor="middle" fill="currentColor">` +
			clean(truncate(labels[i], fit)) + `</text>`)
	}
}

// legendItems lays the legend out in rows under the plot, a swatch of the
// series' colour and its name for each.
func legendItems(series []Series, y0 float64) (string, int) {
	if len(series) == 0 {
		return "", 0
	}
	var b strings.Builder
	x, rows := left, 1
	for j, s := range series {
		name := truncate(seriesName(s, j), 40)
		w := 16 + float64(len([]rune(name)))*charW + 16
		if x > left && x+w > width-right {
			x = left
			rows++
		}
		y := y0 + float64(rows-1)*legendRow
		b.WriteString(`<g class="legend"><rect class="swatch" x="` + num(x) + `" y="` + num(y-9) + `" width="11" height="11" fill="` + colour(j) + `"/>` +
			`<text x="` + num(x+16) + `" y="` + num(y) + `" fill="currentColor">` + clean(name) + `</text></g>`)
		x += w
	}
	return b.String(), rows
}

// ticks returns a round step (1, 2, 2.5 or 5 times a power of ten; no 2.5 nor
// fractions for counts) and how many steps cover max, about four.
func ticks(peak float64, integers bool) (float64, int) {
	rough := peak / 4
	mag := math.Pow(10, math.Floor(math.Log10(rough)))
	steps := []float64{1, 2, 2.5, 5, 10}
	if integers {
		steps = []float64{1, 2, 5, 10}
	}
	step := 10 * mag
	for _, s := range steps {
		if s*mag >= rough*(1-1e-9) {
			step = s * mag
			break
		}
	}
	if integers && step < 1 {
		step = 1
	}
	count := int(math.Ceil(peak/step - 1e-9))
	return step, max1(count)
}

// magnitude returns the divisor and suffix of the tick labels for values up
// to top: 12k, 1.5M, 3B, 2T; beyond, scientific notation.
func magnitude(top float64) (float64, string) {
	switch {
	case top >= 1e15:
		return 0, ""
	case top >= 1e12:
		return 1e12, "T"
	case top >= 1e9:
		return 1e9, "B"
	case top >= 1e6:
		return 1e6, "M"
	case top >= 1e4:
		return 1e3, "k"
	}
	return 1, ""
}

func tickLabel(v, div float64, suffix string, decimals int) string {
	if v == 0 {
		return "0"
	}
	if div == 0 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v/div, 'f', decimals, 64) + suffix
}

// decimalsOf returns how many decimals show step exactly (at most 6).
func decimalsOf(step float64) int {
	for d := 0; d < 6; d++ {
		p := math.Pow(10, float64(d))
		if math.Abs(step*p-math.Round(step*p)) < 1e-6*math.Max(1, step*p) {
			return d
		}
	}
	return 6
}

// valueText writes a bar segment's value for its tooltip.
func valueText(v float64, unit string) string {
	var s string
	switch {
	case v >= 1e15:
		s = strconv.FormatFloat(v, 'g', 4, 64)
	case v < 0.01:
		s = strconv.FormatFloat(v, 'g', 2, 64)
	default:
		s = strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
		whole, frac, _ := strings.Cut(s, ".")
		for i := len(whole) - 3; i > 0; i -= 3 {
			whole = whole[:i] + "," + whole[i:]
		}
		if s = whole; frac != "" {
			s += "." + frac
		}
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// describe is the chart's text alternative.
func describe(c Chart, sum, peak float64) string {
	if peak <= 0 {
		return "No data."
	}
	n := len(c.Labels)
	s := strconv.Itoa(n) + " bars"
	if n == 1 {
		s = "1 bar"
	}
	s += ", " + c.Labels[0]
	if n > 1 {
		s += " to " + c.Labels[n-1]
	}
	return s + "; total " + valueText(sum, c.Unit) + "."
}

func seriesName(s Series, j int) string {
	if s.Name == "" {
		return "series " + strconv.Itoa(j+1)
	}
	return s.Name
}

func colour(j int) string { return Palette[j%len(Palette)] }

// chartID names the chart's <title> and <desc> from a hash of its content,
// so that two different charts on a page do not share ids, deterministically.
func chartID(c Chart) string {
	h := fnv.New64a()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(c.Title)
	w(c.Unit)
	for _, l := range c.Labels {
		w(l)
	}
	for _, s := range c.Series {
		w(s.Name)
		for _, v := range s.Values {
			h.Write(binary.BigEndian.AppendUint64(nil, math.Float64bits(v)))
		}
	}
	return "chart-" + strconv.FormatUint(h.Sum64(), 16)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}

func line(x1, y1, x2, y2 float64, attrs string) string {
	return `<line x1="` + num(x1) + `" y1="` + num(y1) + `" x2="` + num(x2) + `" y2="` + num(y2) + `" ` + attrs + `/>`
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// num writes a coordinate with at most two decimals, no trailing zeros.
func num(v float64) string {
	s := strconv.FormatFloat(round2(v), 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
