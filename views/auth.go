package views

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/securecookie"
	"golang.org/x/oauth2"

	"github.com/alchemic-studio/alfred/forges"
)

// Access decides who may read which project's pages: people signed in with
// a forge's OAuth2 who may read the project on that forge, and anyone for
// the projects configured public. One person may be signed in on several
// forges at once. A nil *Access leaves the pages open (used when no forge is
// configured, and in tests of the pages alone).
type Access struct {
	// SignIns are the forges people sign in with; none: nobody can.
	SignIns []SignIn
	// Permission asks p's forge (with the bot's token) what login may do on p.
	Permission func(ctx context.Context, p forges.Project, login string) (forges.Permission, error)
	// Public tells the projects anyone may read without signing in.
	Public func(p forges.Project) bool
	// Key is the secret the sign-in cookies' keys are derived from when Keys
	// is empty (the start derives it from ALFRED_OAUTH_CLIENT_SECRET).
	Key []byte
	// Keys are the secrets of ALFRED_SESSION_KEYS: the first signs and
	// encrypts the cookies, all are accepted (key rotation).
	Keys [][]byte
	// Secure marks the cookies Secure: ALFRED_PUBLIC_URL is https. Behind a
	// reverse proxy that ends TLS the request cannot tell it. See Configure.
	Secure bool
	// Client is used for the token exchange and the user lookup.
	Client *http.Client
	// Admins are the logins who may ask for a detection of the agent CLIs
	// (ALFRED_ADMINS).
	Admins []string

	once    sync.Once
	derived []cookieKeys
	codecs  [][]securecookie.Codec // for the session, for the state
}

const (
	sessionCookie = "alfred_session"
	stateCookie   = "alfred_oauth_state"
	sessionTTL    = 12 * time.Hour
)

// errSignIn means the visitor must sign in first.
var errSignIn = errors.New("sign in to see this page")

// SignIn is one forge's OAuth2 sign-in.
type SignIn struct {
	// Forge is the forge's name (Project.Forge of its projects).
	Forge string
	// OAuth is the forge's OAuth2 application.
	OAuth *oauth2.Config
	// UserURL is the forge API's "current user" endpoint, read with the
	// person's token; LoginField is the JSON field holding the login.
	UserURL    string
	LoginField string
}

// signIn is the sign-in of forge, or, for "", the only one; nil if none.
func (a *Access) signIn(forge string) *SignIn {
	for i, s := range a.SignIns {
		if s.Forge == forge || forge == "" && len(a.SignIns) == 1 {
			return &a.SignIns[i]
		}
	}
	return nil
}

// logins returns the request's signed-in logins by forge (nil: nobody).
func (a *Access) logins(r *http.Request) map[string]string {
	var s session
	if !a.readCookie(r, sessionCookie, &s) {
		return nil
	}
	return s.Logins
}

// login returns who the request is signed in as, for the header and the
// sign-out form: "login" on one forge, "forge:login, ..." on several; "" when
// nobody.
func (a *Access) login(r *http.Request) string {
	ls := a.logins(r)
	if len(ls) == 1 {
		for _, l := range ls {
			return l
		}
	}
	var all []string
	for _, f := range slices.Sorted(maps.Keys(ls)) {
		all = append(all, f+":"+ls[f])
	}
	return strings.Join(all, ", ")
}

// allow tells whether the request may read project p: nil, errSignIn for an
// anonymous visitor, or an error for a signed-in person without read access
// (answered 404, so a project's existence is not told).
func (a *Access) allow(r *http.Request, p forges.Project) error {
	if a == nil || (a.Public != nil && a.Public(p)) {
		return nil
	}
	who := a.logins(r)[p.Forge]
	if who == "" {
		return errSignIn // on p's forge: a sign-in elsewhere says nothing here
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
	for f, who := range a.logins(r) {
		for _, x := range a.Admins {
			if strings.EqualFold(x, who) || strings.EqualFold(x, f+":"+who) {
				return a.login(r)
			}
		}
	}
	return ""
}

// configAllowed tells whether the request may see /config. With sign-in
// configured (some forge's OAuth2 application): a signed-in admin of
// ALFRED_ADMINS only. Without (no forge, or none with an OAuth2
// application, as under `make run`): a request from this host only, made
// to the listener directly (loopback, and no proxy's forwarding header: a
// reverse proxy on this host would make every visitor loopback).
func (d Deps) configAllowed(r *http.Request) bool {
	if d.Access != nil && len(d.Access.SignIns) > 0 {
		return d.Access.admin(r) != ""
	}
	return directLoopback(r)
}

// directLoopback tells a request from a loopback address that no proxy
// forwarded.
func directLoopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// csrfField is the form field that carries csrfToken (auth_cookies.go).
const csrfField = "csrf"

// signedIn tells whether the request comes from someone signed in (pages
// that show no project's data, such as the agents screen).
func (a *Access) signedIn(r *http.Request) bool { return a == nil || a.login(r) != "" }

// loginPage sends the visitor to the OAuth2 application of the forge named
// by ?forge= (optional when there is one).
func (a *Access) loginPage(w http.ResponseWriter, r *http.Request) {
	in := a.signIn(r.URL.Query().Get("forge"))
	if in == nil {
		http.Error(w, "sign-in is not configured for this forge: set its ALFRED_OAUTH_CLIENT_ID and ALFRED_OAUTH_CLIENT_SECRET", http.StatusServiceUnavailable)
		return
	}
	// PKCE (RFC 7636, S256): the verifier stays in the signed and encrypted
	// state cookie, the forge gets its hash, and the code is exchanged only
	// with the verifier: a code taken on its way back is of no use to
	// another browser.
	st := oauthState{State: rand.Text(), Verifier: oauth2.GenerateVerifier(), Forge: in.Forge, Next: safeNext(r.URL.Query().Get("next"))}
	if err := a.setCookie(w, r, stateCookie, st, stateTTL); err != nil {
		http.Error(w, "sign-in failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, in.OAuth.AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

func (a *Access) callback(w http.ResponseWriter, r *http.Request) {
	var st oauthState
	if !a.readCookie(r, stateCookie, &st) || st.State == "" || st.Verifier == "" ||
		subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("state")), []byte(st.State)) != 1 {
		http.Error(w, "sign-in failed: the state does not match; try again", http.StatusBadRequest)
		return
	}
	a.clearCookie(w, r, stateCookie) // the browser forgets the state once used, whatever comes of it
	in := a.signIn(st.Forge)
	if in == nil || in.Forge != st.Forge {
		http.Error(w, "sign-in failed: no sign-in for that forge any more; try again", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	if a.Client != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, a.Client)
	}
	tok, err := in.OAuth.Exchange(ctx, r.URL.Query().Get("code"), oauth2.VerifierOption(st.Verifier))
	if err != nil {
		http.Error(w, "sign-in failed: the forge refused the code", http.StatusBadGateway)
		return
	}
	who, err := in.whoIs(ctx, tok)
	if err != nil {
		http.Error(w, "sign-in failed: the forge did not say who you are", http.StatusBadGateway)
		return
	}
	logins := maps.Clone(a.logins(r)) // signed in on this forge too
	if logins == nil {
		logins = map[string]string{}
	}
	logins[in.Forge] = who
	if err := a.setCookie(w, r, sessionCookie, session{Logins: logins}, int(sessionTTL.Seconds())); err != nil {
		http.Error(w, "sign-in failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, safeNext(st.Next), http.StatusFound)
}

// whoIs reads the login of the token's owner from the forge.
func (a *SignIn) whoIs(ctx context.Context, tok *oauth2.Token) (string, error) {
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

// logout signs out: only by POST, with the form's token. By GET it shows
// the form (a link cannot sign anybody out, from this site or another).
func (d Deps) logout(w http.ResponseWriter, r *http.Request) {
	a := d.Access
	who := a.login(r)
	switch {
	case r.Method != http.MethodPost && who == "":
		http.Redirect(w, r, "/", http.StatusSeeOther)
	case r.Method != http.MethodPost:
		w.Header().Set("Cache-Control", "no-store")
		render(w, d.Logger, "signin.html", map[string]string{"SignOut": a.csrfToken(who), "Login": who})
	case who != "" && !a.checkCSRF(r, who):
		d.Logger.Info("sign-out refused: bad form token", "login", who)
		http.Error(w, "the form's token does not match: reload the page and try again", http.StatusForbidden)
	default:
		a.clearCookie(w, r, sessionCookie)
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}
}

// guard tells whether the request may read project p. When it may not, it
// has answered as hidden does, exactly as for a project or record that does
// not exist, whoever asks (anonymous or signed in without access), and
// returns false.
func (d Deps) guard(w http.ResponseWriter, r *http.Request, p forges.Project) bool {
	err := d.Access.allow(r, p)
	if err == nil {
		return true
	}
	if errors.Is(err, errSignIn) {
		d.Logger.Debug("page refused", "path", r.URL.Path, "why", err)
	} else {
		d.Logger.Info("page refused", "path", r.URL.Path, "why", err)
	}
	d.hidden(w, r)
	return false
}

func (d Deps) signIn(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": errSignIn.Error(), "sign_in": "/login?next=" + url.QueryEscape(safeNext(r.URL.RequestURI()))})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	var forges []string
	for _, s := range d.Access.SignIns {
		forges = append(forges, s.Forge)
	}
	render(w, d.Logger, "signin.html", map[string]any{"Next": safeNext(r.URL.RequestURI()), "Forges": forges})
}
