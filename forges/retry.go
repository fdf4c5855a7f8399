package forges

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy is the one retry policy of every forge call: each forge client
// sends its requests through RetryPolicy.Transport and its SDK retries
// nothing itself, so a call is retried in exactly one layer.
//
// Retried: 408, 425, 429 and 503 answers (the forge did not act on the
// request, so any method is sent again), a 403 that is a rate limit
// (Retry-After, or X-RateLimit-Remaining: 0), other 5xx answers and network
// errors for idempotent methods (a POST answered 502 may have been applied:
// GitHub is known to create a comment and still answer 502), and a POST that
// never reached the server (the connection was refused). Never retried: 401,
// 403, 404, 409, 422 and every other answer; Classify turns them into the
// errors the engine words for people.
//
// Waits grow exponentially from MinBackoff to MaxBackoff with jitter; a wait
// the server names (Retry-After, rate-limit reset) is honoured when it fits
// in what is left of Budget, and otherwise the call gives up at once. Budget
// bounds the whole call, attempts and waits together, so a forge that hangs
// frees its caller after Budget; Attempts bounds how often one call is sent.
type RetryPolicy struct {
	// Budget bounds one call, every attempt and wait included (default 60 s).
	Budget time.Duration
	// AttemptTimeout bounds one attempt (default 30 s), cut to what is left
	// of Budget; reading the answer's body counts as part of the attempt.
	AttemptTimeout time.Duration
	// Attempts bounds the attempts of one call (default 5), so a forge that
	// keeps answering 500 to one request is believed after a few seconds
	// rather than after the whole budget (Gitea answers 500 for the comments
	// of an issue that does not exist).
	Attempts int
	// MinBackoff and MaxBackoff bound the jittered exponential wait between
	// attempts (defaults 500 ms and 30 s).
	MinBackoff, MaxBackoff time.Duration
	// Final, when set, tells an answer the forge means as final although its
	// status looks transient (Forgejo answers some "does not exist" with 500).
	// It may read the body; it must leave it readable.
	Final func(*http.Response) bool
	// OnRetry, when set, is told the reason of each retry before its wait:
	// the status code ("503"), "rate_limit", "timeout" or "network".
	OnRetry func(reason string)
}

// Defaults of RetryPolicy.
const (
	DefaultCallBudget     = 60 * time.Second
	DefaultAttemptTimeout = 30 * time.Second
	DefaultAttempts       = 5
	defaultMinBackoff     = 500 * time.Millisecond
	defaultMaxBackoff     = 30 * time.Second
)

// WithDefaults fills the zero fields of p.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.Budget <= 0 {
		p.Budget = DefaultCallBudget
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = DefaultAttemptTimeout
	}
	if p.Attempts <= 0 {
		p.Attempts = DefaultAttempts
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = defaultMinBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = defaultMaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.MinBackoff)
	return p
}

// Transport returns next (http.DefaultTransport when nil) wrapped with the
// policy (its zero fields defaulted).
func (p RetryPolicy) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &retryTransport{p: p.WithDefaults(), next: next}
}

type retryTransport struct {
	p    RetryPolicy
	next http.RoundTripper
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	deadline := time.Now().Add(t.p.Budget)
	rewindable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 0; ; attempt++ {
		r, err := rewind(req, attempt)
		if err != nil {
			return nil, err
		}
		resp, err := t.try(r, deadline)
		if ctx.Err() != nil {
			closeBody(resp)
			return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, ctx.Err())
		}
		reason, wait, retry := t.judge(req.Method, resp, err, attempt)
		if !retry || !rewindable || attempt+1 >= t.p.Attempts {
			return finish(req, resp, err, attempt)
		}
		if left := time.Until(deadline); wait >= left {
			return finish(req, resp, err, attempt) // the budget would run out waiting
		}
		closeBody(resp)
		if t.p.OnRetry != nil {
			t.p.OnRetry(reason)
		}
		if serr := Sleep(ctx, wait); serr != nil {
			// Cut short while waiting: say what the attempts met.
			return nil, fmt.Errorf("%s %s: %w (after %d attempts, the last: %s)", req.Method, req.URL.Path, serr, attempt+1, attemptSaid(err, reason))
		}
	}
}

// try sends one attempt under its own deadline, which stays armed until the
// caller closes the body.
func (t *retryTransport) try(req *http.Request, deadline time.Time) (*http.Response, error) {
	ctx, cancel := context.WithDeadline(req.Context(), minTime(time.Now().Add(t.p.AttemptTimeout), deadline))
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = CancelOnClose(resp.Body, cancel)
	return resp, nil
}

// judge says whether an attempt deserves another, why, and after how long.
func (t *retryTransport) judge(method string, resp *http.Response, err error, attempt int) (reason string, wait time.Duration, retry bool) {
	backoff := t.backoff(attempt)
	if err != nil {
		switch {
		case refused(err):
			return "network", backoff, true // never reached the server
		case !idempotent(method):
			return "", 0, false
		case errors.Is(err, context.DeadlineExceeded):
			return "timeout", backoff, true
		}
		return "network", backoff, true
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusForbidden:
		if d, ok := rateLimitWait(resp.Header, time.Now()); ok {
			return "rate_limit", max(d, backoff), true
		}
		return "", 0, false
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly,
		code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable:
	case code >= 500 && idempotent(method):
	default:
		return "", 0, false
	}
	if t.p.Final != nil && t.p.Final(resp) {
		return "", 0, false
	}
	d, _ := rateLimitWait(resp.Header, time.Now())
	return strconv.Itoa(code), max(d, backoff), true
}

// backoff is MinBackoff·2^attempt, at most MaxBackoff, with equal jitter
// (between half and all of it), so retrying clients do not move in step.
func (t *retryTransport) backoff(attempt int) time.Duration {
	d := t.p.MinBackoff << min(attempt, 20)
	if d > t.p.MaxBackoff || d <= 0 {
		d = t.p.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// attemptSaid is what a failed attempt met: its error, else its status.
func attemptSaid(err error, reason string) string {
	if err != nil {
		return err.Error()
	}
	if _, nerr := strconv.Atoi(reason); nerr == nil {
		return "HTTP " + reason
	}
	return reason // rate_limit
}

// finish returns the last attempt's answer as it is (the SDK turns a status
// into its error, Classify into ours), or its error marked ErrUnavailable.
func finish(req *http.Request, resp *http.Response, err error, attempt int) (*http.Response, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %d attempts: %w", ErrUnavailable, req.Method, req.URL.Path, attempt+1, err)
	}
	return resp, nil
}

// rateLimitWait reads how long the forge asks to wait: Retry-After, else the
// reset time of an exhausted rate limit (GitHub's X-RateLimit-*, GitLab's
// RateLimit-*, in Unix seconds).
func rateLimitWait(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := RetryAfter(h.Get("Retry-After"), now); ok {
		return d, true
	}
	for _, prefix := range []string{"X-RateLimit-", "RateLimit-"} {
		if h.Get(prefix+"Remaining") != "0" {
			continue
		}
		if s, err := strconv.ParseInt(h.Get(prefix+"Reset"), 10, 64); err == nil && s > 0 {
			// One second of margin: the reset is rounded down to the second.
			return max(time.Unix(s, 0).Sub(now)+time.Second, 0), true
		}
	}
	return 0, false
}

// refused tells an error from a connection that was never made, which no
// server can have acted on.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete,
		http.MethodPatch: // Alfred's PATCHes set a value (a comment's body, a label): sending one twice does no harm
		return true
	}
	return false
}

// rewind returns the request to send for attempt, with a fresh body.
func rewind(req *http.Request, attempt int) (*http.Request, error) {
	if attempt == 0 || req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("rewind the body of %s %s: %w", req.Method, req.URL.Path, err)
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

// closeBody drains a little of an answer not returned (so its connection can
// be reused) and closes it.
func closeBody(resp *http.Response) {
	if resp == nil {
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// RetryAfter reads a Retry-After value, in seconds or as an HTTP date (taken
// against now, never negative); ok is false when v is empty or unreadable.
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// Sleep waits d, or until ctx ends (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// CancelOnClose returns body, which releases cancel (an attempt's timeout)
// once closed: the timeout then bounds the reading of the body too.
func CancelOnClose(body io.ReadCloser, cancel context.CancelFunc) io.ReadCloser {
	return &cancelBody{ReadCloser: body, cancel: cancel}
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
