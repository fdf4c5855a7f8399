package views

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestOutcomesInABrowser reads the outcomes page as a person sees it, in
// headless Chromium, over seeded records: the overall table and one per
// project, the merge rate with the counts behind it and a warning when
// they are too few, a row per agent, and the charts beside the overall
// table (their bars, hatched marks and written figures). With ALFRED_UPDATE_DOCS=1 it writes
// docs/outcomes.png.
func TestOutcomesInABrowser(t *testing.T) {
	srv := serve(t, seedOutcomes(t))
	ctx := browser(t)
	open(t, ctx, srv.URL+"/outcomes", `[data-test="overall"] [data-test="row"]`)
	if got := count(t, ctx, `[data-test="project-outcomes"]`); got != 2 {
		t.Errorf("%d project tables, want 2", got)
	}
	rate := text(t, ctx, `[data-test="overall"] [data-test="row"] [data-test="merge-rate"]`)
	if !strings.Contains(rate, "(2 of 3, few)") || !strings.Contains(rate, "too few to compare") {
		t.Errorf("the overall merge rate reads %q", rate)
	}
	if got := count(t, ctx, `[data-test="overall"] [data-test="row"]`); got < 3 {
		t.Errorf("the overall table has %d rows: want all, then one per agent", got)
	}
	groups := text(t, ctx, `[data-test="overall"] tbody`)
	for _, want := range []string{"claude-code", "codex"} {
		if !strings.Contains(groups, want) {
			t.Errorf("the overall table lacks a row of %s:\n%s", want, groups)
		}
	}
	// The charts beside the overall table: a bar per adapter and per
	// adapter and model, each hatched (every rate rests on few issues),
	// with the counts written on it.
	for _, c := range []struct {
		chart            string
		bars, few, texts int
		says             string
	}{
		{"merge-rate", 5, 5, 5, "100% (2 of 2, few)"},
		{"to-pull-request", 2, 2, 2, "1h · p90 1h (n=2)"},
		{"to-merge", 1, 1, 1, "none merged yet"},
		{"cost", 1, 1, 1, "$50.52 (2 merged)"},
		{"tokens", 1, 1, 1, "50515 tokens (2 merged)"},
	} {
		sel := `[data-test="overall"] [data-test="outcome-chart-` + c.chart + `"] svg`
		if got := count(t, ctx, sel+` rect.bar`); got != c.bars {
			t.Errorf("chart %s: %d bars, want %d", c.chart, got, c.bars)
		}
		if got := count(t, ctx, sel+` rect.bar.few`); got != c.few {
			t.Errorf("chart %s: %d hatched bars, want %d", c.chart, got, c.few)
		}
		if got := count(t, ctx, sel+` text.figure`); got < c.texts {
			t.Errorf("chart %s: %d figures written, want %d", c.chart, got, c.texts)
		}
		if got := svgTexts(t, ctx, sel); !strings.Contains(got, c.says) {
			t.Errorf("chart %s reads %q, want %q in it", c.chart, got, c.says)
		}
	}
	if got := svgTexts(t, ctx, `[data-test="overall"] [data-test="outcome-chart-merge-rate"] svg`); !strings.Contains(got, "0% (0 of 1, few)") {
		t.Errorf("the merge rate chart lacks codex's: %q", got)
	}
	if got := text(t, ctx, `[data-test="abandon-after"]`); got != "30 days" {
		t.Errorf("the abandonment threshold reads %q", got)
	}
	screenshot(t, ctx, "outcomes.png")
}

// svgTexts is the texts an SVG shows (its <text> elements, not its title
// nor description), joined by "|".
func svgTexts(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	js := `Array.from(document.querySelectorAll(` + "`" + sel + ` text` + "`" + `)).map(e => e.textContent).join("|")`
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("read the texts of %s: %v", sel, err)
	}
	return s
}
