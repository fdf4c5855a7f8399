package github

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

// TestWebhookHandler drives the shared handler with Hooks and real payloads:
// verify before parse, status codes, and the configured forge name on the event.
func TestWebhookHandler(t *testing.T) {
	secrets := []string{"old-secret", "s3cret"}
	var got []*forges.Event
	sink := func(_ context.Context, ev *forges.Event) error { got = append(got, ev); return nil }
	srv := httptest.NewServer(forges.NewWebhookHandler("gh", Hooks{}, secrets, sink, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)

	labeled := fixture(t, "issues/labeled.payload.json")
	tests := []struct {
		name, event, secret string
		body                []byte
		want                int
	}{
		{"labeled", "issues", "s3cret", labeled, http.StatusAccepted},
		{"older secret", "issues", "old-secret", labeled, http.StatusAccepted},
		{"wrong secret", "issues", "nope", labeled, http.StatusUnauthorized},
		{"unsigned", "issues", "", labeled, http.StatusUnauthorized},
		{"malformed", "issues", "s3cret", []byte(`{"action":"opened","issue":`), http.StatusBadRequest},
		{"ping", "ping", "s3cret", fixture(t, "ping/payload.json"), http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(headerEvent, tc.event)
			req.Header.Set(headerDelivery, "d-"+tc.name)
			if tc.secret != "" {
				req.Header.Set(headerSignature, "sha256="+forges.SignHMACSHA256(tc.secret, tc.body))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, strings.TrimSpace(string(msg)), tc.want)
			}
			if tc.want != http.StatusAccepted {
				if len(got) != 0 {
					t.Errorf("sink got %d events for a %d answer", len(got), tc.want)
				}
				return
			}
			if len(got) != 1 || got[0].Type != forges.EventIssueLabeled || got[0].Target.Project.Forge != "gh" || got[0].DeliveryID != "d-"+tc.name {
				t.Errorf("sink got %+v", got)
			}
		})
	}
}
