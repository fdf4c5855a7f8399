package forgejotest

import (
	"net/http"
	"slices"
	"strings"
)

// What `alfred doctor` inspects: the repository's webhooks (GET
// /repos/{owner}/{repo}/hooks lists the target of SetWebhook) and the token's
// scopes (SetTokenScopes), refused with 403 as Forgejo does.

// HookEvents are the events the fake's webhook sends, as its hook lists them.
var HookEvents = []string{"issues", "issue_assign", "issue_label", "issue_comment",
	"pull_request", "pull_request_assign", "pull_request_label", "pull_request_comment",
	"pull_request_review_approved", "pull_request_review_rejected", "pull_request_review_comment",
	"pull_request_sync", "push", "delete"}

// inspectState is a Server's (its inspected field), read and written with s.mu held.
type inspectState struct {
	scopes []string // nil: every scope ("all")
}

// SetTokenScopes gives the bot's token these scopes, such as "read:issue" or
// "write:repository" (a write scope implies its read); none restores "all".
func (s *Server) SetTokenScopes(scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inspected.scopes = slices.Clone(scopes)
}

// inspect answers what the doctor needs before the regular routes: 403 for
// a scope the token lacks, and the hooks list. It is called with s.mu held
// and reports whether it answered.
func (s *Server) inspect(w http.ResponseWriter, r *http.Request, segs []string) bool {
	if need := requiredScope(r.Method, segs); need != "" && !s.hasScope(need) {
		s.errorJSON(w, http.StatusForbidden, "token does not have at least one of required scope(s): ["+need+"]")
		return true
	}
	if len(segs) != 4 || segs[0] != "repos" || segs[1] != Owner || segs[2] != Repo || segs[3] != "hooks" || r.Method != http.MethodGet {
		return false
	}
	if p := s.users[Bot].permission; p != "owner" && p != "admin" {
		s.errorJSON(w, http.StatusForbidden, "user should be an owner or a collaborator with admin write of a repository")
		return true
	}
	out := []any{}
	if s.hook != nil && pageOne(r) {
		out = append(out, map[string]any{
			"id": 1, "type": "forgejo", "branch_filter": "*", "active": true,
			"config":     map[string]string{"url": s.hook.url, "content_type": "json"},
			"events":     HookEvents,
			"created_at": s.clock, "updated_at": s.clock,
		})
	}
	writeJSON(w, http.StatusOK, out)
	return true
}

func pageOne(r *http.Request) bool {
	p := r.URL.Query().Get("page")
	return p == "" || p == "1"
}

// requiredScope is the scope Forgejo asks of a token for a request.
func requiredScope(method string, segs []string) string {
	var category string
	switch {
	case len(segs) >= 1 && segs[0] == "user":
		category = "user"
	case len(segs) >= 4 && segs[0] == "repos" && (segs[3] == "issues" || segs[3] == "labels"):
		category = "issue"
	case len(segs) >= 3 && segs[0] == "repos":
		category = "repository"
	default:
		return ""
	}
	if method == http.MethodGet {
		return "read:" + category
	}
	return "write:" + category
}

func (s *Server) hasScope(need string) bool {
	scopes := s.inspected.scopes
	if scopes == nil || slices.Contains(scopes, "all") || slices.Contains(scopes, need) {
		return true
	}
	category, _ := strings.CutPrefix(need, "read:")
	return category != need && slices.Contains(scopes, "write:"+category)
}
