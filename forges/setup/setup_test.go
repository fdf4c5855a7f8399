package setup

import (
	"slices"
	"testing"
)

// TestOAuth2: each kind's OAuth2 application, its "current user" endpoint
// and login field, for a forge's address (GitHub's API address or none is
// github.com; GitHub Enterprise's API is under /api/v3).
func TestOAuth2(t *testing.T) {
	const callback = "https://alfred.example/oauth/callback"
	for _, tt := range []struct {
		kind, base                    string
		auth, token, user, loginField string
		scopes                        []string
	}{
		{"forgejo", "https://code.example.org/", "https://code.example.org/login/oauth/authorize", "https://code.example.org/login/oauth/access_token",
			"https://code.example.org/api/v1/user", "login", nil},
		{"github", "", "https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token",
			"https://api.github.com/user", "login", nil},
		{"github", "https://api.github.com", "https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token",
			"https://api.github.com/user", "login", nil},
		{"github", "https://ghe.example.com/api/v3", "https://ghe.example.com/login/oauth/authorize", "https://ghe.example.com/login/oauth/access_token",
			"https://ghe.example.com/api/v3/user", "login", nil},
		{"gitlab", "https://gitlab.example.com", "https://gitlab.example.com/oauth/authorize", "https://gitlab.example.com/oauth/token",
			"https://gitlab.example.com/api/v4/user", "username", []string{"read_user"}},
	} {
		t.Run(tt.kind+" "+tt.base, func(t *testing.T) {
			k, ok := Of(tt.kind)
			if !ok {
				t.Fatalf("no kind %q", tt.kind)
			}
			o, user, field := k.OAuth2(tt.base, "client-1", "secret-1", callback)
			if o.Endpoint.AuthURL != tt.auth || o.Endpoint.TokenURL != tt.token || user != tt.user || field != tt.loginField {
				t.Errorf("endpoints %s %s, user %s (%s); want %s %s, %s (%s)", o.Endpoint.AuthURL, o.Endpoint.TokenURL, user, field,
					tt.auth, tt.token, tt.user, tt.loginField)
			}
			if o.ClientID != "client-1" || o.ClientSecret != "secret-1" || o.RedirectURL != callback || !slices.Equal(o.Scopes, tt.scopes) {
				t.Errorf("client %q %q, callback %q, scopes %q", o.ClientID, o.ClientSecret, o.RedirectURL, o.Scopes)
			}
		})
	}
}
