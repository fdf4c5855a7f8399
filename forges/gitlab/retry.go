package gitlab

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// backoff is the wait before retry attemptNum (0-based) of a request the SDK
// decided to retry. The SDK (go-retryablehttp underneath) bounds the retries
// at Options.MaxRetries, stops as soon as the request's context is done (also
// while waiting) and, with WithOnlyIdempotentRetries, never repeats a POST
// the server may have acted on; only 429 answers (which did nothing) are
// retried for every method.
//
// A 429 or 503 that says when to come back (Retry-After in seconds or as an
// HTTP date, else GitLab's RateLimit-Reset Unix time) is honoured, cut to
// maxWait so one answer cannot park a caller for an hour; the caller's
// context deadline cuts it further. Everything else backs off exponentially
// from minWait with jitter, so retrying clients do not move in step.
func backoff(minWait, maxWait time.Duration, attemptNum int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := serverWait(resp.Header, time.Now()); ok {
			return min(d+jitter(minWait), maxWait)
		}
	}
	d := minWait
	for range min(attemptNum, 30) {
		d *= 2
		if d >= maxWait {
			d = maxWait
			break
		}
	}
	// Equal jitter: between half and all of d.
	return d/2 + jitter(d/2)
}

// serverWait reads how long the server asked us to wait.
func serverWait(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := forges.RetryAfter(h.Get("Retry-After"), now); ok {
		return d, true
	}
	if v := h.Get("RateLimit-Reset"); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
			return max(time.Unix(s, 0).Sub(now), 0), true
		}
	}
	return 0, false
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}
