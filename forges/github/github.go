// Package github implements forges.Forge and forges.Hooks for GitHub and GitHub
// Enterprise Server, on go-github. It owns everything GitHub-specific: the REST
// calls, their pagination, rate-limit and 5xx back-off, and the parsing of
// GitHub's webhook deliveries into normalized forges.Events.
//
// It authenticates in one of two ways. With a personal access token
// (Options.Token), every call and git over HTTPS use that token, and the bot
// is the token's account. As a GitHub App (Options.AppID and
// Options.PrivateKeyPath, app.go), the /app endpoints are called with a JWT
// signed by the App's private key, every call about a repository with a token
// of the App's installation minted for that repository alone (the
// installation found once per repository, the token cached per repository
// until a minute before it expires), git uses that token too, and the bot is the App's bot user "<slug>[bot]": its
// comments and assignments are the bot's own.
package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	gh "github.com/google/go-github/v93/github"

	"github.com/alchemic-studio/alfred/forges"
)

// Options configure a GitHub forge.
type Options struct {
	// BaseURL is the REST API root: empty for github.com, the Enterprise
	// Server host (its /api/v3/ is added) or any URL ending in /api/v3/, or a
	// test server's URL.
	BaseURL string
	// Token is a personal access token (classic or fine-grained). Leave it
	// empty when AppID is set.
	Token string
	// AppID, when set, authenticates as this GitHub App instead of with
	// Token (see the package comment).
	AppID int64
	// PrivateKeyPath is the file holding the App's private key (the .pem
	// GitHub generates), read once by New. The key is never logged nor put
	// in an error.
	PrivateKeyPath string
	// InstallationID, when set, is the App installation every repository
	// uses, instead of asking GitHub for the installation of each repository.
	InstallationID int64
	// HTTPClient carries the requests; its Transport is wrapped with Retry.
	// Nil uses a new client on http.DefaultTransport.
	HTTPClient *http.Client
	// Retry is the retry policy of every call (zero fields take the
	// defaults): rate limits are waited out when they fit in its budget.
	Retry forges.RetryPolicy
	// PerPage is the page size of list calls (default 100, GitHub's maximum).
	PerPage int
	// Logger receives what happens to the App's installations (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// Forge talks to one GitHub (or GitHub Enterprise) instance.
type Forge struct {
	client  *gh.Client
	token   string
	app     *app // nil with a personal access token
	perPage int

	meMu sync.Mutex // guards me
	me   *forges.User
}

var _ forges.Forge = (*Forge)(nil)

// New builds a GitHub forge from opts. In App mode it reads the private key;
// it makes no request.
func New(opts Options) (*Forge, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		hc = &c
	}
	hc.Transport = opts.Retry.Transport(hc.Transport) // the one retry layer, under everything
	f := &Forge{token: opts.Token, perPage: orDefault(opts.PerPage, 100)}
	if opts.AppID != 0 {
		a, err := newApp(opts, hc)
		if err != nil {
			return nil, err
		}
		f.app = a
		c := *hc
		c.Transport = &installationAuth{app: a, next: hc.Transport}
		hc = &c
	}
	client, err := newClient(opts.BaseURL, hc, opts.Token)
	if err != nil {
		return nil, err
	}
	f.client = client
	return f, nil
}

// check refuses options that mix the two ways of authenticating.
func (o Options) check() error {
	switch {
	case o.AppID < 0 || o.InstallationID < 0:
		return fmt.Errorf("github: App id %d and installation id %d: ids are positive numbers", o.AppID, o.InstallationID)
	case o.AppID == 0 && (o.PrivateKeyPath != "" || o.InstallationID != 0):
		return errors.New("github: a GitHub App private key or installation is set without the App id: set the App id too")
	case o.AppID != 0 && o.Token != "":
		return fmt.Errorf("github: both a token and GitHub App %d are configured: keep only one of them", o.AppID)
	}
	return nil
}

// newClient is a go-github client on hc for the API at base (empty:
// github.com), sending token when one is given.
func newClient(base string, hc *http.Client, token string) (*gh.Client, error) {
	clientOpts := []gh.ClientOptionsFunc{
		gh.WithHTTPClient(hc),
		gh.WithUserAgent("alfred"),
		// Rate limits are waited out by the retry policy, not refused up front.
		gh.WithDisableRateLimitCheck(),
	}
	if token != "" {
		clientOpts = append(clientOpts, gh.WithAuthToken(token))
	}
	if base != "" {
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("github base url %q: not an absolute URL", strings.TrimSuffix(base, "/"))
		}
		clientOpts = append(clientOpts, gh.WithEnterpriseURLs(base, base))
	}
	client, err := gh.NewClient(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("github client: %w", err)
	}
	return client, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Kind is forges.GitHub.
func (f *Forge) Kind() forges.Kind { return forges.GitHub }

// Me is the account the token belongs to, or in App mode the App's bot
// user ("<slug>[bot]", ID 0: GET /app does not give the bot user's id); it is
// asked once and remembered.
func (f *Forge) Me(ctx context.Context) (forges.User, error) {
	f.meMu.Lock()
	defer f.meMu.Unlock()
	if f.me != nil {
		return *f.me, nil
	}
	if f.app != nil {
		me, err := f.app.bot(ctx)
		if err != nil {
			return forges.User{}, err
		}
		f.me = &me
		return me, nil
	}
	u, _, err := f.client.Users.Get(ctx, "")
	if err != nil {
		return forges.User{}, wrap(err, "read the authenticated user")
	}
	f.me = &forges.User{Login: u.GetLogin(), ID: u.GetID()}
	return *f.me, nil
}

// Permission maps GitHub's repository roles: admin and maintain are Admin,
// write is Write, triage and read are Read; an unknown user is None.
func (f *Forge) Permission(ctx context.Context, p forges.Project, user string) (forges.Permission, error) {
	lvl, _, err := f.client.Repositories.GetPermissionLevel(ctx, p.Owner, p.Name, user)
	if isNotFound(err) {
		return forges.PermissionNone, nil
	}
	if err != nil {
		return forges.PermissionNone, wrap(err, "read permission of %s on %s", user, p.FullName())
	}
	role := lvl.GetRoleName()
	if role == "" {
		role = lvl.GetPermission()
	}
	switch role {
	case "admin", "maintain":
		return forges.PermissionAdmin, nil
	case "write":
		return forges.PermissionWrite, nil
	case "triage", "read":
		return forges.PermissionRead, nil
	}
	// A custom role: fall back on the base permission it extends.
	switch lvl.GetPermission() {
	case "admin":
		return forges.PermissionAdmin, nil
	case "write":
		return forges.PermissionWrite, nil
	case "read":
		return forges.PermissionRead, nil
	}
	return forges.PermissionNone, nil
}

// DefaultBranch is the repository's default branch.
func (f *Forge) DefaultBranch(ctx context.Context, p forges.Project) (string, error) {
	r, _, err := f.client.Repositories.Get(ctx, p.Owner, p.Name)
	if err != nil {
		return "", wrap(err, "read repository %s", p.FullName())
	}
	return r.GetDefaultBranch(), nil
}

// CloneURL is the repository's HTTPS clone URL.
func (f *Forge) CloneURL(ctx context.Context, p forges.Project) (string, error) {
	r, _, err := f.client.Repositories.Get(ctx, p.Owner, p.Name)
	if err != nil {
		return "", wrap(err, "read repository %s", p.FullName())
	}
	if r.GetCloneURL() == "" {
		return "", fmt.Errorf("read repository %s: no clone_url in the answer", p.FullName())
	}
	return r.GetCloneURL(), nil
}

// BranchExists asks for the branch; a 404 is false.
func (f *Forge) BranchExists(ctx context.Context, p forges.Project, branch string) (bool, error) {
	// No redirect is followed: a 301 means the branch was renamed, so this
	// name no longer exists. GetBranch reports other statuses as plain errors.
	_, resp, err := f.client.Repositories.GetBranch(ctx, p.Owner, p.Name, branch, 0)
	if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMovedPermanently) {
		return false, nil
	}
	if err != nil {
		return false, wrap(err, "read branch %s of %s", branch, p.FullName())
	}
	return true, nil
}

// GitUser is the user name git gives with a token over HTTPS, which GitHub
// accepts with personal access tokens and App installation tokens alike.
const GitUser = "x-access-token"

// GitCredentials are GitUser and the token. In App mode the token is the one of the installation on p, valid
// for at least a minute more, and p must be named.
func (f *Forge) GitCredentials(ctx context.Context, p forges.Project) (username, password string, err error) {
	if f.app == nil {
		return GitUser, f.token, nil
	}
	if p.Owner == "" || p.Name == "" {
		return "", "", fmt.Errorf("git credentials of GitHub App %d: no repository named, and its tokens are per repository", f.app.id)
	}
	token, err := f.app.token(ctx, p)
	if err != nil {
		return "", "", err
	}
	return GitUser, token, nil
}

// answer is the HTTP answer an SDK error came with, nil for none.
func answer(err error) *http.Response {
	if er, ok := errors.AsType[*gh.ErrorResponse](err); ok {
		return er.Response
	}
	if er, ok := errors.AsType[*gh.RateLimitError](err); ok {
		return er.Response
	}
	if er, ok := errors.AsType[*gh.AbuseRateLimitError](err); ok {
		return er.Response
	}
	return nil
}

// isNotFound tells a 404 answer.
func isNotFound(err error) bool {
	resp := answer(err)
	return resp != nil && resp.StatusCode == http.StatusNotFound
}

// wrap adds what was being done to err, classified by its answer
// (forges.Classify). A refusal of the App's credentials is already worded
// and classified: it is kept as it is, without the request that met it.
func wrap(err error, format string, args ...any) error {
	if ae, ok := errors.AsType[*appError](err); ok {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ae)
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), forges.Classify(answer(err), err))
}
