package charts

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// barCases are the fixed inputs of the bars_*.svg golden files, with what
// each must draw.
var barCases = []struct {
	name                string
	chart               Bars
	bars, few, whiskers int
	texts               []string // shown, among others
	empty               bool     // the Empty text instead of a plot
}{
	{"merge_rate", Bars{Title: "Merge rate by agent", Scale: Ratio, Rows: []Row{
		{Label: "claude-code", Value: 2.0 / 3, Text: "67% (2 of 3, few)", Few: true},
		{Label: "claude-code · opus", Value: 1, Text: "100% (2 of 2, few)", Few: true, Sub: true},
		{Label: "claude-code · default model", Value: 0, Text: "0% (0 of 1, few)", Few: true, Sub: true},
		{Label: "codex", Value: 0.8, Text: "80% (8 of 10)"},
		{Label: "gemini", Missing: true, Text: "no finished issue yet"},
	}}, 4, 3, 0, []string{"67% (2 of 3, few)", "80% (8 of 10)", "no finished issue yet", "100%", "claude-code · opus"}, false},
	{"time_to_merge", Bars{Title: "Time to merge by adapter", Scale: Seconds, Key: "bar: median · whisker: 90th percentile", Rows: []Row{
		{Label: "claude-code", Value: 3 * 3600, Upper: 26 * 3600, Text: "3h · p90 26h (n=12)"},
		{Label: "codex", Value: 5400, Upper: 5400, Text: "1h30m · p90 1h30m (n=1)", Few: true},
		{Label: "opencode", Missing: true, Text: "none merged"},
	}}, 2, 1, 1, []string{"3h · p90 26h (n=12)", "none merged", "24h", "bar: median · whisker: 90th percentile"}, false},
	{"cost_per_merged", Bars{Title: "Cost per merged change", Unit: "USD", Rows: []Row{
		{Label: "claude-code", Value: 1.5, Text: "$1.50 (2 merged)"},
		{Label: "codex", Value: 12.25, Text: "≥ $12.25 (1 merged)"},
	}}, 2, 0, 0, []string{"USD", "$1.50 (2 merged)", "≥ $12.25 (1 merged)"}, false},
	{"tokens_per_merged", Bars{Title: "Tokens per merged change", Unit: "tokens", Rows: []Row{
		{Label: "claude-code", Value: 1_250_000},
		{Label: "codex", Value: 3_400_000},
	}}, 2, 0, 0, []string{"1,250,000 tokens", "3M"}, false},
	{"no_finished", Bars{Title: "Merge rate by agent", Scale: Ratio, Empty: "no finished issue yet", Rows: []Row{
		{Label: "claude-code", Missing: true}, {Label: "codex", Value: math.NaN()},
	}}, 0, 0, 0, []string{"no finished issue yet"}, true},
	{"no_rows", Bars{Title: "Time to pull request by adapter", Scale: Seconds}, 0, 0, 0, []string{"no data"}, true},
	{"all_zero", Bars{Title: "Cost per merged change", Unit: "USD", Rows: []Row{{Label: "claude-code", Value: 0}}},
		1, 0, 0, []string{"0 USD"}, false},
	{"broken_values", Bars{Title: "Broken", Scale: Seconds, Rows: []Row{
		{Label: "inf", Value: math.Inf(1)},
		{Label: "negative", Value: -3},
		{Label: "upper below", Value: 120, Upper: 60},
		{Label: "upper nan", Value: 120, Upper: math.NaN()},
		{Label: "huge", Value: 1e308, Upper: math.Inf(1)},
	}}, 3, 0, 0, []string{"—", "2m"}, false},
}

func TestBarsGolden(t *testing.T) {
	for _, tc := range barCases {
		t.Run(tc.name, func(t *testing.T) {
			got := []byte(HorizontalBars(tc.chart))
			path := filepath.Join("testdata", "bars_"+tc.name+".svg")
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
			if again := []byte(HorizontalBars(tc.chart)); !bytes.Equal(got, again) {
				t.Error("two renderings of the same chart differ")
			}
		})
	}
}

// barsDrawn is what an SVG of HorizontalBars draws.
type barsDrawn struct {
	bars, few, whiskers int
	texts               []string
	title, desc         string
}

func parseBars(t *testing.T, svg string) barsDrawn {
	t.Helper()
	var d barsDrawn
	dec := xml.NewDecoder(strings.NewReader(svg))
	var stack []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			for _, a := range e.Attr {
				if a.Name.Local != "class" {
					continue
				}
				switch {
				case e.Name.Local == "rect" && a.Value == "bar":
					d.bars++
				case e.Name.Local == "rect" && a.Value == "bar few":
					d.bars++
					d.few++
				case e.Name.Local == "g" && a.Value == "whisker":
					d.whiskers++
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			switch {
			case len(stack) == 2 && stack[1] == "title":
				d.title = string(e)
			case len(stack) == 2 && stack[1] == "desc":
				d.desc = string(e)
			case len(stack) > 0 && stack[len(stack)-1] == "text":
				d.texts = append(d.texts, string(e))
			}
		}
	}
	return d
}

// TestBarsDrawn: valid, accessible XML; one bar per figure, hatched when
// few, a whisker where a 90th percentile passes the median; every row's
// text shown and said in the description; no NaN nor Inf; an empty chart
// draws no bar and says so.
func TestBarsDrawn(t *testing.T) {
	for _, tc := range barCases {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(HorizontalBars(tc.chart))
			d := parseBars(t, svg)
			if d.bars != tc.bars || d.few != tc.few || d.whiskers != tc.whiskers {
				t.Errorf("%d bars, %d few, %d whiskers; want %d, %d, %d", d.bars, d.few, d.whiskers, tc.bars, tc.few, tc.whiskers)
			}
			for _, bad := range []string{"NaN", "Inf", "=\"-"} {
				if strings.Contains(svg, bad) {
					t.Errorf("%q in the output:\n%s", bad, svg)
				}
			}
			if d.title != tc.chart.Title || d.desc == "" || !strings.Contains(svg, `role="img"`) || !strings.Contains(svg, `aria-describedby="bars-`) {
				t.Errorf("title %q, desc %q: not accessible", d.title, d.desc)
			}
			shown := strings.Join(d.texts, "|")
			for _, want := range tc.texts {
				if !strings.Contains(shown, want) {
					t.Errorf("%q not shown among %q", want, d.texts)
				}
			}
			if tc.empty {
				if len(d.texts) != 1 || strings.Contains(svg, "<line") {
					t.Errorf("an empty chart draws %q and lines: %v", d.texts, strings.Contains(svg, "<line"))
				}
				return
			}
			for _, r := range tc.chart.Rows {
				if !strings.Contains(d.desc, r.Label+": ") || !strings.Contains(shown, string([]rune(r.Label)[:min(20, len([]rune(r.Label)))])) {
					t.Errorf("row %q not labelled or not described (desc %q)", r.Label, d.desc)
				}
				if r.Few && !strings.Contains(d.desc, r.Label+": "+r.Text) || r.Few && !strings.Contains(r.Text, "few") && !strings.Contains(d.desc, r.Text+" (few)") {
					t.Errorf("the description does not say row %q rests on few: %q", r.Label, d.desc)
				}
			}
		})
	}
}

func TestDurationAxis(t *testing.T) {
	for _, tc := range []struct {
		peak  float64
		step  float64
		label string // of the step
	}{
		{40, 10, "10s"}, {5400, 1800, "30m"}, {26 * 3600, 6 * 3600, "6h"}, {10 * 86400, 2 * 86400, "2d"},
		{400 * 86400, 100 * 86400, "100d"}, {0.3, 1, "1s"},
	} {
		if s := durationStep(tc.peak); s != tc.step || durationIn(s, s) != tc.label {
			t.Errorf("peak %v: step %v (%s), want %v (%s)", tc.peak, s, durationIn(s, s), tc.step, tc.label)
		}
	}
	if got := durationLabel(5400); got != "1.5h" {
		t.Errorf("5400s reads %q", got)
	}
	if got := durationIn(30*3600, 6*3600); got != "30h" {
		t.Errorf("the tick at 30h of a 6h axis reads %q", got)
	}
}

func TestBarsHostileTextEscaped(t *testing.T) {
	hostile := `<script>alert("x")</script> & 'q' ]]> ` + "\x00\xff"
	svg := string(HorizontalBars(Bars{Title: hostile, Unit: hostile, Key: hostile, Rows: []Row{
		{Label: hostile, Value: 1, Text: hostile, Few: true}, {Label: `"><svg onload=alert(1)>`, Missing: true, Text: hostile},
	}}))
	for _, bad := range []string{"<script", `"><svg`, "& ", "'q'", "\x00", "\xff"} {
		if strings.Contains(svg, bad) {
			t.Errorf("%q not escaped:\n%s", bad, svg)
		}
	}
	if d := parseBars(t, svg); d.bars != 1 || !strings.Contains(d.title, `<script>alert("x")`) {
		t.Errorf("%d bars, title %q: the hostile text should read back as text", d.bars, d.title)
	}
}
