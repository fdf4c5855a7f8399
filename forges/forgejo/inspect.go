package forgejo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
)

var _ forges.Inspector = (*Forge)(nil)

// hookEvents are the webhook events the Forgejo hook parser needs.
var hookEvents = []string{"issues", "issue_label", "issue_comment", "pull_request", "pull_request_sync", "pull_request_comment", "push"}

// WebhookEvents are the events a Forgejo webhook must send to Alfred.
func (f *Forge) WebhookEvents() []string { return append([]string(nil), hookEvents...) }

// Webhooks lists the project's webhooks. Forgejo never returns a hook's
// secret, nor whether it has one: SecretKnown is false.
func (f *Forge) Webhooks(ctx context.Context, p forges.Project) ([]forges.Webhook, error) {
	c, err := f.api(ctx)
	if err != nil {
		return nil, err
	}
	hooks, err := collect(func(page int) ([]*gitea.Hook, *gitea.Response, error) {
		return c.ListRepoHooks(p.Owner, p.Name, gitea.ListHooksOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize}})
	}, func(h *gitea.Hook) int64 { return h.ID })
	if err != nil {
		return nil, fmt.Errorf("list webhooks of %s: %w", p.FullName(), err)
	}
	out := make([]forges.Webhook, 0, len(hooks))
	for _, h := range hooks {
		out = append(out, forges.Webhook{URL: h.Config["url"], Events: h.Events, Active: h.Active})
	}
	return out, nil
}

// TokenAccess probes each area with a harmless request, since Forgejo does
// not show a token its own scopes: a read, or a write to an object that
// cannot exist (id 0), which Forgejo refuses with 403 before looking for the
// object when the token lacks the scope or the account the permission.
func (f *Forge) TokenAccess(ctx context.Context, p forges.Project) ([]forges.Access, error) {
	probes := []struct{ area, method, path, scope string }{
		{forges.AreaIssues, http.MethodPatch, repoPath(p) + "/labels/0", "write:issue"},
		{forges.AreaPullRequests, http.MethodGet, repoPath(p) + "/pulls?limit=1", "read:repository"},
		{forges.AreaRepositoryWrite, http.MethodPatch, repoPath(p) + "/pulls/0", "write:repository"},
		{forges.AreaWebhooksRead, http.MethodGet, repoPath(p) + "/hooks?limit=1", "read:repository and admin of the repository"},
	}
	out := make([]forges.Access, 0, len(probes))
	for _, pr := range probes {
		status, body, err := f.call(ctx, pr.method, pr.path)
		if err != nil {
			return out, fmt.Errorf("probe %s of %s: %w", pr.area, p.FullName(), err)
		}
		a := forges.Access{Area: pr.area, Known: true}
		switch {
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			a.Detail = fmt.Sprintf("%s %s answered %d (%s): the token needs %s", pr.method, pr.path, status, message(body), pr.scope)
		case status >= 500:
			return out, fmt.Errorf("probe %s of %s: HTTP %d: %s", pr.area, p.FullName(), status, message(body))
		default:
			a.OK, a.Detail = true, "reached ("+pr.scope+")"
		}
		out = append(out, a)
	}
	return out, nil
}

func repoPath(p forges.Project) string {
	return "/repos/" + url.PathEscape(p.Owner) + "/" + url.PathEscape(p.Name)
}

// call sends one API request (a PATCH carries an empty JSON object) and
// returns the status and body; only transport failures are errors.
func (f *Forge) call(ctx context.Context, method, path string) (int, []byte, error) {
	var body io.Reader
	if method != http.MethodGet {
		body = bytes.NewReader([]byte("{}"))
	}
	req, err := http.NewRequestWithContext(ctx, method, f.baseURL+"/api/v1"+path, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "token "+f.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "alfred")
	resp, err := f.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read %s %s: %w", method, path, err)
	}
	return resp.StatusCode, data, nil
}

// message is the "message" of a Forgejo error body, or the body's start.
func message(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	s := oneLine(string(body))
	if len(s) > 200 {
		s = s[:200]
	}
	return strings.TrimSpace(s)
}
