package views

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/config"
)

// signedCookie is the session cookie a signs for login.
func signedCookie(t *testing.T, a *Access, login string) *http.Cookie {
	t.Helper()
	rec := httptest.NewRecorder()
	if err := a.setCookie(rec, httptest.NewRequest("GET", "/", nil), sessionCookie, session{Logins: map[string]string{"forgejo": login}}, 60); err != nil {
		t.Fatal(err)
	}
	return rec.Result().Cookies()[0]
}

func cookieNamed(cs []*http.Cookie, name string) *http.Cookie {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Behind a reverse proxy that ends TLS the request is plain HTTP: the
// cookies are Secure when, and only when, the public URL is https.
func TestCookiesSecureFromPublicURL(t *testing.T) {
	provider := newOAuthForge(t)
	for _, tc := range []struct {
		public string
		secure bool
	}{
		{"https://alfred.example", true},
		{"HTTPS://alfred.example/", true},
		{"http://alfred.example", false},
		{"", false},
	} {
		t.Run(tc.public, func(t *testing.T) {
			a := provider.access("https://alfred.example", nil)
			a.Configure(&config.Config{PublicURL: tc.public})
			req := httptest.NewRequest("GET", "http://127.0.0.1:8080/login?next=/runs/x", nil)
			req.Header.Set("X-Forwarded-Proto", "https")
			rec := httptest.NewRecorder()
			a.loginPage(rec, req)
			state := cookieNamed(rec.Result().Cookies(), stateCookie)
			if rec.Code != http.StatusFound || state == nil {
				t.Fatalf("login: %d, cookies %v", rec.Code, rec.Result().Cookies())
			}
			loc, _ := url.Parse(rec.Header().Get("Location"))
			req = httptest.NewRequest("GET", "http://127.0.0.1:8080/oauth/callback?code="+provider.code(t, loc)+"&state="+url.QueryEscape(loc.Query().Get("state")), nil)
			req.Header.Set("X-Forwarded-Proto", "https")
			req.AddCookie(state)
			rec = httptest.NewRecorder()
			a.callback(rec, req)
			sess := cookieNamed(rec.Result().Cookies(), sessionCookie)
			if rec.Code != http.StatusFound || sess == nil || rec.Header().Get("Location") != "/runs/x" {
				t.Fatalf("callback: %d to %q, cookies %v", rec.Code, rec.Header().Get("Location"), rec.Result().Cookies())
			}
			for _, c := range []*http.Cookie{state, sess} {
				if c.Secure != tc.secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
					t.Errorf("%s: Secure %v HttpOnly %v SameSite %v; want Secure %v, HttpOnly, Lax", c.Name, c.Secure, c.HttpOnly, c.SameSite, tc.secure)
				}
			}
			if strings.Contains(state.Value, "runs") || strings.Contains(sess.Value, "alice") {
				t.Error("the cookies are not encrypted")
			}
		})
	}
}

// The first key signs, every key is accepted: a cookie of the old key stays
// good after a new one is put first, until the old one is dropped.
func TestSessionKeyRotation(t *testing.T) {
	const oldKey, newKey, otherKey = "old-key-0123456789abcdef0123456789", "new-key-0123456789abcdef0123456789", "someone-else-0123456789abcdef01234"
	keyed := func(keys ...string) *Access {
		a := &Access{}
		a.Configure(&config.Config{SessionKeys: keys})
		return a
	}
	tamper := func(c *http.Cookie) *http.Cookie {
		b := []byte(c.Value)
		b[len(b)/2] ^= 1
		return &http.Cookie{Name: c.Name, Value: string(b)}
	}
	fromOld := signedCookie(t, keyed(oldKey), "alice")
	// The hand-made format before securecookie: login|expiry|hmac, base64.
	legacy := &http.Cookie{Name: sessionCookie, Value: "YWxpY2V8OTk5OTk5OTk5OXxzaWc"}
	// A state cookie is not a session, even signed with the right key.
	rec := httptest.NewRecorder()
	keyed(newKey).setCookie(rec, httptest.NewRequest("GET", "/", nil), stateCookie, session{Logins: map[string]string{"forgejo": "alice"}}, 60)
	swapped := rec.Result().Cookies()[0]
	swapped.Name = sessionCookie

	for _, tc := range []struct {
		name   string
		reader *Access
		cookie *http.Cookie
		want   string
	}{
		{"signed by the old key, after rotation", keyed(newKey, oldKey), fromOld, "alice"},
		{"signed by the new key", keyed(newKey, oldKey), signedCookie(t, keyed(newKey, oldKey), "alice"), "alice"},
		{"old key dropped", keyed(newKey), fromOld, ""},
		{"tampered", keyed(newKey, oldKey), tamper(fromOld), ""},
		{"foreign key", keyed(newKey, oldKey), signedCookie(t, keyed(otherKey), "alice"), ""},
		{"hand-made legacy format", keyed(newKey, oldKey), legacy, ""},
		{"state cookie as session", keyed(newKey), swapped, ""},
		{"key derived from the OAuth secret", &Access{Key: []byte("k1")}, signedCookie(t, &Access{Key: []byte("k1")}, "bob"), "bob"},
		{"another OAuth secret", &Access{Key: []byte("k2")}, signedCookie(t, &Access{Key: []byte("k1")}, "bob"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.AddCookie(tc.cookie)
			if got := tc.reader.login(req); got != tc.want {
				t.Errorf("login %q, want %q", got, tc.want)
			}
		})
	}

	// The agents screen's form token follows the same rotation.
	token := keyed(oldKey).csrfToken("alice")
	post := func(tok string) *http.Request {
		r := httptest.NewRequest("POST", "/agents/detect", strings.NewReader(url.Values{csrfField: {tok}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	if !keyed(newKey, oldKey).checkCSRF(post(token), "alice") {
		t.Error("a form token of the old key is refused during the rotation")
	}
	if keyed(newKey).checkCSRF(post(token), "alice") || keyed(newKey, oldKey).checkCSRF(post(token), "bob") {
		t.Error("a form token is accepted for another login or a dropped key")
	}
}

func TestLogoutOnlyByPostWithToken(t *testing.T) {
	f := newFixture(t)
	d := f.deps()
	d.Access = newOAuthForge(t).access("http://unused", nil)
	srv := serve(t, d)
	alice := signedCookie(t, d.Access, "alice")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for _, tc := range []struct {
		name    string
		method  string
		form    url.Values
		code    int
		cleared bool
	}{
		{"GET shows a form and keeps the session", "GET", nil, http.StatusOK, false},
		{"POST without a token", "POST", url.Values{}, http.StatusForbidden, false},
		{"POST with a bad token", "POST", url.Values{csrfField: {"forged"}}, http.StatusForbidden, false},
		{"POST with the token of another login", "POST", url.Values{csrfField: {d.Access.csrfToken("mallory")}}, http.StatusForbidden, false},
		{"POST with the token", "POST", url.Values{csrfField: {d.Access.csrfToken("alice")}}, http.StatusSeeOther, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+"/logout", strings.NewReader(tc.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(alice)
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			c := cookieNamed(resp.Cookies(), sessionCookie)
			cleared := c != nil && c.MaxAge < 0
			if resp.StatusCode != tc.code || cleared != tc.cleared {
				t.Errorf("%d, session cleared %v; want %d, %v", resp.StatusCode, cleared, tc.code, tc.cleared)
			}
		})
	}

	// The form GET shows posts back with the token that signs out.
	req, _ := http.NewRequest("GET", srv.URL+"/logout", nil)
	req.AddCookie(alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	_, _ = io.Copy(&body, resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), `method="post" action="/logout"`) || !strings.Contains(body.String(), `value="`+d.Access.csrfToken("alice")+`"`) {
		t.Errorf("GET /logout does not show the sign-out form:\n%s", body.String())
	}
}

func TestNextStaysOnThisSite(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/ok?x=1", "/ok?x=1"},
		{"/runs/abc", "/runs/abc"},
		{"/mailboxes/forgejo/alice/demo/issue/3#end", "/mailboxes/forgejo/alice/demo/issue/3#end"},
		{"/", "/"},
		{"", "/"},
		{`/\evil.example`, "/"},
		{`\/evil.example`, "/"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"https://evil.example", "/"},
		{"http:evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"/%5Cevil", "/"},
		{"/%5cevil", "/"},
		{"/%2F/evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"evil.example", "/"},
		{"/%zz", "/"},
	} {
		if got := safeNext(tc.next); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}

	// Through sign-in: the callback goes back only to a path of this site.
	provider := newOAuthForge(t)
	a := provider.access("http://alfred.example", nil)
	for _, tc := range []struct{ next, want string }{
		{`/\evil.example`, "/"},
		{"//evil.example", "/"},
		{"https://evil.example", "/"},
		{"/%5Cevil", "/"},
		{"/ok?x=1", "/ok?x=1"},
	} {
		rec := httptest.NewRecorder()
		a.loginPage(rec, httptest.NewRequest("GET", "/login?next="+url.QueryEscape(tc.next), nil))
		loc, _ := url.Parse(rec.Header().Get("Location"))
		req := httptest.NewRequest("GET", "/oauth/callback?code="+provider.code(t, loc)+"&state="+url.QueryEscape(loc.Query().Get("state")), nil)
		req.AddCookie(cookieNamed(rec.Result().Cookies(), stateCookie))
		rec = httptest.NewRecorder()
		a.callback(rec, req)
		if got := rec.Header().Get("Location"); rec.Code != http.StatusFound || got != tc.want {
			t.Errorf("next=%q: %d to %q, want %q", tc.next, rec.Code, got, tc.want)
		}
	}
}
