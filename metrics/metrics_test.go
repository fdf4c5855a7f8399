package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, h http.Handler, auth string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestSeries: what the engine and the server report is what /metrics says.
func TestSeries(t *testing.T) {
	m := New("v1.2.3")
	m.RunEnded("analysis", "claude-code", "succeeded", 3*time.Second)
	m.RunEnded("ci_fix", "claude-code", "failed", time.Second)
	m.SessionStarted("resumed")
	m.SessionStarted("fresh (no prior session)")
	m.PanicRecovered("event")
	m.EventQuarantined()
	m.Gauge("alfred_runs_in_flight", "runs", func() float64 { return 2 })

	hooks := m.Webhooks("forgejo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(map[string]int{"/ok": http.StatusAccepted, "/bad": http.StatusUnauthorized, "/ignored": http.StatusOK}[r.URL.Path])
	}))
	for _, p := range []string{"/ok", "/ok", "/bad", "/ignored"} {
		hooks.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, p, nil))
	}

	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
		}
	}))
	defer forge.Close()
	c := &http.Client{Transport: m.Transport("forgejo", nil)}
	for _, p := range []string{"/user", "/missing"} {
		resp, err := c.Get(forge.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if _, err := c.Get("http://127.0.0.1:1/refused"); err == nil {
		t.Fatal("a request to a closed port succeeded")
	}

	code, body := scrape(t, m.Handler(""), "")
	if code != http.StatusOK {
		t.Fatalf("scrape: %d", code)
	}
	for _, want := range []string{
		`alfred_build_info{version="v1.2.3"} 1`,
		`alfred_runs_total{adapter="claude-code",phase="analysis",status="succeeded"} 1`,
		`alfred_runs_total{adapter="claude-code",phase="ci_fix",status="failed"} 1`,
		`alfred_run_duration_seconds_count{phase="analysis"} 1`,
		`alfred_sessions_total{start="resumed"} 1`,
		`alfred_sessions_total{start="fresh (no prior session)"} 1`,
		`alfred_panics_recovered_total{in="event"} 1`,
		`alfred_events_quarantined_total 1`,
		`alfred_runs_in_flight 2`,
		`alfred_webhooks_total{forge="forgejo",outcome="accepted"} 2`,
		`alfred_webhooks_total{forge="forgejo",outcome="rejected"} 1`,
		`alfred_webhooks_total{forge="forgejo",outcome="ignored"} 1`,
		`alfred_webhook_duration_seconds_count{forge="forgejo"} 4`,
		`alfred_forge_calls_total{forge="forgejo",method="GET",status="2xx"} 1`,
		`alfred_forge_calls_total{forge="forgejo",method="GET",status="4xx"} 1`,
		`alfred_forge_calls_total{forge="forgejo",method="GET",status="error"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
}

func TestToken(t *testing.T) {
	h := New("dev").Handler("s3cret-token")
	for _, tc := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer wrong", 401}, {"s3cret-token", 401}, {"Bearer s3cret-token", 200}} {
		if code, _ := scrape(t, h, tc.auth); code != tc.code {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, code, tc.code)
		}
	}
}

// TestNil: a nil *Metrics counts nothing and passes handlers through.
func TestNil(t *testing.T) {
	var m *Metrics
	m.RunEnded("analysis", "fake", "succeeded", time.Second)
	m.SessionStarted("none")
	m.PanicRecovered("poll")
	m.EventQuarantined()
	m.Gauge("x", "y", func() float64 { return 1 })
	m.EventsWaiting(func() map[string]int { return nil })
	m.ContainersRunning("image", func() int { return 1 })
	m.StateWritten(time.Second, nil)
	m.RoutingError("forgejo")
	rec := httptest.NewRecorder()
	m.Webhooks("forgejo", http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhooks/forgejo", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a nil Metrics' webhook handler answered %d, want the wrapped handler's 404", rec.Code)
	}
	if m.Transport("forgejo", http.DefaultTransport) != http.DefaultTransport {
		t.Error("a nil Metrics wrapped the forge's transport")
	}
}
