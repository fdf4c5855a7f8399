package giteatest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestFaults(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "real "+r.URL.Path)
	}))
	t.Cleanup(backend.Close)
	f := newFaults(t, backend.URL)

	get := func(ctx context.Context) (*http.Response, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL()+"/api/v1/version", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}

	f.FailNext(http.StatusServiceUnavailable, 2)
	f.FailNext(http.StatusTooManyRequests, 1)
	for i, want := range []struct {
		status     int
		retryAfter string
		body       string
	}{
		{http.StatusServiceUnavailable, "", ""},
		{http.StatusServiceUnavailable, "", ""},
		{http.StatusTooManyRequests, "1", ""},
		{http.StatusOK, "", "real /api/v1/version"},
	} {
		resp, body, err := get(context.Background())
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.StatusCode != want.status || resp.Header.Get("Retry-After") != want.retryAfter {
			t.Errorf("request %d = %d with Retry-After %q, want %d with %q", i, resp.StatusCode, resp.Header.Get("Retry-After"), want.status, want.retryAfter)
		}
		if want.body != "" && body != want.body {
			t.Errorf("request %d body = %q, want %q (passed to the server)", i, body, want.body)
		}
	}

	f.Hang(1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("request while hanging = %v, want the client's deadline", err)
	}
	if _, body, err := get(context.Background()); err != nil || body != "real /api/v1/version" {
		t.Errorf("request after the hang = %q, %v; want it passed to the server", body, err)
	}
}
