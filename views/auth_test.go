package views

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/alchemic-studio/alfred/forges"
)

// oauthForge is an OAuth2 provider as a forge runs one: it authorizes
// whoever it is told to, exchanges the code for a token and says whose token
// it is.
type oauthForge struct {
	srv *httptest.Server
	who string // the person who "signs in" at the forge
}

func newOAuthForge(t *testing.T) *oauthForge {
	f := &oauthForge{who: "alice"}
	mux := http.NewServeMux()
	mux.HandleFunc("/login/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "alfred-app" || q.Get("response_type") != "code" {
			http.Error(w, "bad authorize request", 400)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=code-for-"+f.who+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		user, pass, _ := r.BasicAuth()
		if r.Form.Get("client_id") != "" {
			user, pass = r.Form.Get("client_id"), r.Form.Get("client_secret")
		}
		code := r.Form.Get("code")
		if user != "alfred-app" || pass != "app-secret" || !strings.HasPrefix(code, "code-for-") {
			http.Error(w, `{"error":"invalid_grant"}`, 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"tok-`+strings.TrimPrefix(code, "code-for-")+`","token_type":"bearer"}`)
	})
	mux.HandleFunc("/api/v1/user", func(w http.ResponseWriter, r *http.Request) {
		login, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer tok-")
		if !ok {
			http.Error(w, "unauthorized", 401)
			return
		}
		io.WriteString(w, `{"id":7,"login":"`+login+`"}`)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *oauthForge) access(pages string, perms map[string]forges.Permission, public ...string) *Access {
	return &Access{
		SignIns: []SignIn{{Forge: "forgejo",
			OAuth: &oauth2.Config{ClientID: "alfred-app", ClientSecret: "app-secret", RedirectURL: pages + "/oauth/callback",
				Endpoint: oauth2.Endpoint{AuthURL: f.srv.URL + "/login/oauth/authorize", TokenURL: f.srv.URL + "/login/oauth/access_token"}},
			UserURL: f.srv.URL + "/api/v1/user", LoginField: "login"}},
		Permission: func(_ context.Context, p forges.Project, login string) (forges.Permission, error) {
			return perms[login], nil
		},
		Public: func(p forges.Project) bool {
			for _, x := range public {
				if x == p.FullName() {
					return true
				}
			}
			return false
		},
		Key: []byte("0123456789abcdef0123456789abcdef"),
	}
}

func TestSignInAndAccess(t *testing.T) {
	f := newFixture(t)
	provider := newOAuthForge(t)
	d := f.deps()
	// The pages' URL is known only once served: route through a handler set after.
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	d.Access = provider.access(srv.URL, map[string]forges.Permission{"alice": forges.PermissionRead, "bob": forges.PermissionNone})
	h = serve(t, d).Config.Handler

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	runURL := srv.URL + "/runs/" + f.fresh
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Anonymous: the sign-in page, for pages and the API alike.
	if code, body := get(runURL); code != 401 || !strings.Contains(body, `data-test="signin"`) {
		t.Fatalf("anonymous run page: %d", code)
	}
	if code, body := get(srv.URL + "/api/runs/" + f.fresh); code != 401 || !strings.Contains(body, `"sign_in"`) {
		t.Fatalf("anonymous API: %d %s", code, body)
	}
	if code, _ := get(srv.URL + "/agents"); code != 401 {
		t.Fatalf("anonymous agents screen: %d", code)
	}

	// Alice signs in through the forge and lands back on the run page.
	code, body := get(srv.URL + "/login?next=/runs/" + f.fresh)
	if code != 200 || !strings.Contains(body, `data-test="session-name"`) {
		t.Fatalf("after sign-in: %d", code)
	}
	if !strings.Contains(body, `data-test="signout-button"`) || !strings.Contains(body, `name="csrf" value="`+d.Access.csrfToken("alice")+`"`) {
		t.Error("a signed-in page offers no sign-out form with alice's token")
	}
	if code, _ := get(srv.URL + "/mailboxes/" + f.mb.ID); code != 200 {
		t.Fatalf("alice's mailbox page: %d", code)
	}

	// A tampered cookie is nobody.
	u, _ := url.Parse(srv.URL)
	for _, c := range jar.Cookies(u) {
		if c.Name == sessionCookie {
			c.Value = strings.Replace(c.Value, "Y", "Z", 1) + "x"
			jar.SetCookies(u, []*http.Cookie{c})
		}
	}
	if code, _ := get(runURL); code != 401 {
		t.Fatalf("tampered cookie: %d", code)
	}

	// Bob signs in but may not read the project: 404, as if nothing were there.
	provider.who = "bob"
	if code, _ := get(srv.URL + "/login?next=/runs/" + f.fresh); code != 404 {
		t.Fatalf("bob: %d", code)
	}
	if code, _ := get(srv.URL + "/agents"); code != 200 {
		t.Fatalf("a signed-in person sees the agents screen: %d", code)
	}

	// A redirect to another site after sign-in is refused.
	provider.who = "alice"
	resp, err := (&http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(srv.URL + "/login?next=//evil.example")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := jar.Cookies(u); len(c) == 0 {
		t.Fatal("no state cookie")
	}
	for _, c := range resp.Cookies() {
		if c.Name == stateCookie && strings.Contains(c.Value, "evil") {
			t.Errorf("next kept an outside URL: %q", c.Value)
		}
	}
}

func TestPublicProjectsNeedNoSignIn(t *testing.T) {
	f := newFixture(t)
	d := f.deps()
	d.Access = newOAuthForge(t).access("http://unused", nil, "alice/demo")
	srv := serve(t, d)
	if code, body := get(t, srv.URL+"/runs/"+f.fresh); code != 200 || !strings.Contains(body, "5f2c-native-1") {
		t.Fatalf("public project run page: %d", code)
	}
}

// TestSignInPerForge: with two forges, a person signs in on each with its
// own OAuth2 application; a sign-in on one says nothing about the projects
// of the other, and the second sign-in keeps the first.
func TestSignInPerForge(t *testing.T) {
	f := newFixture(t)
	fj, gh := newOAuthForge(t), newOAuthForge(t)
	d := f.deps()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	asked := map[string]string{} // forge -> login the permission was asked for
	a := fj.access(srv.URL, nil)
	a.SignIns = append(a.SignIns, gh.access(srv.URL, nil).SignIns[0])
	a.SignIns[1].Forge = "github"
	a.Permission = func(_ context.Context, p forges.Project, login string) (forges.Permission, error) {
		asked[p.Forge] = login
		if p.Forge == "forgejo" && login == "alice" || p.Forge == "github" && login == "alice-gh" {
			return forges.PermissionRead, nil
		}
		return forges.PermissionNone, nil
	}
	d.Access = a
	h = serve(t, d).Config.Handler
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/runs/" + f.fresh)
	if code != 401 || !strings.Contains(body, "/login?forge=forgejo") || !strings.Contains(body, "/login?forge=github") {
		t.Fatalf("anonymous: %d, want a sign-in link per forge:\n%s", code, body)
	}
	if code, _ := get("/login?forge=forgejo&next=/runs/" + f.fresh); code != 200 {
		t.Fatalf("alice on forgejo, her run page: %d", code)
	}
	if code, _ := get("/projects/github/acme/rocket"); code != 401 {
		t.Fatalf("a GitHub project with a Forgejo sign-in only: %d, want the sign-in page", code)
	}
	if asked["github"] != "" {
		t.Fatalf("GitHub was asked about the Forgejo login %q", asked["github"])
	}
	gh.who = "alice-gh"
	if code, _ := get("/login?forge=github&next=/projects/github/acme/rocket"); code != 404 {
		t.Fatalf("after signing in on GitHub too: %d, want 404 (allowed, and the project has no records)", code)
	}
	if asked["github"] != "alice-gh" {
		t.Fatalf("GitHub asked about %q, want alice-gh", asked["github"])
	}
	if code, _ := get("/runs/" + f.fresh); code != 200 {
		t.Fatalf("the Forgejo sign-in was lost by the GitHub one: %d", code)
	}
	if code, _ := get("/login?forge=gitlab"); code != 503 {
		t.Fatalf("a forge without sign-in: %d", code)
	}
}
