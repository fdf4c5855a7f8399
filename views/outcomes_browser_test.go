package views

import (
	"strings"
	"testing"
)

// TestOutcomesInABrowser reads the outcomes page as a person sees it, in
// headless Chromium, over seeded records: the overall table and one per
// project, the merge rate with the counts behind it and a warning when
// they are too few, a row per agent. With ALFRED_UPDATE_DOCS=1 it writes
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
	if got := text(t, ctx, `[data-test="abandon-after"]`); got != "30 days" {
		t.Errorf("the abandonment threshold reads %q", got)
	}
	screenshot(t, ctx, "outcomes.png")
}
