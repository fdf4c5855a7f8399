// Package github implements forges.Forge and forges.Hooks for GitHub and GitHub
// Enterprise Server, on go-github. It owns everything GitHub-specific: the REST
// calls, their pagination, rate-limit and 5xx back-off, and the parsing of
// GitHub's webhook deliveries into normalized forges.Events.
package github

import (
	"context"
	"errors"
	"fmt"
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
	// Token is a personal access token, or an installation token of a GitHub App.
	Token string
	// HTTPClient carries the requests; its Transport is wrapped with Retry.
	// Nil uses a new client on http.DefaultTransport.
	HTTPClient *http.Client
	// Retry is the retry policy of every call (zero fields take the
	// defaults): rate limits are waited out when they fit in its budget.
	Retry forges.RetryPolicy
	// PerPage is the page size of list calls (default 100, GitHub's maximum).
	PerPage int
}

// Forge talks to one GitHub (or GitHub Enterprise) instance.
type Forge struct {
	client  *gh.Client
	token   string
	perPage int

	meMu sync.Mutex // guards me
	me   *forges.User
}

var _ forges.Forge = (*Forge)(nil)

// New builds a GitHub forge from opts.
func New(opts Options) (*Forge, error) {
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		hc = &c
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = opts.Retry.Transport(next)

	clientOpts := []gh.ClientOptionsFunc{
		gh.WithHTTPClient(hc),
		gh.WithUserAgent("alfred"),
		// Rate limits are waited out by the retry policy, not refused up front.
		gh.WithDisableRateLimitCheck(),
	}
	if opts.Token != "" {
		clientOpts = append(clientOpts, gh.WithAuthToken(opts.Token))
	}
	if opts.BaseURL != "" {
		base := opts.BaseURL
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("github base url %q: not an absolute URL", opts.BaseURL)
		}
		clientOpts = append(clientOpts, gh.WithEnterpriseURLs(base, base))
	}
	client, err := gh.NewClient(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("github client: %w", err)
	}
	return &Forge{client: client, token: opts.Token, perPage: orDefault(opts.PerPage, 100)}, nil
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

// Me is the account the token belongs to; it is asked once and remembered.
func (f *Forge) Me(ctx context.Context) (forges.User, error) {
	f.meMu.Lock()
	defer f.meMu.Unlock()
	if f.me != nil {
		return *f.me, nil
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

// GitCredentials are "x-access-token" and the token, which GitHub accepts
// for git over HTTPS with personal access tokens and App installation tokens alike.
func (f *Forge) GitCredentials() (username, password string) {
	return "x-access-token", f.token
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

// wrap adds what was being done to err, classified by its answer (forges.Classify).
func wrap(err error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), forges.Classify(answer(err), err))
}
