package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/internal/browsertest"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2ESignIn: the OAuth2 sign-in to the pages on the real Forgejo, in
// Chromium, through the built binary. An OAuth2 application is made through
// the forge's API; the bot works an issue on two private projects of alice:
// "readable", where bob is a reader, and "secret", where he is not. Bob
// asks for the readable project's run, is sent to sign in, signs in on the
// forge's own login form, consents, and lands back on that run's page; the
// secret project's run, its JSON and its live stream answer him as a
// missing one does (404). Carol, who may read neither, signs in too and is
// refused everywhere, the readable run's page, JSON and live stream
// included. Without a session, a private run answers as a missing one,
// with the way to sign in.
func TestE2ESignIn(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Forgejo)
	readable := newGiteaWorld(t, in)
	secret := newGiteaWorld(t, in)
	for _, w := range []*giteaWorld{readable, secret} {
		w.repo.SetPrivate(t, true)
	}
	readable.repo.SetPermission(t, "bob", forges.PermissionRead)
	in.EnsureUser(t, "carol")
	passwords := map[string]string{"bob": in.SetPassword(t, "bob"), "carol": in.SetPassword(t, "carol")}

	s := start(t, readable, func(t testing.TB, b *bot, _, _ string) []string {
		id, sec := in.NewOAuthApp(t, "http://"+b.addr+"/oauth/callback")
		return []string{"ALFRED_PUBLIC_PROJECTS=", "ALFRED_OAUTH_CLIENT_ID=" + id, "ALFRED_OAUTH_CLIENT_SECRET=" + sec}
	})
	if out := s.b.run("labels", "sync", "-project", secret.project()); !strings.Contains(out, "19 labels created") {
		t.Fatalf("labels sync: %s", out)
	}
	secret.hook("http://"+s.b.addr+"/webhooks/forgejo", "s3cret")
	runs := map[*giteaWorld]string{}
	for _, w := range []*giteaWorld{readable, secret} {
		n := w.openIssue("Greet the users", "The demo should greet its users.", "type::task")
		key := state.MailboxKey{Forge: "forgejo", Owner: w.repo.Owner, Project: w.repo.Name, Kind: state.KindIssue, IID: n}
		w.assign(n)
		waitFor(t, 3*time.Minute, "the analysis of "+w.project(), func() (ok bool) {
			s.b.look(func(st *state.Store) {
				m, err := st.Mailbox(key)
				if err != nil || m.Status != "waiting_validation" || m.ActiveRunID != "" {
					return
				}
				if rs, _ := st.Runs(m.ID); len(rs) > 0 {
					runs[w], ok = rs[0].ID, true
				}
			})
			return ok
		})
	}
	base := "http://" + s.b.addr
	if code, body := fetch(t, base+"/api/runs/"+runs[readable]); code != http.StatusNotFound || !strings.Contains(body, `"sign_in"`) {
		t.Errorf("the API without a session: %d %s; want 404 (as a missing run) with the way to sign in", code, body)
	}

	// Bob: from the run he asked for, through the forge's login and consent, back to it.
	bob := browsertest.Start(t, 2*time.Minute)
	signIn(t, bob, in, base+"/runs/"+runs[readable], "bob", passwords["bob"])
	if got := location(t, bob); got != base+"/runs/"+runs[readable] {
		t.Errorf("bob landed on %s, want the run he asked for", got)
	}
	if page := pageText(t, bob); !strings.Contains(page, "Run "+runs[readable][:8]) || !strings.Contains(page, readable.project()+" #1") {
		t.Errorf("bob's run page does not show the run:\n%s", page)
	}
	for _, path := range []string{"/runs/" + runs[secret], "/api/runs/" + runs[secret], "/runs/" + runs[secret] + "/live"} {
		if code := browserGet(t, bob, base+path); code != http.StatusNotFound {
			t.Errorf("bob, %s: %d, want 404 (a private project he may not read)", path, code)
		}
	}
	navigate(t, bob, base+"/runs/00000000-0000-0000-0000-000000000000")
	missing := pageText(t, bob)
	navigate(t, bob, base+"/runs/"+runs[secret])
	if page := pageText(t, bob); page != missing {
		t.Errorf("bob sees the secret run's page unlike a missing one's:\n%s\n---\n%s", page, missing)
	}

	// Carol may read neither project: refused everywhere, once signed in.
	carol := browsertest.Start(t, 2*time.Minute)
	signIn(t, carol, in, base+"/runs/"+runs[readable], "carol", passwords["carol"])
	for _, w := range []*giteaWorld{readable, secret} {
		for _, path := range []string{"/runs/" + runs[w], "/api/runs/" + runs[w], "/runs/" + runs[w] + "/live"} {
			if code := browserGet(t, carol, base+path); code != http.StatusNotFound {
				t.Errorf("carol, %s: %d, want 404", path, code)
			}
		}
	}
	if code := browserGet(t, carol, base+"/api/runs"); code != http.StatusOK {
		t.Errorf("carol, /api/runs: %d", code)
	} else if body := pageText(t, carol); strings.Contains(body, runs[readable]) || strings.Contains(body, runs[secret]) {
		t.Errorf("carol's run list names a run she may not read:\n%s", body)
	}
}

// signIn opens page (which asks to sign in), follows its sign-in link to the
// forge's login form, signs in as login and consents to the application:
// the browser ends where the bot sends it back.
func signIn(t *testing.T, ctx context.Context, in *giteatest.Instance, page, login, password string) {
	t.Helper()
	navigate(t, ctx, page)
	for _, step := range []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"find the sign-in link", chromedp.WaitVisible(chromedp.CSS(`a[data-test="signin-link"]`))},
		{"follow it", chromedp.Click(chromedp.CSS(`a[data-test="signin-link"]`))},
		{"find the forge's login form", chromedp.WaitVisible(chromedp.CSS(`#user_name`))},
		{"type the login", chromedp.SendKeys(chromedp.CSS(`#user_name`), login)},
		{"type the password", chromedp.SendKeys(chromedp.CSS(`#password`), password)},
		{"sign in", chromedp.Submit(chromedp.CSS(`#password`))},
		{"find the consent", chromedp.WaitVisible(chromedp.CSS(`#authorize-app`))},
		{"consent", chromedp.Click(chromedp.CSS(`#authorize-app`))},
	} {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(sctx, step.do)
		cancel()
		if err != nil {
			t.Fatalf("%s signs in on %s: %s: %v (at %s)\n%s", login, in.URL, step.what, err, location(t, ctx), pageText(t, ctx))
		}
	}
	// The page where a timeout left the browser says which side held it
	// (seen once in a loaded run, with no sign-in in the bot's log).
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		at := location(t, ctx)
		if u, err := url.Parse(at); err == nil && !strings.HasPrefix(in.URL, u.Scheme+"://"+u.Host) && u.Path != "/oauth/callback" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not back on the bot's pages after the consent: at %s\n%s", login, at, pageText(t, ctx))
		}
	}
}

func navigate(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
}

// browserGet loads u in the browser (its cookies) and answers the status.
func browserGet(t *testing.T, ctx context.Context, u string) int {
	t.Helper()
	navigate(t, ctx, u)
	code, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType("navigation")[0].responseStatus`))
	if err != nil {
		t.Fatalf("the status of %s: %v", u, err)
	}
	return code
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatalf("location: %v", err)
	}
	return u
}

func pageText(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return strings.TrimSpace(s)
}

// fetch is a GET without cookies: its status and body.
func fetch(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
