package github

import (
	"errors"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

func TestVerify(t *testing.T) {
	body := fixture(t, "issues/opened.payload.json")
	sign := func(secret string, b []byte) string { return "sha256=" + forges.SignHMACSHA256(secret, b) }
	tests := []struct {
		name      string
		signature string // "" leaves the header out
		body      []byte
		secrets   []string
		ok        bool
	}{
		{"valid", sign("s3cret", body), body, []string{"s3cret"}, true},
		{"second of two secrets", sign("new", body), body, []string{"old", "new"}, true},
		{"first of two secrets", sign("old", body), body, []string{"old", "new"}, true},
		{"wrong secret", sign("other", body), body, []string{"s3cret"}, false},
		{"missing header", "", body, []string{"s3cret"}, false},
		{"no sha256= prefix", forges.SignHMACSHA256("s3cret", body), body, []string{"s3cret"}, false},
		{"sha1= prefix", "sha1=" + forges.SignHMACSHA256("s3cret", body), body, []string{"s3cret"}, false},
		{"truncated body", sign("s3cret", body), body[:len(body)-1], []string{"s3cret"}, false},
		{"truncated signature", sign("s3cret", body)[:40], body, []string{"s3cret"}, false},
		{"not hex", "sha256=" + string(make([]byte, 64)), body, []string{"s3cret"}, false},
		{"uppercase prefix", "SHA256=" + forges.SignHMACSHA256("s3cret", body), body, []string{"s3cret"}, false},
		{"empty secret never verifies", sign("", body), body, []string{""}, false},
		{"no secrets", sign("s3cret", body), body, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := headers("issues", "d")
			if tc.signature != "" {
				h.Set(headerSignature, tc.signature)
			}
			err := Hooks{}.Verify(h, tc.body, tc.secrets)
			if tc.ok && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !tc.ok && !errors.Is(err, forges.ErrBadSignature) {
				t.Fatalf("Verify = %v, want ErrBadSignature", err)
			}
			if err != nil {
				for _, s := range tc.secrets {
					if s != "" && len(s) > 2 && contains(err.Error(), s) {
						t.Errorf("error %q shows a secret", err)
					}
				}
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
