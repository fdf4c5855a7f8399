package forges

import (
	"errors"
	"net/http"
)

// Webhook errors. The HTTP handler answers ErrBadSignature with 401 and
// ErrMalformed with 400, each with a one-line reason.
var (
	ErrBadSignature = errors.New("bad webhook signature")
	ErrMalformed    = errors.New("malformed webhook")
)

// Hooks verifies and parses one forge's webhook deliveries. Each forge
// sub-package provides one; parsing is a pure function of the headers and the
// raw body, so it can be fuzzed.
type Hooks interface {
	// Verify checks the delivery's signature or token against each of secrets
	// (several are accepted at once, for rotation) in constant time. It returns
	// an error wrapping ErrBadSignature when none matches or the header is missing.
	Verify(h http.Header, body []byte, secrets []string) error
	// Parse turns a verified delivery into an Event. A delivery the bot has no
	// use for is an EventIgnored with its Reason, not an error; a body that
	// cannot be read is an error wrapping ErrMalformed. Parse leaves
	// Target.Project.Forge empty: the handler fills in the configured name.
	Parse(h http.Header, body []byte) (*Event, error)
}
