package views

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestOverviewInABrowser reads the overview, its filters, its charts and a
// project page as a person sees them, in headless Chromium, and at a phone's
// width. With ALFRED_UPDATE_DOCS=1 it writes docs/overview.png.
func TestOverviewInABrowser(t *testing.T) {
	s := seedOverview(t)
	srv := serve(t, s.deps())
	ctx := browser(t)

	open(t, ctx, srv.URL+"/", `[data-test="section-needs-you"]`)
	for sel, want := range map[string]int{
		`[data-test="section-needs-you"] [data-test="row"]`:   3,
		`[data-test="section-in-progress"] [data-test="row"]`: 2,
		`[data-test="section-done"] [data-test="row"]`:        2,
		// One bar segment per day and series that is not zero.
		`[data-test="chart-runs"] svg rect.bar`:                       7,
		`[data-test="chart-tokens"] svg rect.bar`:                     8,
		`[data-test="chart-cost"] svg rect.bar`:                       4,
		`[data-test="chart-runs"] [data-test="chart-table"] tbody tr`: chartDays,
	} {
		if got := count(t, ctx, sel); got != want {
			t.Errorf("%s: %d, want %d", sel, got, want)
		}
	}
	if got := text(t, ctx, `[data-test="section-in-progress"] [data-test="row"] [data-test="session"]`); got != "agent/demo7 · resumed" {
		t.Errorf("session cell %q", got)
	}
	screenshot(t, ctx, "overview.png")

	// A filter applied through the form is a link to share.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`[data-test="filter-status"]`), "blocked"),
		chromedp.Click(chromedp.CSS(`[data-test="filter-apply"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-test="filter-clear"]`))); err != nil {
		t.Fatalf("filter: %v", err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(loc, "status=blocked") || count(t, ctx, `[data-test="row"]`) != 1 ||
		text(t, ctx, `[data-test="row"] [data-test="title"]`) != "Fix the footer" {
		t.Errorf("filtered overview at %s: %d rows", loc, count(t, ctx, `[data-test="row"]`))
	}

	// The project page, from a row's project link.
	open(t, ctx, srv.URL+"/?project=alice/web", `[data-test="row"]`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-test="row"] [data-test="project"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-test="project-name"]`))); err != nil {
		t.Fatalf("project page: %v", err)
	}
	if got := text(t, ctx, `[data-test="project-name"]`); got != "forgejo alice/web" {
		t.Errorf("project name %q", got)
	}
	if got := count(t, ctx, `[data-test="row"]`); got != 2 {
		t.Errorf("project rows: %d", got)
	}
	if got := count(t, ctx, `[data-test="chart-runs"] svg rect.bar`); got != 2 {
		t.Errorf("project runs chart: %d bars", got)
	}

	// At a phone's width nothing scrolls sideways.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/projects/forgejo/alice/demo", "/runs"} {
		open(t, ctx, srv.URL+p, `main`)
		width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if width > 390 {
			t.Errorf("%s at 390 px: scrollWidth %d", p, width)
		}
	}
}

// screenshot writes the page shown to docs/<name> under
// ALFRED_UPDATE_DOCS=1 (and to ALFRED_SCREENSHOT_DIR when set).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var dirs []string
	if os.Getenv("ALFRED_UPDATE_DOCS") == "1" {
		dirs = append(dirs, filepath.Join("..", "docs"))
	}
	if dir := os.Getenv("ALFRED_SCREENSHOT_DIR"); dir != "" {
		dirs = append(dirs, dir)
	}
	if len(dirs) == 0 {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
