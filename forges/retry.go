package forges

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The pieces every forge client's retrying transport shares; each forge keeps
// its own policy of what to retry.

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
