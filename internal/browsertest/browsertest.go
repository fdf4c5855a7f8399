// Package browsertest starts the headless Chromium the suite's browser
// tests drive (Debian's chromium, which make test installs), for the pages'
// tests and the end-to-end sign-in.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Start starts headless Chromium for one test, with a fresh profile (no
// cookies) and the flags this closed network needs, and returns its
// context, bounded by timeout. It fails, never skips, when Chromium is
// missing, except under -short. ALFRED_CHROMIUM names another binary.
func Start(t testing.TB, timeout time.Duration) context.Context {
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
	ctx, cancel3 := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel3)
	if _, err := chromedp.Run(ctx, chromedp.Title()); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}
