package github

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// retryTransport retries what GitHub asks to be retried: 5xx answers with a
// bounded exponential back-off with jitter (POSTs only on 503, see retryAfter), and rate-limit answers (429, or 403
// with Retry-After or an exhausted X-RateLimit-Remaining) after the wait the
// server names, when that wait fits in maxWait. Each attempt gets its own
// timeout; the request's context bounds the whole.
type retryTransport struct {
	next       http.RoundTripper
	timeout    time.Duration // per attempt, 0 for none
	maxRetries int
	baseDelay  time.Duration
	maxWait    time.Duration // longest rate-limit wait honoured
	now        func() time.Time
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := t.try(req)
		var wait time.Duration
		var retry bool
		switch {
		case err != nil && t.attemptTimedOut(req, err) && attempt < t.maxRetries:
			// Only this attempt ran out of time: a GET may be sent again.
			wait = t.backoff(attempt)
		case err != nil:
			return nil, err
		default:
			wait, retry = t.retryAfter(req, resp, attempt)
			if !retry || attempt >= t.maxRetries || (req.Body != nil && req.GetBody == nil) {
				return resp, nil
			}
			// Drain a little so the connection can be reused, then wait.
			_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
			resp.Body.Close()
		}
		if err := forges.Sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// try sends one attempt under its own timeout; the timeout stays armed until
// the caller closes the body.
func (t *retryTransport) try(req *http.Request) (*http.Response, error) {
	if t.timeout <= 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = forges.CancelOnClose(resp.Body, cancel)
	return resp, nil
}

// attemptTimedOut tells an idempotent request whose own attempt timed out
// while the caller's context is still live.
func (t *retryTransport) attemptTimedOut(req *http.Request, err error) bool {
	return t.timeout > 0 && req.Context().Err() == nil && errors.Is(err, context.DeadlineExceeded) &&
		(req.Method == http.MethodGet || req.Method == http.MethodHead)
}

// retryAfter says whether resp deserves another attempt and after how long.
// A POST that failed with 500, 502 or 504 may have been applied (GitHub is
// known to create a comment or pull request and still answer 502), so it is
// not sent again: the caller's idempotent layer (EnsureComment,
// MergeRequestForBranch) decides. 503 and rate-limit answers are retried.
func (t *retryTransport) retryAfter(req *http.Request, resp *http.Response, attempt int) (time.Duration, bool) {
	switch {
	case resp.StatusCode >= 500 && req.Method == http.MethodPost && resp.StatusCode != http.StatusServiceUnavailable:
		return 0, false
	case resp.StatusCode >= 500:
		if d, ok := t.serverWait(resp); ok {
			return d, d <= t.maxWait
		}
		return t.backoff(attempt), true
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden:
		d, ok := t.serverWait(resp)
		if !ok {
			if resp.StatusCode == http.StatusForbidden {
				return 0, false // a plain permission refusal
			}
			d = t.backoff(attempt)
		}
		return d, d <= t.maxWait
	}
	return 0, false
}

// serverWait reads how long GitHub asks us to wait: Retry-After (seconds), or
// X-RateLimit-Reset (epoch seconds) when X-RateLimit-Remaining is 0.
func (t *retryTransport) serverWait(resp *http.Response) (time.Duration, bool) {
	if d, ok := forges.RetryAfter(resp.Header.Get("Retry-After"), t.now()); ok {
		return d, true
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if n, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			// One second of margin: the reset is rounded down to the second.
			return max(time.Unix(n, 0).Sub(t.now())+time.Second, 0), true
		}
	}
	return 0, false
}

// backoff is baseDelay·2^attempt with ±50% jitter.
func (t *retryTransport) backoff(attempt int) time.Duration {
	d := t.baseDelay << min(attempt, 10)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}
