package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	gh "github.com/google/go-github/v93/github"

	"github.com/alchemic-studio/alfred/forges"
)

var _ forges.Inspector = (*Forge)(nil)

// hookEvents are the webhook events the GitHub hook parser needs.
var hookEvents = []string{"issues", "issue_comment", "pull_request", "pull_request_review", "push"}

// WebhookEvents are the events a GitHub webhook must send to Alfred.
func (f *Forge) WebhookEvents() []string { return slices.Clone(hookEvents) }

// Webhooks lists the repository's webhooks. GitHub shows a set secret as
// "********": whether there is one is known, never its value.
func (f *Forge) Webhooks(ctx context.Context, p forges.Project) ([]forges.Webhook, error) {
	var out []forges.Webhook
	opts := &gh.ListOptions{PerPage: f.perPage}
	for {
		hooks, resp, err := f.client.Repositories.ListHooks(ctx, p.Owner, p.Name, opts)
		if err != nil {
			return nil, wrap(err, "list webhooks of %s", p.FullName())
		}
		for _, h := range hooks {
			w := forges.Webhook{Events: h.Events, Active: h.GetActive(), SecretKnown: true}
			if c := h.Config; c != nil {
				w.URL = c.GetURL()
				w.HasSecret = c.GetSecret() != ""
			}
			out = append(out, w)
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// TokenAccess reads the repository: a classic token's scopes come back in
// X-OAuth-Scopes, and the account's permissions in the body. Fine-grained
// and App tokens have no such header; reads of each area are tried instead
// and write access is known only from the account's permission.
func (f *Forge) TokenAccess(ctx context.Context, p forges.Project) ([]forges.Access, error) {
	repo, resp, err := f.client.Repositories.Get(ctx, p.Owner, p.Name)
	if err != nil {
		return nil, wrap(err, "read repository %s", p.FullName())
	}
	push := repo.GetPermissions().GetPush()
	header, classic := resp.Header[http.CanonicalHeaderKey("X-OAuth-Scopes")]
	if classic {
		return classicAccess(scopeList(strings.Join(header, ",")), push, repo.GetPrivate()), nil
	}
	var out []forges.Access
	_, _, err = f.client.Issues.ListByRepo(ctx, p.Owner, p.Name, &gh.IssueListByRepoOptions{ListOptions: gh.ListOptions{PerPage: 1}})
	if a, err := probed(forges.AreaIssues, "Issues: read and write", err); err == nil {
		out = append(out, a)
	} else {
		return out, wrap(err, "probe issues of %s", p.FullName())
	}
	_, _, err = f.client.PullRequests.List(ctx, p.Owner, p.Name, &gh.PullRequestListOptions{ListOptions: gh.ListOptions{PerPage: 1}})
	if a, err := probed(forges.AreaPullRequests, "Pull requests: read and write", err); err == nil {
		out = append(out, a)
	} else {
		return out, wrap(err, "probe pull requests of %s", p.FullName())
	}
	w := forges.Access{Area: forges.AreaRepositoryWrite, OK: push,
		Detail: "the account may push; a fine-grained token's Contents: write cannot be read, only seen failing at the first push"}
	if !push {
		w.Known, w.Detail = true, "the account may not push to "+p.FullName()
	}
	out = append(out, w)
	_, _, err = f.client.Repositories.ListHooks(ctx, p.Owner, p.Name, &gh.ListOptions{PerPage: 1})
	a, err := probed(forges.AreaWebhooksRead, "Webhooks: read (and admin of the repository)", err)
	if err != nil {
		return out, wrap(err, "probe webhooks of %s", p.FullName())
	}
	return append(out, a), nil
}

// classicAccess judges the scopes of a classic token.
func classicAccess(scopes []string, push, private bool) []forges.Access {
	has := func(any ...string) bool {
		return slices.ContainsFunc(any, func(s string) bool { return slices.Contains(scopes, s) })
	}
	repoScope := has("repo") || !private && has("public_repo")
	need := "repo"
	if !private {
		need = "repo or public_repo"
	}
	got := "token scopes: " + strings.Join(scopes, ", ")
	if len(scopes) == 0 {
		got = "the token has no scope"
	}
	area := func(name string, ok bool, want string) forges.Access {
		a := forges.Access{Area: name, OK: ok, Known: true, Detail: got}
		if !ok {
			a.Detail = got + "; it needs " + want
		}
		return a
	}
	out := []forges.Access{
		area(forges.AreaIssues, repoScope, need),
		area(forges.AreaPullRequests, repoScope, need),
		area(forges.AreaRepositoryWrite, repoScope && push, need+" and push access for the account"),
		area(forges.AreaWebhooksRead, has("admin:repo_hook", "write:repo_hook", "read:repo_hook"), "read:repo_hook"),
	}
	return out
}

func scopeList(h string) []string {
	var out []string
	for _, s := range strings.Split(h, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// probed turns the answer to a read into an Access: 401, 403 and 404 mean
// the token does not reach the area; other errors are returned.
func probed(area, need string, err error) (forges.Access, error) {
	a := forges.Access{Area: area, Known: true}
	var er *gh.ErrorResponse
	switch {
	case err == nil:
		a.OK, a.Detail = true, "reached"
	case errors.As(err, &er) && er.Response != nil && slices.Contains([]int{401, 403, 404}, er.Response.StatusCode):
		a.Detail = fmt.Sprintf("GitHub answered %d (%s): the token needs %s", er.Response.StatusCode, er.Message, need)
	default:
		return a, err
	}
	return a, nil
}
