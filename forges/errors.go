package forges

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// What a forge's answer means, as the engine needs to know it. Each forge
// client wraps its errors with one of these (Classify), so the engine words
// them for people without knowing which forge answered.
var (
	// ErrNotFound: the issue, merge request, comment, label, branch or user
	// does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrUnauthorized: the forge refused the token itself (401).
	ErrUnauthorized = errors.New("the forge refused the token (401)")
	// ErrForbidden: the token is valid but may not do this (403).
	ErrForbidden = errors.New("the forge refused the permission (403)")
	// ErrConflict: the forge refused because of the object's state (409),
	// e.g. a merge request that cannot be merged, a branch that moved.
	ErrConflict = errors.New("the forge reported a conflict (409)")
	// ErrInvalid: the forge refused the request as invalid (422).
	ErrInvalid = errors.New("the forge refused the request as invalid (422)")
	// ErrUnavailable: the forge kept failing (5xx, 408, 425, 429, network,
	// timeouts) for the whole retry budget of the call.
	ErrUnavailable = errors.New("the forge is unavailable")
)

// Classify wraps err, the error of a call answered with resp (nil when none
// came), with the sentinel of the answer's status (a 403 that is a rate limit
// is ErrUnavailable); err is returned as it is for other statuses.
func Classify(resp *http.Response, err error) error {
	if err == nil || resp == nil {
		return err
	}
	s := sentinel(resp.StatusCode)
	if _, limited := rateLimitWait(resp.Header, time.Now()); limited && resp.StatusCode == http.StatusForbidden {
		s = ErrUnavailable
	}
	if s != nil && !errors.Is(err, s) {
		return fmt.Errorf("%w: %w", s, err)
	}
	return err
}

func sentinel(status int) error {
	switch status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusConflict:
		return ErrConflict
	case http.StatusUnprocessableEntity:
		return ErrInvalid
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return ErrUnavailable
	}
	if status >= 500 {
		return ErrUnavailable
	}
	return nil
}

// Refused reports whether err is a refusal a person must act on (401, 403,
// 409, 422): retrying cannot help.
func Refused(err error) bool {
	return errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden) ||
		errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid)
}
