package github

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
	gh "github.com/google/go-github/v93/github"

	"github.com/alchemic-studio/alfred/forges"
)

// GitHub App mode. Every HTTP exchange goes through the retry policy exactly
// once, and what the App's credentials are refused with is never retried:
//
//   - /app, /repos/{owner}/{repo}/installation and POST
//     /app/installations/{id}/access_tokens are called with a JWT
//     (ghinstallation.AppsTransport, signed afresh for each call, above the
//     retry policy: 503 and 429 are retried, 401, 403 and 404 are final);
//   - an installation token is minted for one repository: the mint names it
//     ({"repositories": [name]}), so that the token can act on that
//     repository alone, whatever else the installation covers. Tokens are
//     cached per repository until a minute before they expire;
//   - installationAuth, above the retry policy, puts the token of the
//     repository a request is about on it: a token that cannot be had is
//     the call's answer, worded by appError, not a transport failure the
//     policy would send again.

// app is the GitHub App side of a Forge.
type app struct {
	id     int64
	fixed  int64      // Options.InstallationID: the installation of every repository
	jwt    *gh.Client // authenticated as the App
	apiURL *url.URL   // the REST root, ending in '/'
	log    *slog.Logger

	mu     sync.Mutex
	repos  map[string]int64      // lower-case "owner/name" -> installation id
	tokens map[string]*repoToken // lower-case "owner/name" -> its token
}

// tokenMargin is how long a cached token must still live to be used: a
// token closer to its end is minted again.
const tokenMargin = time.Minute

// repoToken is the installation token of one repository, minted for it
// alone. mu is held while minting: one mint at a time per repository.
type repoToken struct {
	mu      sync.Mutex
	token   string
	expires time.Time
}

// newApp reads the App's private key and builds its JWT client on hc, whose
// transport is the retry policy.
func newApp(opts Options, hc *http.Client) (*app, error) {
	key, err := readKey(opts.PrivateKeyPath)
	if err != nil {
		return nil, err
	}
	a := &app{id: opts.AppID, fixed: opts.InstallationID, log: opts.Logger,
		repos: map[string]int64{}, tokens: map[string]*repoToken{}}
	c := *hc
	c.Transport = ghinstallation.NewAppsTransportFromPrivateKey(hc.Transport, a.id, key)
	if a.jwt, err = newClient(opts.BaseURL, &c, ""); err != nil {
		return nil, err
	}
	if a.apiURL, err = url.Parse(a.jwt.BaseURL()); err != nil {
		return nil, fmt.Errorf("github base url: %w", err)
	}
	return a, nil
}

// readKey reads an RSA private key in PEM. Its errors name the file, never
// what it holds.
func readKey(path string) (*rsa.PrivateKey, error) {
	if path == "" {
		return nil, errors.New("github: GitHub App mode needs the App's private key: set the path of its .pem file")
	}
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("github: read the GitHub App's private key: %w: set the path of the .pem file the App's settings generated", err)
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("github: the GitHub App's private key %s is not a PEM-encoded RSA private key (%w): use the .pem file the App's settings generated", path, err)
	}
	return key, nil
}

// bot is the App's bot user, the author of what the App does: "<slug>[bot]".
func (a *app) bot(ctx context.Context) (forges.User, error) {
	ga, _, err := a.jwt.Apps.Get(ctx, "")
	if err != nil {
		return forges.User{}, a.refused(err, forges.Project{}, "read GitHub App %d", a.id)
	}
	if ga.GetSlug() == "" {
		return forges.User{}, fmt.Errorf("read GitHub App %d: GitHub gave no slug", a.id)
	}
	return forges.User{Login: ga.GetSlug() + "[bot]"}, nil
}

// token is a token of the App's installation on p that can act on p alone,
// valid for at least tokenMargin more: minted when none is cached for p or
// the cached one ends within the margin.
func (a *app) token(ctx context.Context, p forges.Project) (string, error) {
	id, err := a.installationID(ctx, p)
	if err != nil {
		return "", err
	}
	t := a.cached(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && time.Until(t.expires) > tokenMargin {
		return t.token, nil
	}
	tok, _, err := a.jwt.Apps.CreateInstallationToken(ctx, id, &gh.InstallationTokenOptions{Repositories: []string{p.Name}})
	if err != nil {
		return "", a.mintRefused(err, p, id)
	}
	if tok.GetToken() == "" {
		return "", fmt.Errorf("mint a token of GitHub App %d's installation %d for %s: GitHub gave no token", a.id, id, p.FullName())
	}
	t.token, t.expires = tok.GetToken(), tok.GetExpiresAt().Time
	a.log.Debug("github app installation token minted", "app", a.id, "installation", id,
		"repository", p.FullName(), "expires", t.expires)
	return t.token, nil
}

// installationID is the installation of the App on p: Options.InstallationID,
// else asked of GitHub once and remembered.
func (a *app) installationID(ctx context.Context, p forges.Project) (int64, error) {
	if a.fixed != 0 {
		return a.fixed, nil
	}
	key := strings.ToLower(p.FullName()) // GitHub's names ignore case
	a.mu.Lock()
	id, ok := a.repos[key]
	a.mu.Unlock()
	if ok {
		return id, nil
	}
	inst, _, err := a.jwt.Apps.GetRepositoryInstallation(ctx, p.Owner, p.Name)
	if err != nil {
		return 0, a.refused(err, p, "find the installation of GitHub App %d on %s", a.id, p.FullName())
	}
	a.mu.Lock()
	a.repos[key] = inst.GetID()
	a.mu.Unlock()
	a.log.Info("github app installation found", "app", a.id, "repository", p.FullName(), "installation", inst.GetID())
	return inst.GetID(), nil
}

// cached is p's token entry, made once (empty until the first mint).
func (a *app) cached(p forges.Project) *repoToken {
	key := strings.ToLower(p.FullName())
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.tokens[key]; t != nil {
		return t
	}
	t := &repoToken{}
	a.tokens[key] = t
	return t
}

// forget drops what is known of p's installation and p's token, so that the
// next call finds the installation again and mints a new token.
func (a *app) forget(p forges.Project) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := strings.ToLower(p.FullName())
	delete(a.repos, key)
	delete(a.tokens, key)
}

// repository is the repository a request to the API is about, if any.
func (a *app) repository(u *url.URL) (forges.Project, bool) {
	if u.Scheme != a.apiURL.Scheme || u.Host != a.apiURL.Host {
		return forges.Project{}, false
	}
	rest, ok := strings.CutPrefix(u.Path, a.apiURL.Path)
	seg := strings.SplitN(rest, "/", 4)
	if !ok || len(seg) < 3 || seg[0] != "repos" || seg[1] == "" || seg[2] == "" {
		return forges.Project{}, false
	}
	return forges.Project{Owner: seg[1], Name: seg[2]}, true
}

// installationAuth authenticates each request about a repository with the
// token of the App's installation on it; next is the retry policy.
type installationAuth struct {
	app  *app
	next http.RoundTripper
}

func (t *installationAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	p, ok := t.app.repository(req.URL)
	if !ok {
		closeRequest(req)
		return nil, fmt.Errorf("%s %s: GitHub App %d acts only on repositories, and this request names none", req.Method, req.URL.Path, t.app.id)
	}
	token, err := t.app.token(req.Context(), p)
	if err != nil {
		closeRequest(req)
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	return t.tokenRefused(req.Context(), p, resp)
}

// tokenRefused handles a 401 to an installation token: the installation was
// removed, or the token revoked. The installation is forgotten and a new
// token asked for at once (one request or two, never retried): if that fails
// too, its reason is the answer, else the 401 stands and the next call has
// the new token.
func (t *installationAuth) tokenRefused(ctx context.Context, p forges.Project, resp *http.Response) (*http.Response, error) {
	t.app.log.Warn("github app installation token refused: finding the installation again",
		"app", t.app.id, "repository", p.FullName())
	t.app.forget(p)
	if _, err := t.app.token(ctx, p); err != nil {
		closeResponse(resp)
		return nil, err
	}
	return resp, nil
}

// appError is a refusal of the App's own credentials, worded as what to fix.
// It wraps forges.ErrUnauthorized (the JWT) or forges.ErrForbidden (the
// installation), never ErrNotFound: a missing installation must not read as
// a missing issue or branch.
type appError struct {
	sentence string
	kind     error
}

func (e *appError) Error() string { return e.sentence }
func (e *appError) Unwrap() error { return e.kind }

func (a *app) jwtRefused(message string) error {
	return &appError{kind: forges.ErrUnauthorized, sentence: fmt.Sprintf(
		"GitHub refused the JWT of GitHub App %d (401 %s): check that the App id and the private key belong to the same App and that this host's clock is right", a.id, message)}
}

func (a *app) notInstalled(p forges.Project) error {
	return &appError{kind: forges.ErrForbidden, sentence: fmt.Sprintf(
		"GitHub App %d is not installed on %s (or the installation was revoked): install it on the repository", a.id, p.FullName())}
}

func (a *app) suspended(p forges.Project, id int64, message string) error {
	return &appError{kind: forges.ErrForbidden, sentence: fmt.Sprintf(
		"GitHub App %d's installation %d on %s is refused (403 %s): unsuspend it in the installation's settings", a.id, id, p.FullName(), message)}
}

// refused words an error of a JWT call about p (zero: about the App).
func (a *app) refused(err error, p forges.Project, format string, args ...any) error {
	resp := answer(err)
	switch {
	case resp == nil:
	case resp.StatusCode == http.StatusUnauthorized:
		return a.jwtRefused(ghMessage(err))
	case resp.StatusCode == http.StatusNotFound && p != (forges.Project{}):
		return a.notInstalled(p)
	}
	return wrap(err, format, args...)
}

// mintRefused words an error of minting a token of installation id for p.
// A 422 means the installation does not cover p: the mint names p, and
// GitHub refuses a repository the installation cannot reach.
func (a *app) mintRefused(err error, p forges.Project, id int64) error {
	resp := answer(err)
	if resp == nil {
		return fmt.Errorf("mint a token of GitHub App %d's installation %d for %s: %w", a.id, id, p.FullName(), err)
	}
	message := http.StatusText(resp.StatusCode)
	if er, ok := errors.AsType[*gh.ErrorResponse](err); ok && er.Message != "" {
		message = er.Message
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return a.jwtRefused(message)
	case http.StatusNotFound, http.StatusUnprocessableEntity:
		a.forget(p)
		return a.notInstalled(p)
	case http.StatusForbidden:
		if !errors.Is(forges.Classify(resp, err), forges.ErrUnavailable) { // not a rate limit
			a.forget(p)
			return a.suspended(p, id, message)
		}
	}
	return fmt.Errorf("mint a token of GitHub App %d's installation %d for %s: %w", a.id, id, p.FullName(),
		forges.Classify(resp, fmt.Errorf("%s: %s", resp.Status, message)))
}

// ghMessage is GitHub's message in an SDK error.
func ghMessage(err error) string {
	if er, ok := errors.AsType[*gh.ErrorResponse](err); ok && er.Message != "" {
		return er.Message
	}
	return "Unauthorized"
}

func closeResponse(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

func closeRequest(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
