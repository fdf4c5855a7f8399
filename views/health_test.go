package views

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log destination safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestReadyzSaysWhyAndNotes(t *testing.T) {
	var mu sync.Mutex
	var failing error
	notes := []string{"state mirror behind by 3 commits"}
	logged := &lockedBuffer{}
	srv := serve(t, Deps{
		Ready:  func(context.Context) error { mu.Lock(); defer mu.Unlock(); return failing },
		Notes:  func() []string { return notes },
		Logger: slog.New(slog.NewTextHandler(logged, nil)),
	})
	set := func(err error) { mu.Lock(); failing = err; mu.Unlock() }
	for _, tt := range []struct {
		name     string
		failing  error
		code     int
		body     []string
		homeSays []string
	}{
		{"ready, mirror behind", nil, http.StatusOK,
			[]string{"ready\n", "state mirror behind by 3 commits\n"},
			[]string{`data-test="health-note">state mirror behind by 3 commits`}},
		{"state writes fail", errors.New("state writes fail since 10:00:00 (no space left on device)"), http.StatusServiceUnavailable,
			[]string{"not ready: state writes fail since 10:00:00 (no space left on device)\n", "state mirror behind by 3 commits\n"},
			[]string{`data-test="not-ready">not ready: state writes fail since 10:00:00 (no space left on device)`, "state mirror behind by 3 commits"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set(tt.failing)
			for range 3 { // probes every few seconds
				code, body := get(t, srv.URL+"/readyz")
				if code != tt.code {
					t.Fatalf("readyz: %d %q, want %d", code, body, tt.code)
				}
				for _, want := range tt.body {
					if !strings.Contains(body, want) {
						t.Errorf("readyz body %q lacks %q", body, want)
					}
				}
			}
			code, home := get(t, srv.URL+"/")
			if code != http.StatusOK {
				t.Fatalf("home: %d", code)
			}
			for _, want := range tt.homeSays {
				if !strings.Contains(home, want) {
					t.Errorf("the home page's health line lacks %q", want)
				}
			}
		})
	}
	set(nil)
	get(t, srv.URL+"/readyz")
	log := logged.String()
	if strings.Count(log, "not ready") != 1 || strings.Count(log, "ready again") != 1 {
		t.Fatalf("want one line when readiness is lost and one when it is back, not one per probe:\n%s", log)
	}
}
