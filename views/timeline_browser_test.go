package views

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTimelineInABrowser reads a run's timeline and the mailbox's session
// as a person sees them: a tool result stays folded until its summary is
// clicked, an edited file leads to the pushed commit, secrets are hidden,
// and the session shows where each run resumed.
func TestTimelineInABrowser(t *testing.T) {
	f := withSteps(t, newFixture(t))
	srv := serve(t, f.deps())
	ctx := browser(t)

	open(t, ctx, srv.URL+"/runs/"+f.fresh, `[data-test="timeline"]`)
	result := `[data-test="tool-result"] [data-test="result-text"]`
	if visible(t, ctx, result) {
		t.Errorf("the tool result is unfolded before a click")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-test="tool-result"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(result))); err != nil {
		t.Fatalf("unfold the tool result: %v", err)
	}
	if got := text(t, ctx, result); got != "exit 1: [redacted] refused" {
		t.Errorf("tool result %q", got)
	}
	if got := text(t, ctx, `[data-test="args"]`); strings.Contains(got, "sk-live") || !strings.Contains(got, "[redacted]") {
		t.Errorf("call args %q", got)
	}
	attrs, err := chromedp.Run(ctx, chromedp.Attributes(chromedp.CSS(`[data-test="edited-file"]`)))
	if err != nil {
		t.Fatal(err)
	}
	href := attrs["href"]
	if want := "http://forge.test/alice/demo/commit/" + headSHA; href != want {
		t.Errorf("edited file links to %q, want %q", href, want)
	}
	shoot(t, ctx, "run-timeline.png")

	open(t, ctx, srv.URL+"/mailboxes/"+f.mb.ID, `[data-test="session"]`)
	if n := count(t, ctx, `[data-test="session-marker"]`); n != 2 {
		t.Fatalf("%d run markers in the session, want 2", n)
	}
	markers := []string{
		text(t, ctx, `[data-test="session-marker"][data-run="`+f.fresh+`"]`),
		text(t, ctx, `[data-test="session-marker"][data-run="`+f.resumed+`"]`),
	}
	if !strings.HasSuffix(markers[0], "(analysis) fresh (no prior session)") || !strings.HasSuffix(markers[1], "(development) resumed") {
		t.Errorf("markers %q", markers)
	}
	if visible(t, ctx, `[data-test="session"] `+result) {
		t.Errorf("the session's tool result is unfolded")
	}
	if got := text(t, ctx, `[data-test="session"]`); strings.Contains(got, "sk-live") {
		t.Errorf("the session shows a secret")
	}
	shoot(t, ctx, "mailbox-session.png")
}

// visible: the first element sel matches is displayed.
func visible(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	js := `(function(){var e=document.querySelector(` + jsString(sel) + `);return !!e && e.checkVisibility();})()`
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
	if err != nil {
		t.Fatalf("is %s visible: %v", sel, err)
	}
	return shown
}

// shoot saves the page as name under ALFRED_SCREENSHOT_DIR, when set.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("ALFRED_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
