package views

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium (Debian's chromium, which make test
// installs) for one test. It fails, never skips, when Chromium is missing,
// except under -short.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("ALFRED_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if testing.Short() {
			t.Skipf("no Chromium at %s (make test installs Debian's chromium)", path)
		}
		t.Fatalf("no Chromium at %s: run make test, which installs Debian's chromium, or set ALFRED_CHROMIUM", path)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(900, 1100),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	if _, err := chromedp.Run(ctx, chromedp.Title()); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

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
	if n := count(t, ctx, `[data-test="session-row"]`); n != 0 {
		t.Errorf("API-mode run shows %d session rows", n)
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
