package views

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

// agentsSite serves the pages with sign-in through a fake forge, a detector
// that counts requests, and ALFRED_ADMINS = Alice.
type agentsSite struct {
	url      string
	provider *oauthForge
	asked    *atomic.Int32
}

func newAgentsSite(t *testing.T, redetect bool) agentsSite {
	t.Helper()
	f := newFixture(t)
	s := agentsSite{provider: newOAuthForge(t), asked: new(atomic.Int32)}
	d := f.deps()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	d.Access = s.provider.access(srv.URL, map[string]forges.Permission{"alice": forges.PermissionAdmin, "bob": forges.PermissionWrite})
	d.Access.Admins = []string{"Alice"} // logins compare as the forges do, ignoring case
	if redetect {
		d.Redetect = func() { s.asked.Add(1) }
	}
	h = serve(t, d).Config.Handler
	return s
}

// as signs who in and returns a browser that keeps the session, and does not
// follow redirects.
func (s agentsSite) as(t *testing.T, who string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if who == "" {
		return c
	}
	s.provider.who = who
	if code, _ := fetch(t, c, http.MethodGet, s.url+"/login?next=/agents", nil); code != http.StatusOK {
		t.Fatalf("%s signs in: %d", who, code)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func fetch(t *testing.T, c *http.Client, method, u string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc
	}
	return resp.StatusCode, string(b)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestDetectAgainButton: only an admin is offered the button; a post
// without the admin's form token is refused and asks nothing; the admin's
// form asks the detector once and comes back to the screen saying so.
func TestDetectAgainButton(t *testing.T) {
	s := newAgentsSite(t, true)
	alice, bob := s.as(t, "alice"), s.as(t, "bob")

	_, page := fetch(t, alice, http.MethodGet, s.url+"/agents", nil)
	m := csrfInput.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `data-test="detect-again"`) {
		t.Fatalf("the admin is not offered the button:\n%s", page)
	}
	if !strings.Contains(page, `data-test="detected-at">at 2026-11-30 09:00 UTC`) {
		t.Errorf("the screen does not show when claude-code was detected:\n%s", page)
	}
	aliceToken := m[1]
	_, page = fetch(t, bob, http.MethodGet, s.url+"/agents", nil)
	if strings.Contains(page, "detect-again") || !strings.Contains(page, `data-test="agents"`) {
		t.Errorf("a person who is not an admin is offered the button:\n%s", page)
	}

	refused := []struct {
		name   string
		client *http.Client
		form   url.Values
	}{
		{"anonymous", s.as(t, ""), url.Values{"csrf": {aliceToken}}},
		{"not an admin, with the admin's token", bob, url.Values{"csrf": {aliceToken}}},
		{"admin without a token", alice, url.Values{}},
		{"admin with a bad token", alice, url.Values{"csrf": {aliceToken[:len(aliceToken)-2] + "xx"}}},
	}
	for _, tt := range refused {
		if code, body := fetch(t, tt.client, http.MethodPost, s.url+"/agents/detect", tt.form); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", tt.name, code, body)
		}
	}
	if n := s.asked.Load(); n != 0 {
		t.Fatalf("refused posts asked for %d detections", n)
	}

	code, loc := fetch(t, alice, http.MethodPost, s.url+"/agents/detect", url.Values{"csrf": {aliceToken}})
	if code != http.StatusSeeOther || loc != "/agents?detect=requested" {
		t.Fatalf("the admin's form: %d %q, want 303 to the screen", code, loc)
	}
	if n := s.asked.Load(); n != 1 {
		t.Fatalf("the admin's form asked for %d detections, want 1", n)
	}
	if _, page := fetch(t, alice, http.MethodGet, s.url+loc, nil); !strings.Contains(page, `data-test="detect-requested"`) {
		t.Errorf("the screen does not say a detection was requested:\n%s", page)
	}
}

// TestNoDetectButtonWithoutDetectorOrSignIn: a server that detects nothing
// offers no button and takes no post; open pages (no sign-in) have no admin.
func TestNoDetectButtonWithoutDetectorOrSignIn(t *testing.T) {
	s := newAgentsSite(t, false)
	alice := s.as(t, "alice")
	if _, page := fetch(t, alice, http.MethodGet, s.url+"/agents", nil); strings.Contains(page, "detect-again") {
		t.Errorf("a server without detector offers the button:\n%s", page)
	}
	if code, _ := fetch(t, alice, http.MethodPost, s.url+"/agents/detect", url.Values{}); code == http.StatusSeeOther {
		t.Errorf("a server without detector took the post")
	}

	f := newFixture(t)
	d := f.deps() // Access nil: the pages are open, and nobody is an admin
	asked := 0
	d.Redetect = func() { asked++ }
	srv := serve(t, d)
	if _, page := get(t, srv.URL+"/agents"); strings.Contains(page, "detect-again") || !strings.Contains(page, `data-test="agents"`) {
		t.Errorf("open pages offer the button:\n%s", page)
	}
	if code, _ := fetch(t, http.DefaultClient, http.MethodPost, srv.URL+"/agents/detect", url.Values{"csrf": {"x"}}); code != http.StatusForbidden || asked != 0 {
		t.Errorf("open pages: post answered %d, %d detections asked", code, asked)
	}
}
