package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load("serve", nil, env(nil), io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.StateDir != "./var/state.git" || c.LogFormat != "text" ||
		c.ShutdownTimeout != 30*time.Second || c.Runner != "image" || c.MaxParallelRuns != 2 {
		t.Fatalf("defaults: %+v", c)
	}
	if got := c.Missing(); len(got) != 1 || !strings.Contains(got[0], "ALFRED_FORGE") {
		t.Fatalf("Missing() = %q, want the forge named", got)
	}
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "alfred.env")
	content := "# comment\nALFRED_LISTEN=127.0.0.1:9001\nALFRED_LOG_FORMAT=\"json\"\nexport ALFRED_LOG_LEVEL=debug\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	e := env(map[string]string{"ALFRED_CONFIG": file, "ALFRED_LISTEN": "127.0.0.1:9002", "ALFRED_LOG_LEVEL": "warn"})
	c, err := Load("serve", []string{"-listen", "127.0.0.1:9003"}, e, io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9003" {
		t.Errorf("flag must win over env and file: %s", c.Listen)
	}
	if c.LogLevel != "warn" {
		t.Errorf("env must win over file: %s", c.LogLevel)
	}
	if c.LogFormat != "json" {
		t.Errorf("file must win over default: %s", c.LogFormat)
	}
}

func TestLoadErrorsNameTheSetting(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.env")
	os.WriteFile(unknown, []byte("ALFRED_LISTN=1\n"), 0o600)
	noEquals := filepath.Join(dir, "noeq.env")
	os.WriteFile(noEquals, []byte("ALFRED_LISTEN\n"), 0o600)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"bad listen", []string{"-listen", "nope"}, nil, []string{"ALFRED_LISTEN", "host:port"}},
		{"bad port", nil, map[string]string{"ALFRED_LISTEN": "127.0.0.1:99999"}, []string{"ALFRED_LISTEN", "65535"}},
		{"bad format", nil, map[string]string{"ALFRED_LOG_FORMAT": "xml"}, []string{"ALFRED_LOG_FORMAT", "text or json"}},
		{"bad duration", nil, map[string]string{"ALFRED_SHUTDOWN_TIMEOUT": "-1s"}, []string{"ALFRED_SHUTDOWN_TIMEOUT", "positive"}},
		{"bad forge", nil, map[string]string{"ALFRED_FORGE": "bitbucket"}, []string{"ALFRED_FORGE", "forgejo, github, gitlab"}},
		{"forge without url", nil, map[string]string{"ALFRED_FORGE": "forgejo"}, []string{"ALFRED_FORGE_URL", "required"}},
		{"bad url", nil, map[string]string{"ALFRED_FORGE_URL": "ftp://x"}, []string{"ALFRED_FORGE_URL", "http(s)"}},
		{"bad runs", nil, map[string]string{"ALFRED_MAX_PARALLEL_RUNS": "0"}, []string{"ALFRED_MAX_PARALLEL_RUNS", "1 to 64"}},
		{"bad name", nil, map[string]string{"ALFRED_FORGE_NAME": "a/b"}, []string{"ALFRED_FORGE_NAME"}},
		{"unknown in file", nil, map[string]string{"ALFRED_CONFIG": unknown}, []string{"unknown setting ALFRED_LISTN", "line 1"}},
		{"no equals in file", []string{"-config", noEquals}, nil, []string{"line 1", "NAME=value"}},
		{"missing file", []string{"-config", filepath.Join(dir, "absent")}, nil, []string{"configuration file"}},
		{"unknown flag", []string{"-listn", "x"}, nil, []string{"listn"}},
		{"stray argument", []string{"extra"}, nil, []string{"unexpected argument"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("serve", tt.args, env(tt.env), io.Discard, testKinds)
			if err == nil {
				t.Fatal("Load accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestDescribeHidesSecrets(t *testing.T) {
	c, err := Load("serve", nil, env(map[string]string{
		"ALFRED_FORGE": "github", "ALFRED_FORGE_TOKEN": "tok-123", "ALFRED_WEBHOOK_SECRETS": "s1, s2",
	}), io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Forge.WebhookSecrets) != 2 || c.Forge.WebhookSecrets[1] != "s2" {
		t.Fatalf("secrets parsed as %q", c.Forge.WebhookSecrets)
	}
	if c.Forge.Name != "github" || len(c.Forges) != 1 || c.Forges[0].Name != "github" {
		t.Errorf("forge name defaults to the kind, got %q (forges %+v)", c.Forge.Name, c.Forges)
	}
	for _, e := range c.Describe() {
		if strings.Contains(e.Value, "tok-123") || strings.Contains(e.Value, "s1") {
			t.Errorf("%s shows a secret: %q", e.Name, e.Value)
		}
	}
	if len(c.Missing()) != 0 {
		t.Errorf("Missing() = %q, want nothing", c.Missing())
	}
}

// TestReadmeListsEverySetting keeps the README's configuration reference in
// step with the catalogue.
func TestReadmeListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		row := "| `" + s.Env + "` | `-" + s.Flag + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no row starting %q", row)
		}
	}
}

// testKinds are kinds as forges/setup registers them (setup.ConfigKinds).
var testKinds = []ForgeKind{{Name: "forgejo"}, {Name: "github", URLOptional: true, App: true}, {Name: "gitlab"}}
