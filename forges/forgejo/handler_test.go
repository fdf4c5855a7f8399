package forgejo

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

// TestWebhookHandler runs recorded deliveries through the shared handler.
func TestWebhookHandler(t *testing.T) {
	var got []*forges.Event
	sink := func(_ context.Context, ev *forges.Event) error { got = append(got, ev); return nil }
	srv := httptest.NewServer(forges.NewWebhookHandler("forgejo-main", Hooks{}, []string{"old", fixtureSecret}, sink, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	post := func(name string, mutate func(http.Header, []byte) []byte) int {
		h, body := delivery(t, name)
		if mutate != nil {
			body = mutate(h, body)
		}
		req, _ := http.NewRequest("POST", srv.URL+"/webhooks/forgejo-main", bytes.NewReader(body))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("hook-issue_assign-assigned", nil); code != 202 {
		t.Errorf("signed delivery: %d, want 202", code)
	}
	if code := post("hook-create", nil); code != 200 {
		t.Errorf("ignored delivery: %d, want 200", code)
	}
	if code := post("hook-push", func(h http.Header, b []byte) []byte { return b[:len(b)-3] }); code != 401 {
		t.Errorf("truncated delivery: %d, want 401", code)
	}
	if code := post("hook-push", func(h http.Header, b []byte) []byte {
		h.Del("X-Forgejo-Signature")
		h.Del("X-Gitea-Signature")
		return b
	}); code != 401 {
		t.Errorf("unsigned delivery: %d, want 401", code)
	}
	if len(got) != 1 || got[0].Type != forges.EventIssueAssigned || got[0].Target.Project.Forge != "forgejo-main" {
		t.Errorf("sink got %+v, want one issue_assigned event for forge forgejo-main", got)
	}
}
