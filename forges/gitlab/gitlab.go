// Package gitlab implements forges.Forge for GitLab (API v4) on GitLab's
// client-go SDK, and forges.Hooks for GitLab webhooks (X-Gitlab-Token).
//
// On GitLab issues and merge requests are different objects with their own
// iids, so comment and label calls dispatch on forges.Target.Kind. A project is
// addressed by its URL-encoded full path (Owner may be a nested group path,
// "group/sub"), never by numeric id.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/alchemic-studio/alfred/forges"
)

const (
	DefaultBaseURL = "https://gitlab.com"
	perPage        = 100
	// maxPages bounds every listing, so a server that keeps answering with a
	// next page cannot loop us forever (100 000 items at perPage).
	maxPages = 1000
)

// Options configures a GitLab forge.
type Options struct {
	// BaseURL is the instance root ("https://gitlab.example.com"); "/api/v4" is
	// added by the SDK. Defaults to DefaultBaseURL.
	BaseURL string
	// Token is a personal, project or group access token of the bot account,
	// with the api scope. It is also the password for git over HTTPS.
	Token string
	// HTTPClient carries the requests; its Transport is wrapped with Retry.
	// Nil uses a new client on http.DefaultTransport.
	HTTPClient *http.Client
	// Retry is the retry policy of every call (zero fields take the
	// defaults); the SDK's own retries are off.
	Retry forges.RetryPolicy
}

// Forge talks to one GitLab instance. It is safe for concurrent use.
type Forge struct {
	client *gl.Client
	token  string
	web    string // instance root, for the web URLs the API does not return

	mu sync.Mutex
	me *forges.User
}

var _ forges.Forge = (*Forge)(nil)

// New returns a Forge for the instance at o.BaseURL.
func New(o Options) (*Forge, error) {
	if o.Token == "" {
		return nil, errors.New("gitlab: a token is required")
	}
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hc := &http.Client{}
	if o.HTTPClient != nil {
		c := *o.HTTPClient
		hc = &c
	}
	hc.Transport = o.Retry.Transport(hc.Transport)
	client, err := gl.NewClient(o.Token,
		gl.WithBaseURL(base),
		gl.WithHTTPClient(hc),
		gl.WithoutRetries(), // one layer: hc's
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab: new client for %s: %w", base, err)
	}
	return &Forge{client: client, token: o.Token, web: strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/api/v4")}, nil
}

// Kind is forges.GitLab.
func (*Forge) Kind() forges.Kind { return forges.GitLab }

// Me is the account the token belongs to; it is read once and remembered.
func (f *Forge) Me(ctx context.Context) (forges.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.me != nil {
		return *f.me, nil
	}
	u, _, err := f.client.Users.CurrentUser(gl.WithContext(ctx))
	if err != nil {
		return forges.User{}, wrap(err, "read current user")
	}
	f.me = &forges.User{Login: u.Username, ID: u.ID}
	return *f.me, nil
}

// Permission maps the user's effective access level on the project (direct
// or inherited from groups) to a forges.Permission: maintainer and owner are
// admin, developer is write, guest, planner and reporter are read; a user who
// is not a member, or does not exist, has none.
func (f *Forge) Permission(ctx context.Context, p forges.Project, user string) (forges.Permission, error) {
	users, _, err := f.client.Users.ListUsers(&gl.ListUsersOptions{Username: gl.Ptr(user)}, gl.WithContext(ctx))
	if err != nil {
		return forges.PermissionNone, wrap(err, "look up user %q", user)
	}
	var id int64
	for _, u := range users {
		if strings.EqualFold(u.Username, user) {
			id = u.ID
			break
		}
	}
	if id == 0 {
		return forges.PermissionNone, nil
	}
	m, _, err := f.client.ProjectMembers.GetInheritedProjectMember(pid(p), id, gl.WithContext(ctx))
	if err != nil {
		if errors.Is(err, gl.ErrNotFound) {
			return forges.PermissionNone, nil
		}
		return forges.PermissionNone, wrap(err, "read membership of %q in %s", user, p.FullName())
	}
	return permission(m.AccessLevel), nil
}

func permission(l gl.AccessLevelValue) forges.Permission {
	switch {
	case l >= gl.MaintainerPermissions:
		return forges.PermissionAdmin
	case l >= gl.DeveloperPermissions:
		return forges.PermissionWrite
	case l >= gl.GuestPermissions:
		return forges.PermissionRead
	default:
		return forges.PermissionNone
	}
}

// BranchExists asks for the branch; a 404 is false.
func (f *Forge) BranchExists(ctx context.Context, p forges.Project, branch string) (bool, error) {
	_, _, err := f.client.Branches.GetBranch(pid(p), branch, gl.WithContext(ctx))
	if err != nil {
		if errors.Is(err, gl.ErrNotFound) {
			return false, nil
		}
		return false, wrap(err, "read branch %q of %s", branch, p.FullName())
	}
	return true, nil
}

// DefaultBranch is the project's default branch.
func (f *Forge) DefaultBranch(ctx context.Context, p forges.Project) (string, error) {
	pr, err := f.project(ctx, p)
	if err != nil {
		return "", err
	}
	if pr.DefaultBranch == "" {
		return "", fmt.Errorf("gitlab: project %s has no default branch (empty repository?)", p.FullName())
	}
	return pr.DefaultBranch, nil
}

// CloneURL is the project's http_url_to_repo.
func (f *Forge) CloneURL(ctx context.Context, p forges.Project) (string, error) {
	pr, err := f.project(ctx, p)
	if err != nil {
		return "", err
	}
	return pr.HTTPURLToRepo, nil
}

func (f *Forge) project(ctx context.Context, p forges.Project) (*gl.Project, error) {
	pr, _, err := f.client.Projects.GetProject(pid(p), nil, gl.WithContext(ctx))
	if err != nil {
		return nil, wrap(err, "read project %s", p.FullName())
	}
	return pr, nil
}

// GitUser is the user name git gives with a token over HTTPS, which GitLab
// accepts for any kind of access token.
const GitUser = "oauth2"

// GitCredentials are GitUser and the token.
func (f *Forge) GitCredentials(context.Context, forges.Project) (username, password string, err error) {
	return GitUser, f.token, nil
}

// pid is the project id the SDK escapes into the path: "group/sub/name".
func pid(p forges.Project) string { return p.FullName() }

// wrap adds what we were doing to an SDK error and classifies it by its
// answer (forges.Classify). SDK errors carry the method, URL and status,
// never the token (it travels in a header).
func wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, gl.ErrNotFound) { // the SDK's own 404, with no answer attached
		return fmt.Errorf("gitlab: %s: %w", what, forges.ErrNotFound)
	}
	var resp *http.Response
	if er, ok := errors.AsType[*gl.ErrorResponse](err); ok {
		resp = er.Response
	}
	return fmt.Errorf("gitlab: %s: %w", what, forges.Classify(resp, err))
}
