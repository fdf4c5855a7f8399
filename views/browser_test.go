package views

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/alchemic-studio/alfred/internal/browsertest"
)

// browser starts headless Chromium for one test (browsertest.Start).
func browser(t *testing.T) context.Context { return browsertest.Start(t, 90*time.Second) }

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0)))
	if err != nil {
		t.Fatalf("query %s: %v", sel, err)
	}
	return len(nodes)
}

// open loads a page and waits until sel is visible.
func open(t *testing.T, ctx context.Context, url, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
}

// TestPagesInABrowser reads the run pages and the agents screen as a person
// sees them, in headless Chromium.
func TestPagesInABrowser(t *testing.T) {
	f := newFixture(t)
	srv := serve(t, f.deps())
	ctx := browser(t)

	open(t, ctx, srv.URL+"/runs/"+f.resumed, `[data-test="session-row"]`)
	if got := text(t, ctx, `[data-test="session-name"]`); got != "agent/issue-7-add-a-greeting" {
		t.Errorf("session name %q", got)
	}
	if got := text(t, ctx, `[data-test="native-id"]`); got != "5f2c-native-1" {
		t.Errorf("native id %q", got)
	}
	if got := text(t, ctx, `[data-test="session-mode"]`); got != "resumed" {
		t.Errorf("session mode %q", got)
	}

	open(t, ctx, srv.URL+"/runs/"+f.fresh, `[data-test="session-mode"]`)
	if got := text(t, ctx, `[data-test="session-mode"]`); got != "fresh (no prior session)" {
		t.Errorf("fresh reason %q", got)
	}
	if got := text(t, ctx, `[data-test="log"]`); strings.Contains(got, "sk-live") || !strings.Contains(got, "[redacted]") {
		t.Errorf("log shows %q", got)
	}
	if dir := os.Getenv("ALFRED_SCREENSHOT_DIR"); dir != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run-page.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	open(t, ctx, srv.URL+"/runs/"+f.apiRun, `[data-test="phase"]`)
	if n := count(t, ctx, `[data-test="session-name"]`); n != 0 {
		t.Errorf("API-mode run shows %d sessions", n)
	}
	if got := text(t, ctx, `[data-test="no-session"]`); got != "the adapter does not declare resumable sessions" {
		t.Errorf("API-mode run: why no session %q", got)
	}

	open(t, ctx, srv.URL+"/agents", `[data-test="agents"]`)
	if got := text(t, ctx, `[data-test="agent-codex"] [data-test="why-not"]`); got != "not detected on the image runner" {
		t.Errorf("codex why-not %q", got)
	}
	if got := text(t, ctx, `[data-test="agent-claude-code"] [data-test="resumable"]`); got != "resumable" {
		t.Errorf("claude-code %q", got)
	}

	// With access control, an anonymous visitor gets the not-found page,
	// which offers the sign-in.
	d := f.deps()
	d.Access = newOAuthForge(t).access("http://unused", nil)
	guarded := serve(t, d)
	open(t, ctx, guarded.URL+"/runs/"+f.resumed, `[data-test="signin"]`)
	if n := count(t, ctx, `[data-test="session-row"]`); n != 0 {
		t.Error("the sign-in page shows the run")
	}
	if got := text(t, ctx, `[data-test="signin-link"]`); got != "Sign in with the forge" {
		t.Errorf("sign-in link %q", got)
	}
}
