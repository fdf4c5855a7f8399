package views

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/alchemic-studio/alfred/forges"
)

// Access decides who may read which project's pages: people signed in with
// the forge's OAuth2 who may read the project on the forge, and anyone for
// the projects configured public. A nil *Access leaves the pages open (used
// when no forge is configured, and in tests of the pages alone).
type Access struct {
	// OAuth is the forge's OAuth2 application; nil means nobody can sign in.
	OAuth *oauth2.Config
	// UserURL is the forge API's "current user" endpoint, read with the
	// person's token; LoginField is the JSON field holding the login.
	UserURL    string
	LoginField string
	// Permission asks the forge (with the bot's token) what login may do on p.
	Permission func(ctx context.Context, p forges.Project, login string) (forges.Permission, error)
	// Public tells the projects anyone may read without signing in.
	Public func(p forges.Project) bool
	// Key signs the session cookie.
	Key []byte
	// Client is used for the token exchange and the user lookup.
	Client *http.Client
	// Admins are the logins who may ask for a detection of the agent CLIs
	// (ALFRED_ADMINS).
	Admins []string
}

const (
	sessionCookie = "alfred_session"
	stateCookie   = "alfred_oauth_state"
	sessionTTL    = 12 * time.Hour
)

// errSignIn means the visitor must sign in first.
var errSignIn = errors.New("sign in to see this page")

// login returns the signed-in login of the request, or "".
func (a *Access) login(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return ""
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return ""
	}
	if !hmac.Equal([]byte(parts[2]), []byte(a.sign(parts[0]+"|"+parts[1]))) {
		return ""
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || time.Now().Unix() > exp {
		return ""
	}
	return parts[0]
}

func (a *Access) sign(s string) string {
	m := hmac.New(sha256.New, a.Key)
	m.Write([]byte(s))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// allow tells whether the request may read project p: nil, errSignIn for an
// anonymous visitor, or an error for a signed-in person without read access
// (answered 404, so a project's existence is not told).
func (a *Access) allow(r *http.Request, p forges.Project) error {
	if a == nil || (a.Public != nil && a.Public(p)) {
		return nil
	}
	who := a.login(r)
	if who == "" {
		return errSignIn
	}
	perm, err := a.Permission(r.Context(), p, who)
	if err != nil {
		return fmt.Errorf("permission of %s on %s: %w", who, p.FullName(), err)
	}
	if perm < forges.PermissionRead {
		return fmt.Errorf("%s may not read %s", who, p.FullName())
	}
	return nil
}

// admin returns the login of the request when it is signed in and one of the
// admins, else "". Without sign-in (a nil *Access) nobody is an admin.
func (a *Access) admin(r *http.Request) string {
	if a == nil {
		return ""
	}
	who := a.login(r)
	for _, x := range a.Admins {
		if who != "" && strings.EqualFold(x, who) {
			return who
		}
	}
	return ""
}

// csrfField is the form field that carries csrfToken.
const csrfField = "csrf"

// csrfToken ties a form to the signed-in login, so that another site cannot
// make a signed-in browser post it.
func (a *Access) csrfToken(login string) string { return a.sign("csrf\x00" + login) }

// checkCSRF tells whether the posted form carries login's token.
func (a *Access) checkCSRF(r *http.Request, login string) bool {
	return hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(a.csrfToken(login)))
}

// signedIn tells whether the request comes from someone signed in (pages
// that show no project's data, such as the agents screen).
func (a *Access) signedIn(r *http.Request) bool { return a == nil || a.login(r) != "" }

func (a *Access) loginPage(w http.ResponseWriter, r *http.Request) {
	if a.OAuth == nil {
		http.Error(w, "sign-in is not configured: set ALFRED_OAUTH_CLIENT_ID and ALFRED_OAUTH_CLIENT_SECRET", http.StatusServiceUnavailable)
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	state := base64.RawURLEncoding.EncodeToString(b)
	next := r.URL.Query().Get("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		next = "/"
	}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: state + "|" + next, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil, MaxAge: 600})
	http.Redirect(w, r, a.OAuth.AuthCodeURL(state), http.StatusFound)
}

func (a *Access) callback(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(stateCookie)
	state, next, _ := strings.Cut(cookieValue(c, err), "|")
	if state == "" || r.URL.Query().Get("state") != state {
		http.Error(w, "sign-in failed: the state does not match; try again", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	if a.Client != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, a.Client)
	}
	tok, err := a.OAuth.Exchange(ctx, r.URL.Query().Get("code"))
	if err != nil {
		http.Error(w, "sign-in failed: the forge refused the code", http.StatusBadGateway)
		return
	}
	who, err := a.whoIs(ctx, tok)
	if err != nil {
		http.Error(w, "sign-in failed: the forge did not say who you are", http.StatusBadGateway)
		return
	}
	exp := strconv.FormatInt(time.Now().Add(sessionTTL).Unix(), 10)
	value := who + "|" + exp
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(value + "|" + a.sign(value))),
		Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil, MaxAge: int(sessionTTL.Seconds())})
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Path: "/", MaxAge: -1})
	http.Redirect(w, r, next, http.StatusFound)
}

func cookieValue(c *http.Cookie, err error) string {
	if err != nil {
		return ""
	}
	return c.Value
}

// whoIs reads the login of the token's owner from the forge.
func (a *Access) whoIs(ctx context.Context, tok *oauth2.Token) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.UserURL, nil)
	if err != nil {
		return "", err
	}
	client := a.OAuth.Client(ctx, tok)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("user lookup: %s", resp.Status)
	}
	var u map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&u); err != nil {
		return "", fmt.Errorf("user lookup: %w", err)
	}
	login, _ := u[a.LoginField].(string)
	if login == "" || strings.ContainsAny(login, "|") {
		return "", fmt.Errorf("user lookup: no usable %q", a.LoginField)
	}
	return login, nil
}

func logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusFound)
}

// guard answers a request that may not see p: the sign-in page (401) for an
// anonymous visitor, 404 for a person without access. It returns false then.
func (d Deps) guard(w http.ResponseWriter, r *http.Request, p forges.Project) bool {
	err := d.Access.allow(r, p)
	switch {
	case err == nil:
		return true
	case errors.Is(err, errSignIn):
		d.signIn(w, r)
	default:
		d.Logger.Info("page refused", "path", r.URL.Path, "why", err)
		http.Error(w, "not found", http.StatusNotFound)
	}
	return false
}

func (d Deps) signIn(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": errSignIn.Error(), "sign_in": "/login?next=" + r.URL.Path})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	render(w, d.Logger, "signin.html", map[string]string{"Next": r.URL.Path})
}
