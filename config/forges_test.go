package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForgeSections: the variables describe one forge, and each [forge NAME]
// section of the file one more, with its own URL, token, secrets and OAuth2
// application; a section's values may read the environment.
func TestForgeSections(t *testing.T) {
	file := filepath.Join(t.TempDir(), "alfred.env")
	content := `ALFRED_LISTEN=127.0.0.1:9001
[forge gl]
ALFRED_FORGE=gitlab
ALFRED_FORGE_URL=https://gitlab.example.com
ALFRED_FORGE_TOKEN=${GL_TOKEN}
ALFRED_WEBHOOK_SECRETS=gl-1,gl-2
[forge gh]
ALFRED_FORGE=github
ALFRED_FORGE_TOKEN=$GH_TOKEN
ALFRED_OAUTH_CLIENT_ID=id
ALFRED_OAUTH_CLIENT_SECRET=secret
`
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	e := env(map[string]string{"ALFRED_CONFIG": file, "GL_TOKEN": "glpat-1", "GH_TOKEN": "ghp-1",
		"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": "https://codeberg.example", "ALFRED_FORGE_TOKEN": "fj-1"})
	c, err := Load("serve", nil, e, io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	want := []Forge{
		{Kind: "forgejo", Name: "forgejo", URL: "https://codeberg.example", Token: "fj-1"},
		{Kind: "gitlab", Name: "gl", URL: "https://gitlab.example.com", Token: "glpat-1", WebhookSecrets: []string{"gl-1", "gl-2"}},
		{Kind: "github", Name: "gh", Token: "ghp-1", OAuthClientID: "id", OAuthClientSecret: "secret"},
	}
	if len(c.Forges) != len(want) {
		t.Fatalf("forges %+v, want %+v", c.Forges, want)
	}
	for i, w := range want {
		g := c.Forges[i]
		if g.Kind != w.Kind || g.Name != w.Name || g.URL != w.URL || g.Token != w.Token || strings.Join(g.WebhookSecrets, ",") != strings.Join(w.WebhookSecrets, ",") ||
			g.OAuthClientID != w.OAuthClientID || g.OAuthClientSecret != w.OAuthClientSecret {
			t.Errorf("forge %d: %+v, want %+v", i, g, w)
		}
	}
	if f, err := c.ForgeNamed("gl"); err != nil || f.Kind != "gitlab" {
		t.Errorf("ForgeNamed(gl) = %+v, %v", f, err)
	}
	if _, err := c.ForgeNamed(""); err == nil || !strings.Contains(err.Error(), "several forges") {
		t.Errorf("ForgeNamed(\"\") with three forges: %v", err)
	}
	if m := c.Missing(); len(m) != 2 || !strings.Contains(m[0], "of forge forgejo") || !strings.Contains(m[1], "of forge gh") {
		t.Errorf("Missing() = %q: want each forge's missing webhook secret named", m)
	}
}

func TestForgeSectionErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"a global setting in a section", "[forge gl]\nALFRED_FORGE=gitlab\nALFRED_LISTEN=1.2.3.4:1\n", "line 3: ALFRED_LISTEN is not a setting of one forge"},
		{"not a forge section", "[server]\n", "line 1: want a section [forge NAME]"},
		{"a bad name", "[forge a/b]\n", "the forge's name must be letters"},
		{"no kind", "[forge gl]\nALFRED_FORGE_URL=https://x.example\n", "[forge gl] ALFRED_FORGE: required"},
		{"no URL", "[forge gl]\nALFRED_FORGE=gitlab\n", "[forge gl] ALFRED_FORGE_URL: required when ALFRED_FORGE is gitlab"},
		{"half an OAuth2 application", "[forge gh]\nALFRED_FORGE=github\nALFRED_OAUTH_CLIENT_ID=x\n", "set both or neither"},
		{"two forges, one name", "ALFRED_FORGE=github\n[forge github]\nALFRED_FORGE=github\n", `two forges are named "github"`},
		{"an App on GitLab", "[forge gl]\nALFRED_FORGE=gitlab\nALFRED_FORGE_URL=https://x.example\nALFRED_GITHUB_APP_ID=12\n", "GitHub App mode is for ALFRED_FORGE=github"},
		{"an App without its key", "[forge gh]\nALFRED_FORGE=github\nALFRED_GITHUB_APP_ID=12\n", "set both for GitHub App mode"},
		{"an App and a token", "[forge gh]\nALFRED_FORGE=github\nALFRED_GITHUB_APP_ID=12\nALFRED_GITHUB_APP_KEY_FILE=/k.pem\nALFRED_FORGE_TOKEN=t\n", "leave it empty in GitHub App mode"},
		{"an App id that is no number", "[forge gh]\nALFRED_FORGE=github\nALFRED_GITHUB_APP_ID=twelve\n", "ALFRED_GITHUB_APP_ID"},
		{"a name twice", "[forge gl]\nALFRED_FORGE=gitlab\nALFRED_FORGE_URL=https://x.example\nALFRED_FORGE_NAME=other\n", "the section names the forge already"},
	}
	for _, tc := range tests {
		file := filepath.Join(t.TempDir(), "alfred.env")
		os.WriteFile(file, []byte(tc.content), 0o600)
		_, err := Load("serve", nil, env(map[string]string{"ALFRED_CONFIG": file}), io.Discard, testKinds)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestIgnoredForgeSettings(t *testing.T) {
	c, err := Load("serve", nil, env(map[string]string{"ALFRED_WEBHOOK_SECRETS": "s", "ALFRED_LISTEN": "127.0.0.1:9"}), io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Ignored(); len(got) != 1 || got[0] != "ALFRED_WEBHOOK_SECRETS" {
		t.Fatalf("Ignored() = %q", got)
	}
	c, _ = Load("serve", nil, env(map[string]string{"ALFRED_FORGE": "github", "ALFRED_WEBHOOK_SECRETS": "s"}), io.Discard, testKinds)
	if got := c.Ignored(); len(got) != 0 {
		t.Fatalf("with a forge: Ignored() = %q", got)
	}
}
