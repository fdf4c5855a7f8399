package redact

import "testing"

func TestSecrets(t *testing.T) {
	tests := []struct {
		name, text string
		secrets    []string
		want       string
	}{
		{"each occurrence", "key sk-1234 and sk-1234", []string{"sk-1234"}, "key [redacted] and [redacted]"},
		{"a secret inside another, either order", "tok-1234-5678", []string{"tok-1234", "tok-1234-5678"}, "[redacted]"},
		{"too short to hide", "a b abc", []string{"abc", ""}, "a b abc"},
		{"nothing to hide", "plain", nil, "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Secrets(tt.text, tt.secrets); got != tt.want {
				t.Errorf("Secrets(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}
