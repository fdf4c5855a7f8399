package views

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/alchemic-studio/alfred/forges"
)

// oauthForge is an OAuth2 provider as a forge runs one: it authorizes
// whoever it is told to, exchanges the code for a token and says whose token
// it is. It insists on PKCE (S256) as RFC 7636 has a server do: the
// authorize request must carry a code_challenge, and the code is exchanged
// only with the code_verifier whose SHA-256 it is, once.
type oauthForge struct {
	srv *httptest.Server
	who string // the person who "signs in" at the forge

	mu         sync.Mutex
	grants     map[string]grant // code -> what it was issued for
	n          int
	challenges []string // the code_challenge of each authorize request
}

type grant struct{ who, challenge string }

func newOAuthForge(t *testing.T) *oauthForge {
	f := &oauthForge{who: "alice", grants: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/login/oauth/authorize", f.authorize)
	mux.HandleFunc("/login/oauth/access_token", f.exchange)
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

func (f *oauthForge) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	challenge := q.Get("code_challenge")
	if q.Get("client_id") != "alfred-app" || q.Get("response_type") != "code" {
		http.Error(w, "bad authorize request", 400)
		return
	}
	if q.Get("code_challenge_method") != "S256" || len(challenge) != 43 || q.Get("code_verifier") != "" {
		http.Error(w, "PKCE required: code_challenge_method=S256 and a code_challenge", 400)
		return
	}
	f.mu.Lock()
	f.n++
	code := fmt.Sprintf("code-%d", f.n)
	f.grants[code] = grant{who: f.who, challenge: challenge}
	f.challenges = append(f.challenges, challenge)
	f.mu.Unlock()
	http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
}

func (f *oauthForge) exchange(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	user, pass, _ := r.BasicAuth()
	if r.Form.Get("client_id") != "" {
		user, pass = r.Form.Get("client_id"), r.Form.Get("client_secret")
	}
	f.mu.Lock()
	g, issued := f.grants[r.Form.Get("code")]
	delete(f.grants, r.Form.Get("code")) // a code is used once, whatever comes of it
	f.mu.Unlock()
	sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
	if user != "alfred-app" || pass != "app-secret" || !issued ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		io.WriteString(w, `{"error":"invalid_grant"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"access_token":"tok-`+g.who+`","token_type":"bearer"}`)
}

// code follows authorize, the forge's authorize URL Alfred sent the
// browser to, and returns the code the forge sends back with it.
func (f *oauthForge) code(t *testing.T, authorize *url.URL) string {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(authorize.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || back.Query().Get("code") == "" {
		t.Fatalf("authorize: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return back.Query().Get("code")
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

	// Anonymous: a private project's run is not found (as a missing one
	// is), and the answer offers the sign-in, for pages and the API alike.
	if code, body := get(runURL); code != 404 || !strings.Contains(body, `data-test="signin"`) {
		t.Fatalf("anonymous run page: %d", code)
	}
	if code, body := get(srv.URL + "/api/runs/" + f.fresh); code != 404 || !strings.Contains(body, `"sign_in"`) {
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
	if code, _ := get(runURL); code != 404 {
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
	if code != 404 || !strings.Contains(body, "/login?forge=forgejo") || !strings.Contains(body, "/login?forge=github") {
		t.Fatalf("anonymous: %d, want a sign-in link per forge:\n%s", code, body)
	}
	if code, _ := get("/login?forge=forgejo&next=/runs/" + f.fresh); code != 200 {
		t.Fatalf("alice on forgejo, her run page: %d", code)
	}
	if code, body := get("/projects/github/acme/rocket"); code != 404 || !strings.Contains(body, "/login?forge=github") {
		t.Fatalf("a GitHub project with a Forgejo sign-in only: %d, want 404 offering the sign-in", code)
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

// TestSignInUsesPKCE: each sign-in has its own code_verifier, kept in the
// encrypted state cookie; the forge gets its S256 challenge on the
// authorize URL, never the verifier, and exchanges the code only with the
// verifier. A code taken on its way back (authorization code injection) is
// refused to another browser, whose state cookie holds another verifier;
// a state cookie without a verifier (made before PKCE) is refused.
func TestSignInUsesPKCE(t *testing.T) {
	provider := newOAuthForge(t)
	a := provider.access("http://alfred.example", nil)
	login := func() (*url.URL, *http.Cookie) {
		t.Helper()
		rec := httptest.NewRecorder()
		a.loginPage(rec, httptest.NewRequest("GET", "/login?next=/runs/x", nil))
		loc, err := url.Parse(rec.Header().Get("Location"))
		state := cookieNamed(rec.Result().Cookies(), stateCookie)
		if err != nil || rec.Code != http.StatusFound || state == nil {
			t.Fatalf("login: %d to %q", rec.Code, rec.Header().Get("Location"))
		}
		return loc, state
	}
	callback := func(code string, loc *url.URL, state *http.Cookie) int {
		t.Helper()
		req := httptest.NewRequest("GET", "/oauth/callback?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(loc.Query().Get("state")), nil)
		req.AddCookie(state)
		rec := httptest.NewRecorder()
		a.callback(rec, req)
		return rec.Code
	}

	victim, victimState := login()
	q := victim.Query()
	var st oauthState
	if !a.readCookie(&http.Request{Header: http.Header{"Cookie": {victimState.String()}}}, stateCookie, &st) {
		t.Fatal("the state cookie cannot be read back")
	}
	sum := sha256.Sum256([]byte(st.Verifier))
	switch {
	case q.Get("code_challenge_method") != "S256":
		t.Errorf("code_challenge_method %q, want S256", q.Get("code_challenge_method"))
	case len(st.Verifier) < 43 || strings.ContainsAny(st.Verifier, "+/="):
		t.Errorf("verifier %q: want 32 random bytes or more, base64url", st.Verifier)
	case q.Get("code_challenge") != base64.RawURLEncoding.EncodeToString(sum[:]):
		t.Errorf("code_challenge %q is not the S256 of the cookie's verifier", q.Get("code_challenge"))
	case strings.Contains(victim.String(), st.Verifier) || strings.Contains(victimState.Value, st.Verifier):
		t.Error("the verifier shows in the authorize URL or in the clear in the cookie")
	}

	attacker, attackerState := login()
	if attacker.Query().Get("code_challenge") == q.Get("code_challenge") {
		t.Fatal("two sign-ins share a verifier")
	}
	stolen := provider.code(t, victim) // the victim's code, taken on its way back
	if code := callback(stolen, attacker, attackerState); code != http.StatusBadGateway {
		t.Errorf("another browser's verifier with the victim's code: %d, want 502 (the forge refuses)", code)
	}
	if code := callback(provider.code(t, attacker), attacker, attackerState); code != http.StatusFound {
		t.Errorf("a sign-in with its own code and verifier: %d, want 302", code)
	}

	// A state cookie without a verifier (made before PKCE): refused, without
	// asking the forge.
	loc, _ := login()
	rec := httptest.NewRecorder()
	if err := a.setCookie(rec, httptest.NewRequest("GET", "/", nil), stateCookie, oauthState{State: loc.Query().Get("state"), Forge: "forgejo"}, stateTTL); err != nil {
		t.Fatal(err)
	}
	if code := callback(provider.code(t, loc), loc, cookieNamed(rec.Result().Cookies(), stateCookie)); code != http.StatusBadRequest {
		t.Errorf("a state cookie without a verifier: %d, want 400", code)
	}
}
