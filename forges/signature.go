package forges

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// SignHMACSHA256 is the lowercase hex HMAC-SHA256 of body under secret, as
// Forgejo, Gitea and (after "sha256=") GitHub send it.
func SignHMACSHA256(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// VerifyHMACSHA256 checks a hex HMAC-SHA256 signature of body against each
// non-empty secret in constant time. header names the header the signature came
// from, for the error. An empty signature or no usable secret never verifies.
func VerifyHMACSHA256(header, signature string, body []byte, secrets []string) error {
	if signature == "" {
		return fmt.Errorf("%w: missing %s header", ErrBadSignature, header)
	}
	got, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: %s is not a hex HMAC-SHA256", ErrBadSignature, header)
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		m := hmac.New(sha256.New, []byte(s))
		m.Write(body)
		if hmac.Equal(got, m.Sum(nil)) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s matches no configured secret", ErrBadSignature, header)
}

// VerifyToken checks a shared-secret token (GitLab's X-Gitlab-Token) against
// each non-empty secret in constant time.
func VerifyToken(header, token string, secrets []string) error {
	if token == "" {
		return fmt.Errorf("%w: missing %s header", ErrBadSignature, header)
	}
	// Compare digests, so that neither the content nor the length of a
	// secret shows in the time taken.
	got := sha256.Sum256([]byte(token))
	ok := 0
	for _, s := range secrets {
		if s == "" {
			continue
		}
		want := sha256.Sum256([]byte(s))
		ok |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	if ok != 1 {
		return fmt.Errorf("%w: %s matches no configured secret", ErrBadSignature, header)
	}
	return nil
}
