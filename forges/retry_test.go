package forges

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{" 0 ", 0, true},
		{"-3", 0, false},
		{"Mon, 30 Nov 2026 09:00:30 GMT", 30 * time.Second, true},
		{"Mon, 30 Nov 2026 08:59:00 GMT", 0, true}, // in the past: now
		{"soon", 0, false},
	}
	for _, tt := range tests {
		if got, ok := RetryAfter(tt.v, now); got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%q) = %v %v, want %v %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("Sleep on a canceled context = %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
}

func TestCancelOnClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	body := CancelOnClose(io.NopCloser(strings.NewReader("x")), cancel)
	if ctx.Err() != nil {
		t.Fatal("canceled before the body was closed")
	}
	body.Close()
	if ctx.Err() == nil {
		t.Error("closing the body did not release the attempt")
	}
}

// answering serves the statuses in order (then 200), each with hdr, and
// counts the requests.
func answering(t *testing.T, hdr http.Header, statuses ...int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		io.Copy(io.Discard, r.Body)
		if i < len(statuses) {
			maps.Copy(w.Header(), hdr)
			w.WriteHeader(statuses[i])
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func fast() RetryPolicy {
	return RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Budget: 5 * time.Second}
}

func send(t *testing.T, p RetryPolicy, method, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: p.Transport(nil)}).Do(req)
	if err == nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

func TestRetryPolicyStatuses(t *testing.T) {
	tests := []struct {
		method   string
		status   int
		attempts int32 // requests made for one failure
	}{
		{"GET", 408, 2}, {"GET", 425, 2}, {"GET", 429, 2}, {"GET", 500, 2}, {"GET", 502, 2}, {"GET", 503, 2}, {"GET", 504, 2},
		{"POST", 429, 2}, {"POST", 503, 2}, {"POST", 408, 2},
		{"POST", 500, 1}, {"POST", 502, 1}, {"POST", 504, 1}, // may have been applied
		{"GET", 400, 1}, {"GET", 401, 1}, {"GET", 403, 1}, {"GET", 404, 1}, {"GET", 409, 1}, {"GET", 422, 1},
		{"PATCH", 502, 2}, {"PUT", 502, 2}, {"DELETE", 502, 2},
	}
	for _, tc := range tests {
		srv, n := answering(t, nil, tc.status)
		var reasons []string
		p := fast()
		p.OnRetry = func(r string) { reasons = append(reasons, r) }
		if _, err := send(t, p, tc.method, srv.URL); err != nil {
			t.Errorf("%s answered %d: %v", tc.method, tc.status, err)
		}
		if got := n.Load(); got != tc.attempts {
			t.Errorf("%s answered %d: %d requests, want %d", tc.method, tc.status, got, tc.attempts)
		}
		if want := int(tc.attempts) - 1; len(reasons) != want || (want == 1 && reasons[0] != strconv.Itoa(tc.status)) {
			t.Errorf("%s answered %d: retry reasons %v", tc.method, tc.status, reasons)
		}
	}
}

func TestRetryPolicyRateLimits(t *testing.T) {
	reset := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
	tests := []struct {
		name     string
		status   int
		hdr      http.Header
		attempts int32
	}{
		{"403 with Retry-After is a rate limit", 403, http.Header{"Retry-After": {"0"}}, 2},
		{"403 with an exhausted GitHub limit", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset}}, 2},
		{"429 with an exhausted GitLab limit", 429, http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {reset}}, 2},
		{"403 with a limit left is a refusal", 403, http.Header{"X-Ratelimit-Remaining": {"10"}, "X-Ratelimit-Reset": {reset}}, 1},
		{"a wait beyond the budget gives up at once", 429, http.Header{"Retry-After": {"3600"}}, 1},
	}
	for _, tc := range tests {
		srv, n := answering(t, tc.hdr, tc.status)
		resp, err := send(t, fast(), "POST", srv.URL)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := n.Load(); got != tc.attempts {
			t.Errorf("%s: %d requests, want %d", tc.name, got, tc.attempts)
		}
		if tc.attempts == 1 && resp.StatusCode != tc.status {
			t.Errorf("%s: answer %d, want the forge's %d passed on", tc.name, resp.StatusCode, tc.status)
		}
	}
}

// TestRetryPolicyBudgetFreesAHungCall: a server that never answers holds
// the caller for the budget, not for attempts × timeout, and the error says
// the forge is unavailable.
func TestRetryPolicyBudgetFreesAHungCall(t *testing.T) {
	release := make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	p := RetryPolicy{Budget: 300 * time.Millisecond, AttemptTimeout: 100 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	var reasons []string
	p.OnRetry = func(r string) { reasons = append(reasons, r) }
	_, err := send(t, p, "GET", srv.URL)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GET of a hung server = %v, want ErrUnavailable after the budget", err)
	}
	if got := n.Load(); got < 2 || got > 4 {
		t.Errorf("%d attempts, want 2 to 4 (timeouts of 100 ms in a budget of 300 ms)", got)
	}
	if len(reasons) == 0 || reasons[0] != "timeout" {
		t.Errorf("retry reasons %v, want timeout", reasons)
	}
	if _, err := send(t, p, "POST", srv.URL); !errors.Is(err, ErrUnavailable) || n.Load() > 5 {
		t.Errorf("POST of a hung server = %v after %d requests, want one attempt only (it may have been applied)", err, n.Load())
	}
}

func TestRetryPolicyRefusedConnection(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	var reasons []string
	p := fast()
	p.Budget = 200 * time.Millisecond
	p.OnRetry = func(r string) { reasons = append(reasons, r) }
	_, err := send(t, p, "POST", url)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("POST to a closed port = %v, want ErrUnavailable", err)
	}
	if len(reasons) == 0 || reasons[0] != "network" {
		t.Errorf("retry reasons %v, want network: a refused connection reached no server, so even a POST is sent again", reasons)
	}
}

func TestRetryPolicyCallerContextWins(t *testing.T) {
	srv, _ := answering(t, http.Header{"Retry-After": {"30"}}, 429)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	_, err := (&http.Client{Transport: RetryPolicy{}.Transport(nil)}).Do(req)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
		t.Errorf("GET with a caller deadline = %v, want the caller's deadline, not ErrUnavailable", err)
	}
}

func TestRetryPolicyFinalAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, `{"message":"issue does not exist"}`)
	}))
	t.Cleanup(srv.Close)
	p := fast()
	p.Final = func(resp *http.Response) bool {
		data, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(data)))
		return strings.Contains(string(data), "does not exist")
	}
	resp, err := send(t, p, "GET", srv.URL)
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("GET = %v, %v", resp, err)
	}
	if body, _ := io.ReadAll(resp.Body); !strings.Contains(string(body), "does not exist") {
		t.Errorf("body %q: Final must leave it readable", body)
	}
}

func TestClassify(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		status  int
		hdr     http.Header
		want    error
		refused bool
	}{
		{404, nil, ErrNotFound, false},
		{401, nil, ErrUnauthorized, true},
		{403, nil, ErrForbidden, true},
		{403, http.Header{"Retry-After": {"60"}}, ErrUnavailable, false},
		{409, nil, ErrConflict, true},
		{422, nil, ErrInvalid, true},
		{429, nil, ErrUnavailable, false},
		{502, nil, ErrUnavailable, false},
		{400, nil, nil, false},
	}
	for _, tc := range tests {
		err := Classify(&http.Response{StatusCode: tc.status, Header: tc.hdr}, base)
		if !errors.Is(err, base) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("Classify(%d) = %v, want %v wrapping the cause", tc.status, err, tc.want)
		}
		if Refused(err) != tc.refused {
			t.Errorf("Refused(Classify(%d)) = %v", tc.status, !tc.refused)
		}
	}
	if Classify(nil, base) != base || Classify(&http.Response{StatusCode: 404}, nil) != nil {
		t.Error("Classify without an answer, or of no error, must return the error as it is")
	}
}

func TestRetryPolicyAttemptsBound(t *testing.T) {
	srv, n := answering(t, nil, 503, 503, 503, 503, 503, 503, 503, 503)
	resp, err := send(t, fast(), "GET", srv.URL)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("GET = %v, %v; want the last 503 passed on", resp, err)
	}
	if got := n.Load(); got != DefaultAttempts {
		t.Errorf("%d requests, want %d", got, DefaultAttempts)
	}
}
