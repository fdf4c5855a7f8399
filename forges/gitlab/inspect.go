package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/alchemic-studio/alfred/forges"
)

var _ forges.Inspector = (*Forge)(nil)

// hookEvents are the webhook events the GitLab hook parser needs, named as
// the hook's *_events settings (without the suffix).
var hookEvents = []string{"issues", "note", "merge_requests", "pipeline", "push"}

// WebhookEvents are the events a GitLab webhook must send to Alfred.
func (f *Forge) WebhookEvents() []string { return slices.Clone(hookEvents) }

// Webhooks lists the project's webhooks. GitLab says whether a hook has a
// secret token (token_present), never the token.
func (f *Forge) Webhooks(ctx context.Context, p forges.Project) ([]forges.Webhook, error) {
	hooks, err := collect(func(o gl.ListOptions) ([]*gl.ProjectHook, *gl.Response, error) {
		return f.client.Projects.ListProjectHooks(pid(p), &gl.ListProjectHooksOptions{ListOptions: o}, gl.WithContext(ctx))
	})
	if err != nil {
		return nil, wrap(err, "list webhooks of %s", p.FullName())
	}
	out := make([]forges.Webhook, 0, len(hooks))
	for _, h := range hooks {
		var events []string
		for name, on := range map[string]bool{"issues": h.IssuesEvents, "note": h.NoteEvents, "merge_requests": h.MergeRequestsEvents,
			"pipeline": h.PipelineEvents, "push": h.PushEvents, "job": h.JobEvents, "tag_push": h.TagPushEvents} {
			if on {
				events = append(events, name)
			}
		}
		slices.Sort(events)
		// GitLab disables a failing hook for a while (disabled_until).
		out = append(out, forges.Webhook{URL: h.URL, Events: events, Active: h.DisabledUntil == nil,
			HasSecret: h.TokenPresent, SecretKnown: true})
	}
	return out, nil
}

// TokenAccess reads the token's own scopes (GET /personal_access_tokens/self,
// which project and group access tokens answer too): the api scope reaches
// issues, merge requests and writes; the account's role in the project decides
// the rest (Developer to push, Maintainer to read webhooks), tried with a read
// of the hooks.
func (f *Forge) TokenAccess(ctx context.Context, p forges.Project) ([]forges.Access, error) {
	scopes, known, err := f.tokenScopes(ctx)
	if err != nil {
		return nil, err
	}
	me, err := f.Me(ctx)
	if err != nil {
		return nil, err
	}
	perm, err := f.Permission(ctx, p, me.Login)
	if err != nil {
		return nil, err
	}
	api := slices.Contains(scopes, "api")
	got := "token scopes: " + strings.Join(scopes, ", ")
	area := func(name string, ok bool, want string) forges.Access {
		a := forges.Access{Area: name, OK: ok, Known: known, Detail: got}
		switch {
		case !known:
			a.OK, a.Detail = true, "GitLab does not show this token's scopes; it needs "+want
		case !ok:
			a.Detail = got + "; it needs " + want
		}
		return a
	}
	out := []forges.Access{
		area(forges.AreaIssues, api, "the api scope"),
		area(forges.AreaPullRequests, api, "the api scope"),
		area(forges.AreaRepositoryWrite, api, "the api scope"),
	}
	if perm < forges.PermissionWrite {
		out[2] = forges.Access{Area: forges.AreaRepositoryWrite, Known: true,
			Detail: fmt.Sprintf("@%s has %s access to %s; it needs Developer or more", me.Login, perm, p.FullName())}
	}
	hooks, err := f.webhooksAccess(ctx, p, me.Login)
	if err != nil {
		return out, err
	}
	return append(out, hooks), nil
}

// tokenScopes returns the scopes of the token; known is false where GitLab
// does not show them (an instance older than GitLab 15.5, or an OAuth token).
func (f *Forge) tokenScopes(ctx context.Context) (scopes []string, known bool, err error) {
	tok, _, err := f.client.PersonalAccessTokens.GetSinglePersonalAccessToken(gl.WithContext(ctx))
	switch {
	case err == nil:
		return tok.Scopes, true, nil
	case isStatus(err, http.StatusNotFound, http.StatusForbidden):
		return nil, false, nil
	default:
		return nil, false, wrap(err, "read the token's scopes")
	}
}

// webhooksAccess tells whether the token, of the account login, may read
// the project's webhooks, by listing one.
func (f *Forge) webhooksAccess(ctx context.Context, p forges.Project, login string) (forges.Access, error) {
	_, _, err := f.client.Projects.ListProjectHooks(pid(p), &gl.ListProjectHooksOptions{ListOptions: gl.ListOptions{PerPage: 1}}, gl.WithContext(ctx))
	hooks := forges.Access{Area: forges.AreaWebhooksRead, OK: true, Known: true, Detail: "reached"}
	switch {
	case isStatus(err, http.StatusForbidden, http.StatusNotFound, http.StatusUnauthorized):
		hooks.OK, hooks.Detail = false, fmt.Sprintf("listing webhooks was refused (%v): the token needs api or read_api, and @%s the Maintainer role", err, login)
	case err != nil:
		return hooks, wrap(err, "probe webhooks of %s", p.FullName())
	}
	return hooks, nil
}

func isStatus(err error, codes ...int) bool {
	var er *gl.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && slices.Contains(codes, er.Response.StatusCode)
}
