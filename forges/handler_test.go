package forges

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// testHooks is a minimal Hooks: HMAC in X-Test-Signature, the body is a JSON
// Event. The forge sub-packages test their real parsers.
type testHooks struct{ parsed int }

func (h *testHooks) Verify(hd http.Header, body []byte, secrets []string) error {
	return VerifyHMACSHA256("X-Test-Signature", hd.Get("X-Test-Signature"), body, secrets)
}

func (h *testHooks) Parse(hd http.Header, body []byte) (*Event, error) {
	h.parsed++
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	ev.DeliveryID = hd.Get("X-Test-Delivery")
	return &ev, nil
}

func TestWebhookHandler(t *testing.T) {
	const secret = "s3cret"
	signed := func(body string) http.Header {
		return http.Header{"X-Test-Signature": {SignHMACSHA256(secret, []byte(body))}, "X-Test-Delivery": {"d-1"}}
	}
	accepted := `{"type":"issue_opened","target":{"project":{"owner":"alice","name":"demo"},"kind":"issue","number":7}}`
	for _, tc := range []struct {
		name       string
		method     string
		body       string
		header     http.Header
		sinkErr    error
		wantStatus int
		wantSink   bool
		wantParse  bool
		wantText   string
	}{
		{"accepted", "POST", accepted, signed(accepted), nil, 202, true, true, "accepted"},
		{"ignored", "POST", `{"type":"ignored","reason":"event wiki is not used"}`, signed(`{"type":"ignored","reason":"event wiki is not used"}`), nil, 200, false, true, "ignored: event wiki is not used"},
		{"bad signature is not parsed", "POST", accepted, http.Header{"X-Test-Signature": {SignHMACSHA256("wrong", []byte(accepted))}}, nil, 401, false, false, "matches no configured secret"},
		{"missing signature", "POST", accepted, http.Header{}, nil, 401, false, false, "missing X-Test-Signature"},
		{"malformed", "POST", `{"type":`, signed(`{"type":`), nil, 400, false, true, "malformed"},
		{"sink fails", "POST", accepted, signed(accepted), errors.New("state store down"), 500, true, true, "deliver again"},
		{"get", "GET", "", http.Header{}, nil, 405, false, false, "POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hooks := &testHooks{}
			var got *Event
			sink := func(ctx context.Context, ev *Event) error { got = ev; return tc.sinkErr }
			h := NewWebhookHandler("forgejo-main", hooks, []string{"old", secret}, sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
			req := httptest.NewRequest(tc.method, "/webhooks/forgejo-main", strings.NewReader(tc.body))
			req.Header = tc.header
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d (%q), want %d", rec.Code, rec.Body.String(), tc.wantStatus)
			}
			if r := h.Refused(); (r.Count == 1) != (tc.wantStatus == http.StatusUnauthorized) || r.Count > 1 ||
				r.Count == 1 && (r.Reason == "" || r.First.IsZero() || r.Last.Before(r.First)) {
				t.Errorf("Refused() = %+v after a %d", r, rec.Code)
			}
			text := rec.Body.String()
			if !strings.Contains(text, tc.wantText) || strings.Count(text, "\n") != 1 {
				t.Errorf("body = %q, want one line containing %q", text, tc.wantText)
			}
			if strings.Contains(text, secret) {
				t.Errorf("answer leaks the secret: %q", text)
			}
			if (got != nil) != tc.wantSink {
				t.Errorf("sink called = %v, want %v", got != nil, tc.wantSink)
			}
			if (hooks.parsed > 0) != tc.wantParse {
				t.Errorf("parsed = %v, want %v", hooks.parsed > 0, tc.wantParse)
			}
			if got != nil && (got.Target.Project.Forge != "forgejo-main" || got.DeliveryID != "d-1") {
				t.Errorf("event = %+v, want Forge forgejo-main and delivery d-1", got)
			}
		})
	}
}

func TestWebhookHandlerBodyCap(t *testing.T) {
	hooks := &testHooks{}
	h := NewWebhookHandler("f", hooks, []string{"s"}, func(context.Context, *Event) error { return nil }, nil)
	big := strings.Repeat("x", MaxWebhookBody+1)
	req := httptest.NewRequest("POST", "/webhooks/f", strings.NewReader(big))
	req.Header.Set("X-Test-Signature", SignHMACSHA256("s", []byte(big)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || hooks.parsed != 0 {
		t.Errorf("status = %d, parsed %d; want 413 and nothing parsed", rec.Code, hooks.parsed)
	}
}
