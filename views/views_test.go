package views

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges/setup"
)

func serve(t *testing.T, d Deps) *httptest.Server {
	t.Helper()
	r := mux.NewRouter()
	Register(r, d)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthAndReadiness(t *testing.T) {
	var failing error
	srv := serve(t, Deps{Ready: func(context.Context) error { return failing }})
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	if code, _ := get(t, srv.URL+"/readyz"); code != 200 {
		t.Fatalf("readyz while ready: %d", code)
	}
	failing = errors.New("state store is read-only")
	code, body := get(t, srv.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "read-only") {
		t.Fatalf("readyz while not ready: %d %q", code, body)
	}
}

func TestHomeSaysWhatIsMissing(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": "http://127.0.0.1:3000", "ALFRED_FORGE_TOKEN": "tok-secret-1"}[k]
		return v, ok
	}
	c, err := config.Load("serve", nil, lookup, io.Discard, setup.ConfigKinds())
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Deps{Version: "test", Config: c})
	if code, body := get(t, srv.URL+"/"); code != 200 || !strings.Contains(body, `data-test="missing"`) || !strings.Contains(body, "ALFRED_WEBHOOK_SECRETS") {
		t.Errorf("home: %d, or it does not say what is missing", code)
	}
	code, body := get(t, srv.URL+"/config")
	if code != 200 {
		t.Fatalf("configuration page: %d", code)
	}
	for _, want := range []string{`data-test="missing"`, "ALFRED_WEBHOOK_SECRETS", "/webhooks/forgejo", "(set, hidden)"} {
		if !strings.Contains(body, want) {
			t.Errorf("configuration page lacks %q", want)
		}
	}
	if strings.Contains(body, "tok-secret-1") {
		t.Error("configuration page shows the forge token")
	}
	if code, _ := get(t, srv.URL+"/nope"); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
}
