package gitlabtest

import (
	"net/http"
	"slices"
	"strconv"
)

// What `alfred doctor` inspects: the project's webhooks (AddHook, listed at
// GET /projects/:id/hooks to a Maintainer) and the token's scopes
// (SetTokenScopes, read at GET /personal_access_tokens/self and enforced
// with GitLab's 403 insufficient_scope).

type fakeHook struct {
	id     int64
	url    string
	events []string
	secret bool
}

// inspectState is a Server's (its inspected field), read and written with mu held.
type inspectState struct {
	scopes []string
	hooks  []fakeHook
}

// SetTokenScopes sets the token's scopes (default: api).
func (f *Server) SetTokenScopes(scopes ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inspected.scopes = slices.Clone(scopes)
}

// AddHook adds a project webhook to url sending events ("issues", "note",
// "merge_requests", "pipeline", "push", "job", "tag_push"), with a secret
// token or not. The fake sends no webhook.
func (f *Server) AddHook(url string, secret bool, events ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &f.inspected
	st.hooks = append(st.hooks, fakeHook{id: f.id(), url: url, events: slices.Clone(events), secret: secret})
}

// inspect answers what the doctor needs before the regular routes; it is
// called with mu held and reports whether it answered.
func (f *Server) inspect(w http.ResponseWriter, r *http.Request, seg []string) bool {
	st := &f.inspected
	if match(seg, "personal_access_tokens", "self") && r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": 77, "name": "alfred", "revoked": false, "active": true, "scopes": st.scopes,
			"user_id": f.users[f.bot].ID, "created_at": stamp(f.clock), "expires_at": nil,
		})
		return true
	}
	need := "api"
	if r.Method == http.MethodGet {
		need = "read_api"
	}
	if !slices.Contains(st.scopes, "api") && !slices.Contains(st.scopes, need) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "insufficient_scope",
			"error_description": "The request requires higher privileges than provided by the access token.", "scope": "api " + need})
		return true
	}
	if len(seg) != 3 || seg[0] != "projects" || seg[2] != "hooks" || r.Method != http.MethodGet ||
		seg[1] != f.path && seg[1] != strconv.FormatInt(f.project, 10) {
		return false
	}
	if f.users[f.bot].Access < 40 {
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "403 Forbidden"})
		return true
	}
	out := make([]any, 0, len(st.hooks))
	for _, h := range st.hooks {
		o := map[string]any{"id": h.id, "url": h.url, "project_id": f.project, "created_at": stamp(f.clock),
			"token_present": h.secret, "enable_ssl_verification": true, "disabled_until": nil}
		for _, e := range []string{"issues", "note", "merge_requests", "pipeline", "push", "job", "tag_push"} {
			o[e+"_events"] = slices.Contains(h.events, e)
		}
		out = append(out, o)
	}
	f.page(w, r, out)
	return true
}
