package charts

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.svg from the current output")

var days = []string{"Mon 3", "Tue 4", "Wed 5", "Thu 6", "Fri 7", "Sat 8", "Sun 9"}

// cases are the fixed inputs of the golden files; bars is how many bar
// segments each must draw (one per positive value).
var cases = []struct {
	name  string
	chart Chart
	bars  int
}{
	{"runs_per_day", Chart{Title: "Runs per day by outcome", Labels: days, Unit: "runs", Series: []Series{
		{Name: "succeeded", Values: []float64{3, 5, 0, 7, 2, 0, 1}},
		{Name: "failed", Values: []float64{1, 0, 2, 1, 0, 0, 0}},
		{Name: "cancelled", Values: []float64{0, 1, 0, 0, 0, 0, 1}},
	}}, 10},
	{"cost_per_day", Chart{Title: "Cost per day", Labels: days, Unit: "USD", Series: []Series{
		{Name: "claude", Values: []float64{0.42, 1.375, 0.08, 2.9, 0.015, 0, 0.33}},
		{Name: "codex", Values: []float64{0.1, 0, 0.25, 0.5, 0.2, 0.05, 0}},
	}}, 11},
	{"empty", Chart{Title: "Runs per day by outcome", Unit: "runs"}, 0},
	{"all_zero", Chart{Title: "Runs per day", Labels: days, Unit: "runs", Series: []Series{
		{Name: "succeeded", Values: []float64{0, 0, 0, 0, 0, 0, 0}},
	}}, 0},
	{"one_label", Chart{Title: "Tokens today", Labels: []string{"today"}, Unit: "tokens", Series: []Series{
		{Name: "input", Values: []float64{1200}}, {Name: "output", Values: []float64{345}},
	}}, 2},
	{"large_values", Chart{Title: "Tokens per day", Labels: days[:3], Unit: "tokens", Series: []Series{
		{Name: "input", Values: []float64{4.2e9, 1.25e10, 7e8}},
		{Name: "output", Values: []float64{3e12, 0, 1e9}},
		{Name: "broken", Values: []float64{math.NaN(), math.Inf(1), -5}},
	}}, 5},
	{"extreme_values", Chart{Title: "Extreme", Labels: []string{"a", "b"}, Series: []Series{
		{Name: "huge", Values: []float64{1e308, 1}},
		{Name: "more", Values: []float64{1e308, math.NaN()}},
	}}, 3},
}

func init() {
	// A month: the x-axis shows every few labels only.
	c := Chart{Title: "Runs per day, last 30 days", Unit: "runs", Series: []Series{{Name: "succeeded"}}}
	for i := range 30 {
		c.Labels = append(c.Labels, fmt.Sprintf("2026-11-%02d", i+1))
		c.Series[0].Values = append(c.Series[0].Values, float64(i%4))
	}
	cases = append(cases, struct {
		name  string
		chart Chart
		bars  int
	}{"thirty_days", c, 22})
}

func TestGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := []byte(StackedBars(tc.chart))
			path := filepath.Join("testdata", tc.name+".svg")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./views/charts -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the output (go test ./views/charts -update rewrites it)\ngot:\n%s", path, got)
			}
			if again := []byte(StackedBars(tc.chart)); !bytes.Equal(got, again) {
				t.Error("two renderings of the same chart differ")
			}
		})
	}
}

// parse reads svg as XML and counts its bar rects and the texts it shows.
func parse(t *testing.T, svg string) (bars int, texts []string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var stack []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			if e.Name.Local == "rect" {
				for _, a := range e.Attr {
					if a.Name.Local == "class" && a.Value == "bar" {
						bars++
					}
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "text" {
				texts = append(texts, string(e))
			}
		}
	}
	return bars, texts
}

func TestXMLAndBars(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(StackedBars(tc.chart))
			bars, texts := parse(t, svg)
			if bars != tc.bars {
				t.Errorf("%d bars, want %d", bars, tc.bars)
			}
			if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
				t.Errorf("NaN or Inf in the output:\n%s", svg)
			}
			if !strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 640 `) ||
				!strings.Contains(svg, `<title id="chart-`) || !strings.Contains(svg, `aria-labelledby="chart-`) {
				t.Errorf("not an accessible, scalable svg:\n%s", svg)
			}
			noData := strings.Contains(strings.Join(texts, "|"), "no data")
			if noData != (tc.bars == 0) {
				t.Errorf("no data shown: %v, with %d bars", noData, tc.bars)
			}
			for _, s := range tc.chart.Series {
				if !strings.Contains(strings.Join(texts, "|"), s.Name) {
					t.Errorf("the legend does not name %q", s.Name)
				}
			}
		})
	}
}

func TestTicksRound(t *testing.T) {
	for _, tc := range []struct {
		max      float64
		integers bool
		step     float64
		count    int
	}{
		{11, true, 5, 3},
		{3, true, 1, 3},
		{1, true, 1, 1},
		{3.42, false, 1, 4},
		{0.07, false, 0.02, 4},
		{9, false, 2.5, 4},
		{3.0042e12, false, 1e12, 4},
	} {
		step, count := ticks(tc.max, tc.integers)
		if math.Abs(step-tc.step) > 1e-9*tc.step || count != tc.count {
			t.Errorf("ticks(%v, %v) = %v, %d; want %v, %d", tc.max, tc.integers, step, count, tc.step, tc.count)
		}
	}
}

func TestHostileTextEscaped(t *testing.T) {
	hostile := `<script>alert("x")</script> & 'q' ]]> ` + "\x00\x01\xff"
	c := Chart{Title: hostile, Unit: hostile, Labels: []string{hostile, "ok"}, Series: []Series{
		{Name: hostile, Values: []float64{1, 2}},
		{Name: `"><svg onload=alert(1)>`, Values: []float64{3, 0}},
	}}
	svg := string(StackedBars(c))
	for _, bad := range []string{"<script", `"><svg`, "& ", "'q'", "\x00", "\x01", "\xff"} {
		if strings.Contains(svg, bad) {
			t.Errorf("%q not escaped:\n%s", bad, svg)
		}
	}
	if !strings.Contains(svg, "&lt;script&gt;") || !strings.Contains(svg, "&amp;") || !strings.Contains(svg, "&#34;") {
		t.Errorf("escaped forms missing:\n%s", svg)
	}
	if bars, texts := parse(t, svg); bars != 3 || !strings.Contains(strings.Join(texts, "|"), `<script>alert("x")`) {
		t.Errorf("%d bars, texts %q: the hostile text should read back as text", bars, texts)
	}
}
