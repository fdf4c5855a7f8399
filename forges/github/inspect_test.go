package github

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/github/githubtest"
)

// inspectFake puts the webhooks list and a classic token's X-OAuth-Scopes in
// front of githubtest.Server (and an empty issues list, which it lacks). A nil scopes sends no header, as for fine-grained
// tokens; hooksStatus other than 200 refuses the list.
type inspectFake struct {
	*githubtest.Server
	srv         *httptest.Server
	scopes      []string
	hooks       []map[string]any
	hooksStatus int
}

func newInspectFake(t *testing.T) *inspectFake {
	x := &inspectFake{Server: githubtest.NewServer(t), hooksStatus: http.StatusOK}
	x.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if x.scopes != nil {
			w.Header().Set("X-OAuth-Scopes", strings.Join(x.scopes, ", "))
		}
		if r.URL.Path == "/api/v3/repos/acme/demo/issues" && r.Header.Get("Authorization") == "Bearer "+x.Token() {
			w.Header().Set("Content-Type", "application/json") // githubtest does not list issues
			_, _ = w.Write([]byte("[]"))
			return
		}
		if r.URL.Path != "/api/v3/repos/acme/demo/hooks" || r.Header.Get("Authorization") != "Bearer "+x.Token() {
			x.Server.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(x.hooksStatus)
		if x.hooksStatus != http.StatusOK {
			_ = json.NewEncoder(w).Encode(map[string]any{"message": "Resource not accessible by personal access token", "status": "403"})
			return
		}
		_ = json.NewEncoder(w).Encode(x.hooks)
	}))
	t.Cleanup(x.srv.Close)
	return x
}

func (x *inspectFake) forge(t *testing.T) *Forge {
	f, err := New(Options{BaseURL: x.srv.URL + "/api/v3/", Token: x.Token(), Retry: forges.RetryPolicy{MinBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func ghHook(url, secret string, active bool, events ...string) map[string]any {
	cfg := map[string]any{"url": url, "content_type": "json", "insecure_ssl": "0"}
	if secret != "" {
		cfg["secret"] = secret
	}
	return map[string]any{"id": 1, "type": "Repository", "name": "web", "active": active, "events": events, "config": cfg}
}

func TestWebhooks(t *testing.T) {
	x := newInspectFake(t)
	x.hooks = []map[string]any{
		ghHook("https://alfred.example.com/webhooks/github", "********", true, "issues", "issue_comment", "pull_request", "pull_request_review", "push"),
		ghHook("https://old.example.com/hook", "", false, "*"),
	}
	got, err := x.forge(t).Webhooks(context.Background(), forges.Project{Owner: "acme", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	want := []forges.Webhook{
		{URL: "https://alfred.example.com/webhooks/github", Events: []string{"issues", "issue_comment", "pull_request", "pull_request_review", "push"}, Active: true, HasSecret: true, SecretKnown: true},
		{URL: "https://old.example.com/hook", Events: []string{"*"}, SecretKnown: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d hooks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.URL != w.URL || !slices.Equal(g.Events, w.Events) || g.Active != w.Active || g.HasSecret != w.HasSecret || g.SecretKnown != w.SecretKnown {
			t.Errorf("hook %d = %+v, want %+v", i, g, w)
		}
	}
	if miss := got[0].MissingEvents((&Forge{}).WebhookEvents()); len(miss) > 0 {
		t.Errorf("the right hook misses %q", miss)
	}
	if miss := got[1].MissingEvents([]string{"issues"}); len(miss) > 0 {
		t.Errorf("a * hook misses %q", miss)
	}
}

func TestTokenAccess(t *testing.T) {
	all := forges.Areas()
	tests := []struct {
		name        string
		scopes      []string
		hooksStatus int
		wantFail    []string
		wantKnown   bool
	}{
		{name: "classic token with every scope", scopes: []string{"repo", "read:repo_hook"}, wantKnown: true},
		{name: "classic token without hook scope", scopes: []string{"repo"}, wantFail: []string{forges.AreaWebhooksRead}, wantKnown: true},
		{name: "classic token without repo", scopes: []string{"read:repo_hook", "gist"},
			wantFail: []string{forges.AreaIssues, forges.AreaPullRequests, forges.AreaRepositoryWrite}, wantKnown: true},
		{name: "fine-grained token", hooksStatus: http.StatusOK},
		{name: "fine-grained token without webhooks", hooksStatus: http.StatusForbidden, wantFail: []string{forges.AreaWebhooksRead}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newInspectFake(t)
			x.scopes = tt.scopes
			if tt.hooksStatus != 0 {
				x.hooksStatus = tt.hooksStatus
			}
			got, err := x.forge(t).TokenAccess(context.Background(), forges.Project{Owner: "acme", Name: "demo"})
			if err != nil {
				t.Fatal(err)
			}
			var areas, failed []string
			for _, a := range got {
				areas = append(areas, a.Area)
				if !a.OK {
					failed = append(failed, a.Area)
				}
				if a.Area == forges.AreaRepositoryWrite && a.Known != tt.wantKnown {
					t.Errorf("repository write: Known = %v, want %v (%s)", a.Known, tt.wantKnown, a.Detail)
				}
			}
			if !slices.Equal(areas, all) {
				t.Errorf("areas %q, want %q", areas, all)
			}
			if !slices.Equal(failed, tt.wantFail) {
				t.Errorf("failed %q, want %q: %+v", failed, tt.wantFail, got)
			}
		})
	}
}
