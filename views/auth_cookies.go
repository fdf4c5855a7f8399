package views

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/securecookie"

	"github.com/alchemic-studio/alfred/config"
)

// The sign-in cookies (the session, and the OAuth state while signing in)
// are signed and encrypted with gorilla/securecookie. Their keys are derived
// from secrets: Access.Keys (ALFRED_SESSION_KEYS), else Access.Key (derived
// from ALFRED_OAUTH_CLIENT_SECRET). The first secret signs; every one is
// accepted, so that a new secret can be put first while the cookies signed
// with the old ones are still in browsers. They are marked Secure when
// ALFRED_PUBLIC_URL is https: Alfred usually sits behind a reverse proxy that
// ends TLS, where the request itself says nothing of it.

// session is the signed-in person, in the session cookie; the cookie's
// signed timestamp makes it expire after sessionTTL.
type session struct {
	Logins map[string]string `json:"ls"` // by forge
}

// oauthState is the sign-in in progress, in the state cookie.
type oauthState struct {
	State string `json:"s"`
	// Verifier is the sign-in's PKCE code_verifier (oauth2.GenerateVerifier:
	// 32 random bytes, base64url), sent only with the token exchange.
	Verifier string `json:"v"`
	Forge    string `json:"f"`
	Next     string `json:"n"`
}

// stateTTL bounds the time between /login and the forge's callback.
const stateTTL = 600

// Configure takes from the configuration what the sign-in cookies need:
// Secure when ALFRED_PUBLIC_URL is https, and the secrets of
// ALFRED_SESSION_KEYS (when set, they replace Key). Call it before serving.
func (a *Access) Configure(c *config.Config) {
	if a == nil || c == nil {
		return
	}
	a.Secure = httpsURL(c.PublicURL)
	a.Keys = nil
	for _, k := range c.SessionKeys {
		a.Keys = append(a.Keys, []byte(k))
	}
}

// httpsURL tells whether the public URL is https.
func httpsURL(public string) bool {
	u, err := url.Parse(public)
	return err == nil && u.Scheme == "https" && u.Host != ""
}

// cookieKeys are the keys derived from one secret.
type cookieKeys struct {
	hash, block, csrf []byte
}

// keys derives the keys of every secret, the signing one first, once.
func (a *Access) keys() []cookieKeys {
	a.once.Do(func() {
		secrets := a.Keys
		if len(secrets) == 0 && len(a.Key) > 0 {
			secrets = [][]byte{a.Key}
		}
		if len(secrets) == 0 { // no secret: cookies live as long as the process
			secrets = [][]byte{[]byte(rand.Text())}
		}
		for _, s := range secrets {
			a.derived = append(a.derived, cookieKeys{hash: derive(s, "alfred cookie hash", 64),
				block: derive(s, "alfred cookie block", 32), csrf: derive(s, "alfred csrf", 32)})
		}
		for _, ttl := range []int{int(sessionTTL.Seconds()), stateTTL} {
			var codecs []securecookie.Codec
			for _, k := range a.derived {
				codecs = append(codecs, securecookie.New(k.hash, k.block).MaxAge(ttl).SetSerializer(securecookie.JSONEncoder{}))
			}
			a.codecs = append(a.codecs, codecs)
		}
	})
	return a.derived
}

func derive(secret []byte, purpose string, n int) []byte {
	k, err := hkdf.Key(sha256.New, secret, nil, purpose, n)
	if err != nil { // only for lengths sha256 cannot give
		panic(err)
	}
	return k
}

// codecsFor returns the codecs of the cookie name, the signing one first.
func (a *Access) codecsFor(name string) []securecookie.Codec {
	a.keys()
	if name == stateCookie {
		return a.codecs[1]
	}
	return a.codecs[0]
}

// setCookie writes the signed and encrypted value v in cookie name.
func (a *Access) setCookie(w http.ResponseWriter, r *http.Request, name string, v any, maxAge int) error {
	enc, err := securecookie.EncodeMulti(name, v, a.codecsFor(name)...)
	if err != nil {
		return err
	}
	http.SetCookie(w, a.cookie(r, name, enc, maxAge))
	return nil
}

// readCookie decodes cookie name into v; false when it is missing, expired,
// tampered with or signed with a key that is no longer accepted.
func (a *Access) readCookie(r *http.Request, name string, v any) bool {
	c, err := r.Cookie(name)
	if err != nil {
		return false
	}
	return securecookie.DecodeMulti(name, c.Value, v, a.codecsFor(name)...) == nil
}

// clearCookie removes cookie name from the browser.
func (a *Access) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, a.cookie(r, name, "", -1))
}

func (a *Access) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: a.Secure || r.TLS != nil, MaxAge: maxAge}
}

// csrfToken ties a form to the signed-in login, so that another site cannot
// make a signed-in browser post it.
func (a *Access) csrfToken(login string) string { return csrfMAC(a.keys()[0].csrf, login) }

// checkCSRF tells whether the posted form carries login's token, made with
// any of the accepted keys.
func (a *Access) checkCSRF(r *http.Request, login string) bool {
	got := []byte(r.PostFormValue(csrfField))
	for _, k := range a.keys() {
		if login != "" && hmac.Equal(got, []byte(csrfMAC(k.csrf, login))) {
			return true
		}
	}
	return false
}

func csrfMAC(key []byte, login string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("csrf\x00" + login))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// safeNext returns next when it is a path of this site to go back to after
// signing in, else "/". Only a path with no scheme and no host, starting with
// a single "/", with no backslash and no control character is kept: browsers
// read "/\evil.example" and "/\t/evil.example" as "//evil.example", another
// site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	if strings.ContainsFunc(next, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") ||
		strings.ContainsFunc(u.Path, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return "/"
	}
	return next
}
