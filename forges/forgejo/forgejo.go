// Package forgejo implements forges.Forge and forges.Hooks for Forgejo and
// Gitea on the Gitea SDK (code.gitea.io/sdk/gitea). It targets the API of
// Forgejo 7 (Gitea 1.21) and newer, and builds around what a real Forgejo
// 7.0.16 answers (see testdata/forgejo/README.md at the repository's root): label ids instead of names, uneven
// paging, 201 for PATCH, 500 for some missing objects, no commit-status webhook.
// The contract suite also runs it against a real Gitea 1.27 and a real
// Forgejo 15 (TestContractRealForges, with scripts/gitea.sh and scripts/forgejo.sh).
package forgejo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
)

// GitUser is the user name git gives with the bot's token over HTTPS:
// Forgejo and Gitea check only the token.
const GitUser = "oauth2"

// Options configure a Forge.
type Options struct {
	// BaseURL is the root of the instance, e.g. https://forge.example.org.
	BaseURL string
	// Token is the bot's access token. It is a secret: never logged.
	Token string
	// Username is the user name given to git with Token over HTTPS. Forgejo
	// checks only the token; empty means GitUser.
	Username string
	// HTTPClient is the client requests go through (its Transport is wrapped
	// with Retry); nil means a new client over http.DefaultTransport.
	HTTPClient *http.Client
	// Retry is the retry policy of every call (zero fields take the
	// defaults); the caller's context bounds the whole call too.
	Retry forges.RetryPolicy
	// ServerVersion is the Gitea API version the SDK assumes, so that it never
	// asks /version on its own (that call cannot take a context). Default
	// "1.21.0", the API of Forgejo 7; Forgejo's own version numbers (7.x) must
	// not be given here.
	ServerVersion string
}

// Forge talks to one Forgejo or Gitea instance. It is safe for concurrent use.
type Forge struct {
	baseURL  string
	token    string
	username string
	version  string
	http     *http.Client

	mu sync.Mutex
	me *forges.User
}

var (
	_ forges.Forge           = (*Forge)(nil)
	_ forges.ExclusiveLabels = (*Forge)(nil)
)

// New returns a Forge for the instance at opts.BaseURL. It does no network I/O.
func New(opts Options) (*Forge, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("forgejo: BaseURL is required")
	}
	if opts.Token == "" {
		return nil, errors.New("forgejo: Token is required")
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "1.21.0"
	}
	if opts.Username == "" {
		opts.Username = GitUser
	}
	base := http.DefaultTransport
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		hc = &c
		if c.Transport != nil {
			base = c.Transport
		}
	}
	retry := opts.Retry
	retry.Final = missing
	hc.Transport = retry.Transport(base)
	f := &Forge{
		baseURL:  strings.TrimSuffix(opts.BaseURL, "/"),
		token:    opts.Token,
		username: opts.Username,
		version:  opts.ServerVersion,
		http:     hc,
	}
	if _, err := f.api(context.Background()); err != nil {
		return nil, fmt.Errorf("forgejo: %w", err)
	}
	return f, nil
}

// api is an SDK client bound to ctx. The SDK keeps one context per client, so
// each call gets its own (cheap) client; the version is fixed so that making
// one does no I/O.
func (f *Forge) api(ctx context.Context) (*gitea.Client, error) {
	return gitea.NewClient(f.baseURL,
		gitea.SetToken(f.token),
		gitea.SetHTTPClient(f.http),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(f.version),
		gitea.SetUserAgent("alfred"),
	)
}

// apiErr makes an SDK error say what it means (forges.Classify), Forgejo's
// 500 "... does not exist" being a forges.ErrNotFound.
func apiErr(resp *gitea.Response, err error) error {
	if err == nil {
		return nil
	}
	if resp == nil || resp.Response == nil {
		return err
	}
	if resp.StatusCode == http.StatusInternalServerError && strings.Contains(err.Error(), "does not exist") {
		return fmt.Errorf("%w: %s", forges.ErrNotFound, oneLine(err.Error()))
	}
	if resp.StatusCode >= 400 {
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, tokenHidden.ReplaceAllString(oneLine(err.Error()), "[sha: (hidden)]"))
	}
	return forges.Classify(resp.Response, err)
}

// tokenHidden finds the token Forgejo quotes when it refuses one ("access
// token does not exist [sha: <the token>]"; Gitea does not quote it).
var tokenHidden = regexp.MustCompile(`\[sha: [^\]]*\]`)

// missing tells Forgejo's 500 answers that mean "does not exist" (a missing
// issue's comments, a missing branch): final, not to be retried. It peeks at
// the body and leaves it readable.
func missing(resp *http.Response) bool {
	if resp.StatusCode != http.StatusInternalServerError {
		return false
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return bytes.Contains(data, []byte("does not exist"))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Kind is forges.Forgejo.
func (f *Forge) Kind() forges.Kind { return forges.Forgejo }

// Me is the account of the token, asked once and then remembered.
func (f *Forge) Me(ctx context.Context) (forges.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.me != nil {
		return *f.me, nil
	}
	c, err := f.api(ctx)
	if err != nil {
		return forges.User{}, err
	}
	u, resp, err := c.GetMyUserInfo()
	if err != nil {
		return forges.User{}, fmt.Errorf("read the bot's user: %w", apiErr(resp, err))
	}
	f.me = &forges.User{Login: u.UserName, ID: u.ID}
	return *f.me, nil
}

// Permission maps Forgejo's collaborator permission: owner and admin are
// PermissionAdmin. An unknown user is PermissionNone. A site admin is "owner"
// everywhere, and any signed-in user may "read" a public repository. Only a
// site admin or an admin of the repository may read another user's
// permission: for a bot with write access, Gitea (1.26, at least) answers 403.
func (f *Forge) Permission(ctx context.Context, p forges.Project, user string) (forges.Permission, error) {
	c, err := f.api(ctx)
	if err != nil {
		return forges.PermissionNone, err
	}
	res, resp, err := c.CollaboratorPermission(p.Owner, p.Name, user)
	if err != nil {
		err = apiErr(resp, err)
		if errors.Is(err, forges.ErrNotFound) {
			return forges.PermissionNone, nil
		}
		return forges.PermissionNone, fmt.Errorf("read permission of %s on %s: %w", user, p.FullName(), err)
	}
	switch res.Permission {
	case gitea.AccessModeOwner, gitea.AccessModeAdmin:
		return forges.PermissionAdmin, nil
	case gitea.AccessModeWrite:
		return forges.PermissionWrite, nil
	case gitea.AccessModeRead:
		return forges.PermissionRead, nil
	}
	return forges.PermissionNone, nil
}

// Issue reads an issue (or a pull request, which Forgejo also serves as an issue).
func (f *Forge) Issue(ctx context.Context, p forges.Project, number int64) (*forges.Issue, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	is, resp, err := c.GetIssue(p.Owner, p.Name, number)
	if err != nil {
		return nil, fmt.Errorf("read issue %d of %s: %w", number, p.FullName(), apiErr(resp, err))
	}
	return toIssue(is), nil
}

func toIssue(is *gitea.Issue) *forges.Issue {
	out := &forges.Issue{
		Number: is.Index, Title: is.Title, Body: is.Body, State: string(is.State),
		URL: is.HTMLURL, UpdatedAt: is.Updated, Labels: []string{}, Assignees: []string{},
	}
	if is.Poster != nil {
		out.Author = is.Poster.UserName
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	for _, a := range is.Assignees {
		out.Assignees = append(out.Assignees, a.UserName)
	}
	return out
}

// SetIssueBody replaces an issue's description (Forgejo answers 201).
func (f *Forge) SetIssueBody(ctx context.Context, p forges.Project, number int64, body string) error {
	c, err := f.api(ctx)
	if err != nil {
		return err
	}
	if _, resp, err := c.EditIssue(p.Owner, p.Name, number, gitea.EditIssueOption{Body: &body}); err != nil {
		return fmt.Errorf("edit description of issue %d of %s: %w", number, p.FullName(), apiErr(resp, err))
	}
	return nil
}

// Comments lists a thread's comments. Forgejo 7 ignores page and limit on
// this endpoint and answers every comment at once; the pager copes either way.
func (f *Forge) Comments(ctx context.Context, t forges.Target) ([]forges.Comment, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	p := t.Project
	list, err := collect(func(page int) ([]*gitea.Comment, *gitea.Response, error) {
		return c.ListIssueComments(p.Owner, p.Name, t.Number, gitea.ListIssueCommentOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize}})
	}, func(c *gitea.Comment) int64 { return c.ID })
	if err != nil {
		return nil, fmt.Errorf("list comments of %s %d of %s: %w", t.Kind, t.Number, p.FullName(), orMissing(c, t, err))
	}
	out := make([]forges.Comment, 0, len(list))
	for _, cm := range list {
		out = append(out, toComment(cm))
	}
	return out, nil
}

func toComment(c *gitea.Comment) forges.Comment {
	out := forges.Comment{ID: c.ID, Body: c.Body, URL: c.HTMLURL, CreatedAt: c.Created, UpdatedAt: c.Updated}
	if c.Poster != nil {
		out.Author = c.Poster.UserName
	}
	return out
}

// CreateComment posts a comment on an issue or pull request thread.
func (f *Forge) CreateComment(ctx context.Context, t forges.Target, body string) (*forges.Comment, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	cm, resp, err := c.CreateIssueComment(t.Project.Owner, t.Project.Name, t.Number, gitea.CreateIssueCommentOption{Body: body})
	if err != nil {
		return nil, fmt.Errorf("comment on %s %d of %s: %w", t.Kind, t.Number, t.Project.FullName(), orMissing(c, t, apiErr(resp, err)))
	}
	out := toComment(cm)
	return &out, nil
}

// orMissing makes err, the failure of a request on t's thread, wrap
// forges.ErrNotFound when the issue or pull request does not exist. Gitea
// (1.26, at least) answers comments of a missing issue with a bare 500, where
// Forgejo 7 says "issue does not exist" (which apiErr maps already).
func orMissing(c *gitea.Client, t forges.Target, err error) error {
	if errors.Is(err, forges.ErrNotFound) {
		return err
	}
	if _, resp, gerr := c.GetIssue(t.Project.Owner, t.Project.Name, t.Number); gerr != nil && resp != nil && resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %s %d: %v", forges.ErrNotFound, t.Kind, t.Number, err)
	}
	return err
}

// EditComment replaces a comment's text.
func (f *Forge) EditComment(ctx context.Context, t forges.Target, commentID int64, body string) (*forges.Comment, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	cm, resp, err := c.EditIssueComment(t.Project.Owner, t.Project.Name, commentID, gitea.EditIssueCommentOption{Body: body})
	if err != nil {
		return nil, fmt.Errorf("edit comment %d on %s %d of %s: %w", commentID, t.Kind, t.Number, t.Project.FullName(), apiErr(resp, err))
	}
	out := toComment(cm)
	return &out, nil
}

// Labels lists the label definitions of a project (colours without '#'),
// with their exclusive flag.
func (f *Forge) Labels(ctx context.Context, p forges.Project) ([]forges.Label, error) {
	list, err := f.labels(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]forges.Label, 0, len(list))
	for _, l := range list {
		out = append(out, forges.Label{Name: l.Name, Color: strings.ToLower(strings.TrimPrefix(l.Color, "#")), Description: l.Description, Exclusive: l.Exclusive})
	}
	return out, nil
}

func (f *Forge) labels(ctx context.Context, p forges.Project) ([]*gitea.Label, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	list, err := collect(func(page int) ([]*gitea.Label, *gitea.Response, error) {
		return c.ListRepoLabels(p.Owner, p.Name, gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize}})
	}, func(l *gitea.Label) int64 { return l.ID })
	if err != nil {
		return nil, fmt.Errorf("list labels of %s: %w", p.FullName(), err)
	}
	return list, nil
}

// ExclusiveScope is the scope Forgejo and Gitea keep one exclusive label
// of on an issue (forges.ExclusiveLabels): the name up to its last '/', as
// their Label.ExclusiveScope has it; "" when the '/' is missing, first or
// last. A "status::x" name has no scope there: marking it exclusive changes
// nothing on the forge, and the engine keeps one status itself; the scoped
// form "status/x" (forges.ScopedStatusPrefix, the default) has one.
func (f *Forge) ExclusiveScope(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 || i == len(name)-1 {
		return ""
	}
	return name[:i]
}

// labelIDs resolves label names to ids: Forgejo 7 adds labels by id only.
// Forgejo accepts duplicate names; the first label of a name wins.
func (f *Forge) labelIDs(ctx context.Context, p forges.Project) (map[string]int64, error) {
	list, err := f.labels(ctx, p)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]int64, len(list))
	for _, l := range list {
		if _, dup := ids[l.Name]; !dup {
			ids[l.Name] = l.ID
		}
	}
	return ids, nil
}

// CreateLabel defines a label, exclusive when l.Exclusive.
func (f *Forge) CreateLabel(ctx context.Context, p forges.Project, l forges.Label) error {
	c, err := f.api(ctx)
	if err != nil {
		return err
	}
	opt := gitea.CreateLabelOption{Name: l.Name, Color: "#" + strings.TrimPrefix(l.Color, "#"), Description: l.Description, Exclusive: l.Exclusive}
	if _, resp, err := c.CreateLabel(p.Owner, p.Name, opt); err != nil {
		return fmt.Errorf("create label %s on %s: %w", l.Name, p.FullName(), apiErr(resp, err))
	}
	return nil
}

// UpdateLabel changes the colour, description and exclusive flag of the
// label named l.Name.
func (f *Forge) UpdateLabel(ctx context.Context, p forges.Project, l forges.Label) error {
	ids, err := f.labelIDs(ctx, p)
	if err != nil {
		return err
	}
	id, ok := ids[l.Name]
	if !ok {
		return fmt.Errorf("update label %s on %s: %w", l.Name, p.FullName(), forges.ErrNotFound)
	}
	c, err := f.api(ctx)
	if err != nil {
		return err
	}
	color := "#" + strings.TrimPrefix(l.Color, "#")
	if _, resp, err := c.EditLabel(p.Owner, p.Name, id, gitea.EditLabelOption{Color: &color, Description: &l.Description, Exclusive: &l.Exclusive}); err != nil {
		return fmt.Errorf("update label %s on %s: %w", l.Name, p.FullName(), apiErr(resp, err))
	}
	return nil
}

// RenameLabel gives the label named from l's name, colour, description
// and exclusive flag (forges.LabelRenamer): the issues that carry it keep
// it under its new name.
func (f *Forge) RenameLabel(ctx context.Context, p forges.Project, from string, l forges.Label) error {
	ids, err := f.labelIDs(ctx, p)
	if err != nil {
		return err
	}
	id, ok := ids[from]
	if !ok {
		return fmt.Errorf("rename label %s on %s: %w", from, p.FullName(), forges.ErrNotFound)
	}
	c, err := f.api(ctx)
	if err != nil {
		return err
	}
	color := "#" + strings.TrimPrefix(l.Color, "#")
	opt := gitea.EditLabelOption{Name: &l.Name, Color: &color, Description: &l.Description, Exclusive: &l.Exclusive}
	if _, resp, err := c.EditLabel(p.Owner, p.Name, id, opt); err != nil {
		return fmt.Errorf("rename label %s to %s on %s: %w", from, l.Name, p.FullName(), apiErr(resp, err))
	}
	return nil
}

// AddLabels puts defined labels on an issue or pull request, by id.
func (f *Forge) AddLabels(ctx context.Context, t forges.Target, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	ids, err := f.labelIDs(ctx, t.Project)
	if err != nil {
		return err
	}
	opt := gitea.IssueLabelsOption{}
	for _, n := range names {
		id, ok := ids[n]
		if !ok {
			return fmt.Errorf("add label %s to %s %d: label %w on %s", n, t.Kind, t.Number, forges.ErrNotFound, t.Project.FullName())
		}
		opt.Labels = append(opt.Labels, id)
	}
	c, err := f.api(ctx)
	if err != nil {
		return err
	}
	if _, resp, err := c.AddIssueLabels(t.Project.Owner, t.Project.Name, t.Number, opt); err != nil {
		return fmt.Errorf("add labels %v to %s %d of %s: %w", names, t.Kind, t.Number, t.Project.FullName(), apiErr(resp, err))
	}
	return nil
}

// RemoveLabel takes a label off; an undefined or absent label is no error
// (Forgejo answers 204 for a label that is not on the issue).
func (f *Forge) RemoveLabel(ctx context.Context, t forges.Target, name string) error {
	ids, err := f.labelIDs(ctx, t.Project)
	if err != nil {
		return err
	}
	id, ok := ids[name]
	if !ok {
		return nil
	}
	c, err := f.api(ctx)
	if err != nil {
		return err
	}
	if resp, err := c.DeleteIssueLabel(t.Project.Owner, t.Project.Name, t.Number, id); err != nil {
		return fmt.Errorf("remove label %s from %s %d of %s: %w", name, t.Kind, t.Number, t.Project.FullName(), apiErr(resp, err))
	}
	return nil
}

// MergeRequest reads a pull request.
func (f *Forge) MergeRequest(ctx context.Context, p forges.Project, number int64) (*forges.MergeRequest, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.GetPullRequest(p.Owner, p.Name, number)
	if err != nil {
		return nil, fmt.Errorf("read pull request %d of %s: %w", number, p.FullName(), apiErr(resp, err))
	}
	return toMergeRequest(pr), nil
}

// toMergeRequest maps a pull request. Forgejo and Gitea compute mergeable in
// the background and say only true or false: false on an open pull request is
// reported as a conflict, although after every push it also means "still
// checking". The engine therefore believes a conflict only when git merge-tree
// on its own clone finds one too (bot.Engine.confirmConflict).
func toMergeRequest(pr *gitea.PullRequest) *forges.MergeRequest {
	out := &forges.MergeRequest{Number: pr.Index, Title: pr.Title, Body: pr.Body, URL: pr.HTMLURL, Mergeable: forges.MergeableUnknown}
	if pr.Poster != nil {
		out.Author = pr.Poster.UserName
	}
	if pr.HasMerged && pr.MergedBy != nil {
		out.MergedBy = pr.MergedBy.UserName
	}
	if pr.Head != nil {
		out.SourceBranch, out.HeadSHA = headBranch(pr.Head.Name, pr.Head.Ref), pr.Head.Sha
	}
	if pr.Base != nil {
		out.TargetBranch = pr.Base.Ref
	}
	switch {
	case pr.HasMerged:
		out.State = forges.MergeRequestMerged
	case pr.State == gitea.StateClosed:
		out.State = forges.MergeRequestClosed
	default:
		out.State = forges.MergeRequestOpen
		out.Mergeable = forges.MergeableConflict
		if pr.Mergeable {
			out.Mergeable = forges.MergeableClean
		}
	}
	return out
}

// headBranch is the name of a pull request's source branch: its label.
// Forgejo and Gitea give the branch as ref only while it exists; once deleted
// (as after a merge), ref is the pull request's own "refs/pull/N/head".
func headBranch(label, ref string) string {
	if label != "" {
		return label
	}
	return ref
}

// MergeRequestForBranch finds the open pull request from branch by listing
// open pull requests (GET /pulls/{base}/{head} needs the base and Gitea 1.22).
func (f *Forge) MergeRequestForBranch(ctx context.Context, p forges.Project, branch string) (*forges.MergeRequest, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	list, err := collect(func(page int) ([]*gitea.PullRequest, *gitea.Response, error) {
		return c.ListRepoPullRequests(p.Owner, p.Name, gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize}})
	}, func(pr *gitea.PullRequest) int64 { return pr.ID })
	if err != nil {
		return nil, fmt.Errorf("find pull request from %s on %s: %w", branch, p.FullName(), err)
	}
	for _, pr := range list {
		if pr.Head != nil && headBranch(pr.Head.Name, pr.Head.Ref) == branch && pr.State == gitea.StateOpen {
			return toMergeRequest(pr), nil
		}
	}
	return nil, fmt.Errorf("find pull request from %s on %s: %w", branch, p.FullName(), forges.ErrNotFound)
}

// CreateMergeRequest opens a pull request.
func (f *Forge) CreateMergeRequest(ctx context.Context, p forges.Project, mr forges.NewMergeRequest) (*forges.MergeRequest, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.CreatePullRequest(p.Owner, p.Name, gitea.CreatePullRequestOption{Head: mr.SourceBranch, Base: mr.TargetBranch, Title: mr.Title, Body: mr.Body})
	if err != nil {
		return nil, fmt.Errorf("open pull request from %s on %s: %w", mr.SourceBranch, p.FullName(), apiErr(resp, err))
	}
	return toMergeRequest(pr), nil
}

// ReviewComments lists submitted reviews' bodies (ID is the review's id, Path
// empty) and their inline comments, created after since, oldest first.
// Requested-reviewer pseudo reviews and pending reviews are skipped.
func (f *Forge) ReviewComments(ctx context.Context, p forges.Project, number int64, since time.Time) ([]forges.ReviewComment, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	reviews, err := collect(func(page int) ([]*gitea.PullReview, *gitea.Response, error) {
		return c.ListPullReviews(p.Owner, p.Name, number, gitea.ListPullReviewsOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize}})
	}, func(r *gitea.PullReview) int64 { return r.ID })
	if err != nil {
		return nil, fmt.Errorf("list reviews of pull request %d of %s: %w", number, p.FullName(), err)
	}
	var out []forges.ReviewComment
	for _, r := range reviews {
		if r.State == gitea.ReviewStateRequestReview || r.State == gitea.ReviewStatePending {
			continue
		}
		author := ""
		if r.Reviewer != nil {
			author = r.Reviewer.UserName
		}
		if r.Body != "" && r.Submitted.After(since) {
			out = append(out, forges.ReviewComment{ID: r.ID, ReviewID: r.ID, Author: author, Body: r.Body, URL: r.HTMLURL, CreatedAt: r.Submitted})
		}
		if r.CodeCommentsCount == 0 {
			continue
		}
		comments, resp, err := c.ListPullReviewComments(p.Owner, p.Name, number, r.ID)
		if err != nil {
			return nil, fmt.Errorf("list comments of review %d of pull request %d of %s: %w", r.ID, number, p.FullName(), apiErr(resp, err))
		}
		for _, cm := range comments {
			if !cm.Created.After(since) {
				continue
			}
			rc := forges.ReviewComment{ID: cm.ID, ReviewID: r.ID, Body: cm.Body, Path: cm.Path, Line: int(cm.LineNum), URL: cm.HTMLURL, CreatedAt: cm.Created}
			if cm.Reviewer != nil {
				rc.Author = cm.Reviewer.UserName
			}
			out = append(out, rc)
		}
	}
	sortReviewComments(out)
	return out, nil
}

// CIStatus combines the latest commit status of each context. Forgejo Actions
// report each job as a commit status too, so this covers Actions. The state is
// computed here rather than taken from Forgejo, which ignores states it does
// not know: error and failure fail, pending and running wait, success and
// warning pass; any other state is left out.
func (f *Forge) CIStatus(ctx context.Context, p forges.Project, sha string) (*forges.CIStatus, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	cs, resp, err := c.GetCombinedStatus(p.Owner, p.Name, sha)
	if err != nil {
		return nil, fmt.Errorf("read CI status of %s on %s: %w", sha, p.FullName(), apiErr(resp, err))
	}
	out := &forges.CIStatus{SHA: sha, State: forges.CINone, Checks: []forges.Check{}}
	for _, s := range cs.Statuses {
		st, ok := ciState(string(s.State))
		if !ok {
			continue
		}
		out.Checks = append(out.Checks, forges.Check{Name: s.Context, State: st, Description: s.Description, URL: s.TargetURL})
	}
	out.State = forges.Combine(out.Checks)
	return out, nil
}

func ciState(s string) (forges.CIState, bool) {
	switch s {
	case "success", "warning":
		return forges.CISuccess, true
	case "pending", "running", "queued", "waiting", "blocked":
		return forges.CIPending, true
	case "failure", "error", "cancelled", "canceled":
		return forges.CIFailure, true
	}
	return "", false
}

// BranchExists tells whether branch exists. Forgejo answers 404 for a missing
// branch (and 500 "branch does not exist" on some routes): both mean false.
func (f *Forge) BranchExists(ctx context.Context, p forges.Project, branch string) (bool, error) {
	c, err := f.api(ctx)
	if err != nil {
		return false, err
	}
	_, resp, err := c.GetRepoBranch(p.Owner, p.Name, branch)
	if err != nil {
		err = apiErr(resp, err)
		if errors.Is(err, forges.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("read branch %s of %s: %w", branch, p.FullName(), err)
	}
	return true, nil
}

func (f *Forge) repo(ctx context.Context, p forges.Project) (*gitea.Repository, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	r, resp, err := c.GetRepo(p.Owner, p.Name)
	if err != nil {
		return nil, fmt.Errorf("read repository %s: %w", p.FullName(), apiErr(resp, err))
	}
	return r, nil
}

// DefaultBranch is the repository's default branch.
func (f *Forge) DefaultBranch(ctx context.Context, p forges.Project) (string, error) {
	r, err := f.repo(ctx, p)
	if err != nil {
		return "", err
	}
	return r.DefaultBranch, nil
}

// CloneURL is the repository's HTTPS clone URL.
func (f *Forge) CloneURL(ctx context.Context, p forges.Project) (string, error) {
	r, err := f.repo(ctx, p)
	if err != nil {
		return "", err
	}
	return r.CloneURL, nil
}

// GitCredentials are Options.Username and the token.
func (f *Forge) GitCredentials(context.Context, forges.Project) (username, password string, err error) {
	return f.username, f.token, nil
}
