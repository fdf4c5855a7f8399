package forges

import (
	"errors"
	"testing"
)

func TestVerifyHMACSHA256(t *testing.T) {
	body := []byte(`{"action":"opened"}`)
	good := SignHMACSHA256("s3cret", body)
	for _, tc := range []struct {
		name      string
		signature string
		body      []byte
		secrets   []string
		ok        bool
	}{
		{"right secret", good, body, []string{"s3cret"}, true},
		{"second secret during rotation", good, body, []string{"new-secret", "s3cret"}, true},
		{"wrong secret", good, body, []string{"other"}, false},
		{"missing header", "", body, []string{"s3cret"}, false},
		{"truncated body", good, body[:len(body)-1], []string{"s3cret"}, false},
		{"not hex", "zz" + good[2:], body, []string{"s3cret"}, false},
		{"short signature", good[:20], body, []string{"s3cret"}, false},
		{"no secrets configured", good, body, nil, false},
		{"empty secret never matches", SignHMACSHA256("", body), body, []string{""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyHMACSHA256("X-Test-Signature", tc.signature, tc.body, tc.secrets)
			if (err == nil) != tc.ok {
				t.Fatalf("VerifyHMACSHA256 = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadSignature) {
				t.Errorf("error %v does not wrap ErrBadSignature", err)
			}
		})
	}
}

func TestVerifyToken(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		secrets     []string
		ok          bool
	}{
		{"match", "tok", []string{"tok"}, true},
		{"second secret", "tok", []string{"old", "tok"}, true},
		{"wrong", "tok", []string{"other"}, false},
		{"prefix only", "to", []string{"tok"}, false},
		{"missing", "", []string{"tok"}, false},
		{"empty secret", "", []string{""}, false},
	} {
		err := VerifyToken("X-Gitlab-Token", tc.token, tc.secrets)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadSignature)) {
			t.Errorf("%s: VerifyToken = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
