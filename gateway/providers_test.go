package gateway

import (
	"strings"
	"testing"
)

// TestServed: the providers served from the offered variables, each row of
// the catalogue read the one way: the first credential set wins and is sent
// as it says, a keyless provider is served without one, the address
// variable moves it (its "/v1" dropped), nothing offered serves only the
// keyless.
func TestServed(t *testing.T) {
	type want struct{ base, key, header, scheme string }
	cases := []struct {
		name    string
		offered map[string]string
		want    map[string]want
	}{
		{"nothing offered", nil, map[string]want{NameAnthropic: {AnthropicURL, "", "x-api-key", ""}}},
		{"anthropic's token only", map[string]string{"ANTHROPIC_AUTH_TOKEN": "tok"},
			map[string]want{NameAnthropic: {AnthropicURL, "tok", "Authorization", "Bearer"}}},
		{"a Claude subscription", map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "oat"},
			map[string]want{NameAnthropic: {AnthropicURL, "oat", "Authorization", "Bearer"}}},
		{"its key wins over its token", map[string]string{"ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_API_KEY": "key"},
			map[string]want{NameAnthropic: {AnthropicURL, "key", "x-api-key", ""}}},
		{"the second variable of a row", map[string]string{"CODEX_API_KEY": "ck", "XAI_API_KEY": "xk", "GOOGLE_API_KEY": "gk"},
			map[string]want{NameAnthropic: {AnthropicURL, "", "x-api-key", ""}, NameOpenAI: {OpenAIURL, "ck", "Authorization", "Bearer"},
				NameGemini: {GeminiURL, "gk", "x-goog-api-key", ""}, NameXAI: {XAIURL, "xk", "Authorization", "Bearer"}}},
		{"a GitHub token, for Copilot", map[string]string{"GH_TOKEN": "gho_x", "GITHUB_TOKEN": "github_pat_y"},
			map[string]want{NameAnthropic: {AnthropicURL, "", "x-api-key", ""}, NameCopilot: {"", "gho_x", "Authorization", SchemeAsSent}}},
		{"an address moved", map[string]string{"OPENAI_API_KEY": "ok", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/", "ANTHROPIC_BASE_URL": "http://127.0.0.1:8"},
			map[string]want{NameAnthropic: {"http://127.0.0.1:8", "", "x-api-key", ""}, NameOpenAI: {"http://127.0.0.1:9", "ok", "Authorization", "Bearer"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Served(func(k string) string { return tc.offered[k] })
			if len(got) != len(tc.want) {
				t.Fatalf("served %d providers, want %d: %+v", len(got), len(tc.want), got)
			}
			for _, p := range got {
				w, ok := tc.want[p.Name]
				if !ok || p.BaseURL != w.base || p.Key != w.key || p.Header != w.header || p.Scheme != w.scheme {
					t.Errorf("%s: %s %q %s %s, want %+v", p.Name, p.BaseURL, p.Key, p.Header, p.Scheme, w)
				}
			}
		})
	}
}

// TestCatalogue: every row is complete and its endpoints compile; a name
// not in it is refused.
func TestCatalogue(t *testing.T) {
	for _, c := range Catalogue {
		if c.Intercepted != nil {
			checkIntercepted(t, c)
		} else if c.Name == "" || c.DefaultURL == "" || c.URLVar == "" || len(c.Credentials) == 0 || c.ErrorShape == "" {
			t.Errorf("row %+v is missing a column", c)
		} else if _, err := compileEndpoints(c.Endpoints); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if got, ok := Lookup(c.Name); !ok || got.KeyVar() != c.Credentials[0].Var {
			t.Errorf("Lookup(%q) = %+v, %v", c.Name, got, ok)
		}
	}
	if _, ok := ProviderNamed("bedrock", "", ""); ok {
		t.Error("a provider outside the catalogue was made")
	}
}

// checkIntercepted: a row reached through CONNECT has hosts, each with its
// endpoints and error shape, at their own https address or all at the
// upstream given; it has no address of its own, and makes a valid provider.
func checkIntercepted(t *testing.T, c Catalogued) {
	t.Helper()
	if c.Name == "" || c.DefaultURL != "" || c.URLVar != "" || len(c.Credentials) == 0 || len(c.Endpoints) > 0 {
		t.Errorf("row %s: want a name and credentials, no address nor endpoints of its own", c.Name)
	}
	hosts := c.Intercepted("")
	if len(hosts) == 0 {
		t.Fatalf("row %s: no intercepted host", c.Name)
	}
	for i, h := range hosts {
		if _, err := compileEndpoints(h.Endpoints); err != nil || h.ErrorShape == "" || h.URL != "https://"+h.Host {
			t.Errorf("%s: host %+v: %v", c.Name, h, err)
		}
		if up := c.Intercepted("https://127.0.0.1:9")[i]; up.URL != "https://127.0.0.1:9" || up.Host != h.Host {
			t.Errorf("%s: at an upstream, host %+v", c.Name, up)
		}
	}
	if _, err := newProvider(c.Provider("", "k")); err != nil {
		t.Errorf("%s: %v", c.Name, err)
	}
}

// TestServedPassesARefusedKeyBy: a key of a kind its provider refuses (a
// classic GitHub token for Copilot) is not served, a later variable's is,
// and Unusable names the variable and why, never the key.
func TestServedPassesARefusedKeyBy(t *testing.T) {
	for _, tc := range []struct {
		offered  map[string]string
		key      string // Copilot's key served, "" for none
		unusable int
	}{
		{map[string]string{"GH_TOKEN": "ghp_classic"}, "", 1},
		{map[string]string{"COPILOT_GITHUB_TOKEN": "ghp_classic", "GITHUB_TOKEN": "github_pat_fine"}, "github_pat_fine", 1},
		{map[string]string{"GH_TOKEN": "gho_oauth"}, "gho_oauth", 0},
	} {
		offered := func(name string) string { return tc.offered[name] }
		key := ""
		for _, p := range Served(offered) {
			if p.Name == NameCopilot {
				key = p.Key
			}
		}
		if key != tc.key {
			t.Errorf("offered %v: Copilot's key %q, want %q", tc.offered, key, tc.key)
		}
		un := Unusable(offered)
		if len(un) != tc.unusable {
			t.Errorf("offered %v: unusable %q, want %d", tc.offered, un, tc.unusable)
		}
		for _, u := range un {
			if !strings.Contains(u, "classic personal access token (ghp_)") || strings.Contains(u, "ghp_classic") {
				t.Errorf("offered %v: unusable says %q", tc.offered, u)
			}
		}
	}
}
