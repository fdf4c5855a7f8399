package views

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRecover(t *testing.T) {
	var logs bytes.Buffer
	h := Recover(slog.New(slog.NewTextHandler(&logs, nil)), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("parser choked")
		}
		w.Write([]byte("fine"))
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		path string
		code int
	}{{"/boom", 500}, {"/ok", 200}} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
	}
	if !strings.Contains(logs.String(), `panic="parser choked"`) || !strings.Contains(logs.String(), "recover_test.go") {
		t.Errorf("log: %s", logs.String())
	}
}
