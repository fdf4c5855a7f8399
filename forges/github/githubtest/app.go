package githubtest

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"

	"github.com/alchemic-studio/alfred/forges"
)

// The GitHub App side of the fake (EnableApp): one App, installed on the
// repository (and on the names InstallAlsoOn adds), with GitHub's four App
// endpoints, JWTs checked as GitHub checks them, and installation tokens
// accepted on the repository endpoints of the repositories they were minted
// for (all of the installation's when the mint named none).

// AppSlug is the slug of the fake's App; its bot user is AppSlug+"[bot]".
const AppSlug = "alfred-app"

// fakeApp is the App; the Server's mu guards it.
type fakeApp struct {
	id           int64
	key          *rsa.PublicKey
	installation int64
	revoked      bool
	ttl          time.Duration        // life of the tokens minted next
	skew         time.Duration        // the fake's clock minus the real one
	tokens       map[string]fakeToken // installation token -> what it may do
	minted       int
	last         string
	also         []string   // repositories of the owner the installation covers besides the fake's
	mints        [][]string // the repositories each mint asked for (nil: all of the installation's)
}

// fakeToken is an installation token: its expiry, on the fake's clock, and
// the repositories it was minted for (nil: all of the installation's).
type fakeToken struct {
	expires time.Time
	repos   []string
}

// EnableApp makes the fake know GitHub App id, whose JWTs are signed by the
// private key of pub, installed on the repository; it returns the
// installation's id. Installation tokens live an hour unless SetTokenTTL says
// otherwise. The personal token keeps working.
func (f *Server) EnableApp(id int64, pub *rsa.PublicKey) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.app = &fakeApp{id: id, key: pub, installation: 7_000_000 + id, ttl: time.Hour, tokens: map[string]fakeToken{}}
	f.users[f.appBot()] = forges.PermissionWrite
	return f.app.installation
}

// AppBotLogin is the login of the App's bot user, the author of what an
// installation token creates.
func (f *Server) AppBotLogin() string { return AppSlug + "[bot]" }

func (f *Server) appBot() string { return f.AppBotLogin() }

// SetTokenTTL sets the life of the installation tokens minted from now on
// (forges/github mints again when less than a minute is left).
func (f *Server) SetTokenTTL(d time.Duration) { f.withApp(func(a *fakeApp) { a.ttl = d }) }

// SetClockSkew sets the fake's clock ahead of the real one by d (behind when
// negative): JWTs and tokens are judged on it, as a GitHub whose clock
// differs from the client's would.
func (f *Server) SetClockSkew(d time.Duration) { f.withApp(func(a *fakeApp) { a.skew = d }) }

// RevokeInstallation uninstalls the App: its installation is gone and every
// token it had is refused.
func (f *Server) RevokeInstallation() { f.withApp(func(a *fakeApp) { a.revoked = true }) }

// InstallAlsoOn makes the installation cover the owner's repositories
// names too (the fake serves none of their data): their installation can be
// found and tokens minted for them.
func (f *Server) InstallAlsoOn(names ...string) {
	f.withApp(func(a *fakeApp) { a.also = append(a.also, names...) })
}

// MintedFor is the "repositories" each mint asked for, in order; a nil entry
// asked for the whole installation.
func (f *Server) MintedFor() [][]string {
	var out [][]string
	f.withApp(func(a *fakeApp) {
		for _, m := range a.mints {
			out = append(out, slices.Clone(m))
		}
	})
	return out
}

// TokensMinted is how many installation tokens the fake has issued.
func (f *Server) TokensMinted() int {
	var n int
	f.withApp(func(a *fakeApp) { n = a.minted })
	return n
}

// InstallationToken is the installation token issued last ("" for none).
func (f *Server) InstallationToken() string {
	var t string
	f.withApp(func(a *fakeApp) { t = a.last })
	return t
}

func (f *Server) withApp(fn func(*fakeApp)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.app == nil {
		panic("githubtest: EnableApp first")
	}
	fn(f.app)
}

// appRoute answers the App endpoints, authenticated with a JWT; ok is false
// for any other path. mu held.
func (f *Server) appRoute(r *http.Request, seg []string) (reply, bool) {
	m := r.Method
	switch {
	case len(seg) == 1 && seg[0] == "app" && m == http.MethodGet:
	case len(seg) == 2 && seg[0] == "app" && seg[1] == "installations" && m == http.MethodGet:
	case len(seg) == 4 && seg[0] == "app" && seg[1] == "installations" && seg[3] == "access_tokens" && m == http.MethodPost:
	case len(seg) == 4 && seg[0] == "repos" && seg[3] == "installation" && m == http.MethodGet:
	default:
		return reply{}, false
	}
	if msg, good := f.checkJWT(r); !good {
		return errReply(http.StatusUnauthorized, msg), true
	}
	a := f.app
	switch {
	case seg[0] == "app" && len(seg) == 1:
		return ok(f.appJSON()), true
	case seg[0] == "app" && len(seg) == 2:
		if a.revoked {
			return ok([]any{}), true
		}
		return ok([]any{f.installationJSON()}), true
	case seg[0] == "app":
		return f.mintToken(seg[2], r), true
	}
	if a.revoked || seg[1] != f.owner || !f.covers(seg[2]) {
		return notFound, true
	}
	return ok(f.installationJSON()), true
}

// checkJWT checks the request's JWT as GitHub does: RS256 signed by the
// App's key, iss the App id, iat not in the future, exp in the future and at
// most ten minutes after iat. The messages are GitHub's.
func (f *Server) checkJWT(r *http.Request) (string, bool) {
	const undecodable = "A JSON web token could not be decoded"
	if f.app == nil {
		return undecodable, false
	}
	raw, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found {
		return undecodable, false
	}
	var c jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return f.app.key, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation())
	now := time.Now().Add(f.app.skew)
	switch {
	case err != nil:
		return undecodable, false
	case c.Issuer != strconv.FormatInt(f.app.id, 10):
		return "'Issuer' claim ('iss') must be an Integer", false
	case c.IssuedAt == nil || c.IssuedAt.After(now):
		return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued", false
	case c.ExpiresAt == nil || !c.ExpiresAt.After(now):
		return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires", false
	case c.ExpiresAt.Sub(c.IssuedAt.Time) > 10*time.Minute:
		return "'Expiration time' claim ('exp') is too far in the future", false
	}
	return "", true
}

// covers tells whether the installation covers the owner's repository name.
// mu held.
func (f *Server) covers(name string) bool {
	return strings.EqualFold(name, f.repo) || slices.ContainsFunc(f.app.also, func(n string) bool { return strings.EqualFold(n, name) })
}

// mintToken answers POST /app/installations/{id}/access_tokens, whose body
// may narrow the token to some of the installation's repositories, by name
// ("repositories"); naming one it does not cover is refused with GitHub's
// 422. Narrowing by repository_ids is not supported: a 422 too.
func (f *Server) mintToken(id string, r *http.Request) reply {
	a := f.app
	if a.revoked || id != strconv.FormatInt(a.installation, 10) {
		return notFound
	}
	var body struct {
		Repositories  []string `json:"repositories"`
		RepositoryIDs []int64  `json:"repository_ids"`
	}
	if r.Body != nil && r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return errReply(http.StatusBadRequest, "Problems parsing JSON")
		}
	}
	for _, n := range body.Repositories {
		if !f.covers(n) {
			return errReply(http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
		}
	}
	if len(body.RepositoryIDs) > 0 {
		return errReply(http.StatusUnprocessableEntity, "githubtest: repository_ids are not supported; name the repositories")
	}
	a.minted++
	a.mints = append(a.mints, body.Repositories)
	a.last = fmt.Sprintf("ghs_fakeInstallationToken%04d", a.minted)
	expires := time.Now().Add(a.skew + a.ttl).Truncate(time.Second)
	a.tokens[a.last] = fakeToken{expires: expires, repos: body.Repositories}
	return created(map[string]any{
		"token": a.last, "expires_at": expires.UTC().Format(time.RFC3339), "repository_selection": "selected",
		"permissions": map[string]any{"issues": "write", "pull_requests": "write", "contents": "write", "metadata": "read",
			"checks": "read", "statuses": "read"},
	})
}

// appToken tells whether token is a live installation token (live) and
// whether it may act on the request's repository (seg: the path's
// segments): a token narrowed to other repositories does not see this one.
// mu held.
func (f *Server) appToken(token string, seg []string) (live, sees bool) {
	a := f.app
	if a == nil || a.revoked {
		return false, false
	}
	t, known := a.tokens[token]
	if !known || !time.Now().Add(a.skew).Before(t.expires) {
		return false, false
	}
	if t.repos == nil || len(seg) < 3 || seg[0] != "repos" {
		return true, true
	}
	return true, seg[1] == f.owner && slices.ContainsFunc(t.repos, func(n string) bool { return strings.EqualFold(n, seg[2]) })
}

func (f *Server) appJSON() map[string]any {
	return map[string]any{
		"id": f.app.id, "slug": AppSlug, "node_id": "MDM6QXBwMQ==", "name": "Alfred (test)",
		"owner": f.userJSON(f.owner), "html_url": f.srv.URL + "/apps/" + AppSlug,
		"permissions": map[string]any{"issues": "write", "pull_requests": "write", "contents": "write", "metadata": "read",
			"checks": "read", "statuses": "read"},
		"events":     []any{"issues", "issue_comment", "pull_request", "pull_request_review", "push"},
		"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
	}
}

func (f *Server) installationJSON() map[string]any {
	id := strconv.FormatInt(f.app.installation, 10)
	return map[string]any{
		"id": f.app.installation, "app_id": f.app.id, "app_slug": AppSlug, "target_type": "Organization",
		"account":              f.userJSON(f.owner),
		"repository_selection": "selected", "html_url": f.srv.URL + "/organizations/" + f.owner + "/settings/installations/" + id,
		"access_tokens_url": f.baseURL() + "app/installations/" + id + "/access_tokens",
		"repositories_url":  f.baseURL() + "installation/repositories",
		"created_at":        "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
	}
}
