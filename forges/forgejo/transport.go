package forgejo

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// retryTransport retries transient failures with bounded, jittered,
// exponential back-off, honouring the request's context, and bounds each
// attempt with its own timeout.
//
// Retried: 429 and 503 (any method; Retry-After is honoured up to
// maxBackoff), and for idempotent methods also 500, 502, 504 and network
// errors. A POST that may have been applied (500, 502, 504) is not sent again. Not retried: Forgejo's 500 "... does not
// exist" answers (a missing issue's comments, a missing branch), which are
// permanent and reported as not found.
type retryTransport struct {
	base       http.RoundTripper
	attempts   int
	minBackoff time.Duration
	maxBackoff time.Duration
	timeout    time.Duration
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 1; ; attempt++ {
		r, err := t.rewind(req, attempt)
		if err != nil {
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, t.timeout)
		resp, err := t.base.RoundTrip(r.WithContext(actx))
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if attempt >= t.attempts || !idempotent(req.Method) {
				return nil, err
			}
			if werr := t.wait(ctx, attempt, 0); werr != nil {
				return nil, werr
			}
			continue
		}
		retry, after := t.retryable(req.Method, resp)
		if !retry || attempt >= t.attempts {
			resp.Body = forges.CancelOnClose(resp.Body, cancel)
			return resp, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		cancel()
		if werr := t.wait(ctx, attempt, after); werr != nil {
			return nil, werr
		}
	}
}

// rewind returns the request to send for attempt, with a fresh body.
func (t *retryTransport) rewind(req *http.Request, attempt int) (*http.Request, error) {
	if attempt == 1 || req.Body == nil || req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

func (t *retryTransport) retryable(method string, resp *http.Response) (bool, time.Duration) {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true, retryAfter(resp)
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return idempotent(method), retryAfter(resp)
	case http.StatusInternalServerError:
		if !idempotent(method) {
			return false, 0
		}
		// Peek at the body: Forgejo answers some "not found" cases with 500.
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		return !strings.Contains(string(data), "does not exist"), 0
	}
	return false, 0
}

func (t *retryTransport) wait(ctx context.Context, attempt int, after time.Duration) error {
	d := t.minBackoff << (attempt - 1)
	if d > t.maxBackoff || d <= 0 {
		d = t.maxBackoff
	}
	d = d/2 + rand.N(d/2+1) // jitter in [d/2, d]
	if after > d {
		d = min(after, t.maxBackoff)
	}
	return forges.Sleep(ctx, d)
}

// retryAfter is the wait the answer asks for, 0 when it names none.
func retryAfter(resp *http.Response) time.Duration {
	d, _ := forges.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return d
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return true
	}
	return false
}
