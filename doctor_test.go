package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/forges/gitlab"
	"github.com/alchemic-studio/alfred/forges/gitlab/gitlabtest"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/state"
)

const doctorPublic = "https://alfred.example.com"

// doctorEnv is a correct configuration but for the forge: a created state
// repository, the host runner with a Claude Code stub on PATH, OAuth set.
func doctorEnv(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state.git")
	st, err := state.Open(context.Background(), dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	stub := "#!/bin/sh\necho '2.1.197 (Claude Code)'\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"ALFRED_CONFIG": "", "ALFRED_STATE_DIR": dir, "ALFRED_PUBLIC_URL": doctorPublic,
		"ALFRED_WEBHOOK_SECRETS": "s3cret", "ALFRED_RUNNER": "host", "ALFRED_DOCKER_HOST": "",
		"ALFRED_OAUTH_CLIENT_ID": "client", "ALFRED_OAUTH_CLIENT_SECRET": "oauth-client-s3cret-0123", "ALFRED_FORGE_NAME": "",
		"PATH": bin + ":/usr/bin:/bin",
	}
}

// doctorLines runs alfred doctor and returns its exit status, output and the
// names of its FAIL lines; it fails the test on a line that is neither.
func doctorLines(t *testing.T, env map[string]string, args ...string) (int, string, []string) {
	t.Helper()
	code, out, errOut := alfred(t, env, append([]string{"doctor"}, args...)...)
	var failed []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.HasPrefix(l, "OK   "):
		case strings.HasPrefix(l, "FAIL "):
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "FAIL "), ": ")
			failed = append(failed, name)
		default:
			t.Errorf("line %q is neither OK nor FAIL (stderr %q)", l, errOut)
		}
	}
	return code, out, failed
}

func checkDoctor(t *testing.T, code int, out string, failed, want []string) {
	t.Helper()
	slices.Sort(failed)
	slices.Sort(want)
	if !slices.Equal(failed, want) {
		t.Errorf("FAIL lines %q, want %q:\n%s", failed, want, out)
	}
	if wantCode := min(len(want), 1); code != wantCode {
		t.Errorf("exit status %d, want %d:\n%s", code, wantCode, out)
	}
}

func TestDoctorAgainstForgejo(t *testing.T) {
	hook := doctorPublic + "/webhooks/forgejo"
	tests := []struct {
		name   string
		token  string
		hook   string // "" for none
		labels bool
		scopes []string
		want   []string
	}{
		{name: "correct setup", hook: hook, labels: true},
		{name: "wrong token", token: "wrong-token-0000", hook: hook, labels: true, want: []string{"forge"}},
		{name: "missing scope", hook: hook, labels: true, scopes: []string{"read:user", "write:issue", "read:repository"},
			want: []string{"token repository write (alice/demo)"}},
		{name: "webhook missing", labels: true, want: []string{"webhook alice/demo"}},
		{name: "webhook elsewhere", hook: "https://old.example.com/webhooks/forgejo", labels: true, want: []string{"webhook alice/demo"}},
		{name: "labels missing", hook: hook, want: []string{"labels alice/demo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fj := forgejotest.NewServer(t)
			if tt.hook != "" {
				fj.SetWebhook(tt.hook, "s3cret")
			}
			if tt.labels {
				f, err := forgejo.New(forgejo.Options{BaseURL: fj.URL(), Token: forgejotest.BotToken})
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := forges.SyncLabels(context.Background(), f, forges.Project{Owner: forgejotest.Owner, Name: forgejotest.Repo}, lifecycle.LabelsWith(forges.ScopedStatusPrefix)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.scopes != nil {
				fj.SetTokenScopes(tt.scopes...)
			}
			env := doctorEnv(t)
			env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"], env["ALFRED_FORGE_TOKEN"] = "forgejo", fj.URL(), forgejotest.BotToken
			if tt.token != "" {
				env["ALFRED_FORGE_TOKEN"] = tt.token
			}
			code, out, failed := doctorLines(t, env, "-project", "alice/demo")
			checkDoctor(t, code, out, failed, tt.want)
			if strings.Contains(out, env["ALFRED_FORGE_TOKEN"]) {
				t.Errorf("the output shows the token:\n%s", out)
			}
			t.Logf("alfred doctor, %s:\n%s", tt.name, out)
		})
	}
}

func TestDoctorAgainstGitLab(t *testing.T) {
	hook := doctorPublic + "/webhooks/gitlab"
	all := []string{"issues", "note", "merge_requests", "pipeline", "push"}
	type hookSpec struct {
		url    string
		secret bool
		events []string
	}
	tests := []struct {
		name   string
		token  string
		hooks  []hookSpec
		labels bool
		scopes []string
		want   []string
	}{
		{name: "correct setup", hooks: []hookSpec{{hook, true, all}}, labels: true},
		{name: "wrong token", token: "glpat-wrong", hooks: []hookSpec{{hook, true, all}}, labels: true, want: []string{"forge"}},
		{name: "missing scope", hooks: []hookSpec{{hook, true, all}}, labels: true, scopes: []string{"read_api"},
			want: []string{"token issues (acme/platform/demo)", "token pull requests (acme/platform/demo)", "token repository write (acme/platform/demo)"}},
		{name: "webhook missing", labels: true, want: []string{"webhook acme/platform/demo"}},
		{name: "webhook elsewhere", hooks: []hookSpec{{"https://old.example.com/hook", true, all}}, labels: true, want: []string{"webhook acme/platform/demo"}},
		{name: "webhook without secret and events", hooks: []hookSpec{{hook, false, []string{"push"}}}, labels: true, want: []string{"webhook acme/platform/demo"}},
		{name: "labels missing", hooks: []hookSpec{{hook, true, all}}, want: []string{"labels acme/platform/demo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gl := gitlabtest.NewServer(t)
			for _, h := range tt.hooks {
				gl.AddHook(h.url, h.secret, h.events...)
			}
			if tt.labels {
				f, err := gitlab.New(gitlab.Options{BaseURL: gl.URL(), Token: gl.Token()})
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := forges.SyncLabels(context.Background(), f, gl.Project(), lifecycle.Labels()); err != nil {
					t.Fatal(err)
				}
			}
			if tt.scopes != nil {
				gl.SetTokenScopes(tt.scopes...)
			}
			env := doctorEnv(t)
			env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"], env["ALFRED_FORGE_TOKEN"] = "gitlab", gl.URL(), gl.Token()
			if tt.token != "" {
				env["ALFRED_FORGE_TOKEN"] = tt.token
			}
			code, out, failed := doctorLines(t, env, "-project", gl.Project().FullName())
			checkDoctor(t, code, out, failed, tt.want)
			t.Logf("alfred doctor, %s:\n%s", tt.name, out)
		})
	}
}

// TestDoctorConfiguration covers what needs no forge: no forge, no project,
// a setting that does not parse.
func TestDoctorConfiguration(t *testing.T) {
	env := doctorEnv(t)
	env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"] = "", ""
	code, out, failed := doctorLines(t, env)
	checkDoctor(t, code, out, failed, []string{"config"})

	env["ALFRED_STATE_DIR"] = filepath.Join(t.TempDir(), "not-yet", "state.git")
	code, out, failed = doctorLines(t, env)
	checkDoctor(t, code, out, failed, []string{"config"})
	if !strings.Contains(out, "alfred serve creates it") {
		t.Errorf("a state repository not created yet is not explained:\n%s", out)
	}

	env["ALFRED_RUNNER"] = "podman"
	code, out, failed = doctorLines(t, env)
	checkDoctor(t, code, out, failed, []string{"config"})
	if !strings.Contains(out, "ALFRED_RUNNER") {
		t.Errorf("the bad setting is not named:\n%s", out)
	}
}

func TestDoctorWithoutProject(t *testing.T) {
	fj := forgejotest.NewServer(t)
	env := doctorEnv(t)
	env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"], env["ALFRED_FORGE_TOKEN"] = "forgejo", fj.URL(), forgejotest.BotToken
	code, out, failed := doctorLines(t, env)
	checkDoctor(t, code, out, failed, []string{"projects"})
}

// TestDoctorDocker checks the daemon and the image with the image runner and
// no forge (so config and oauth fail too, the same in every case).
func TestDoctorDocker(t *testing.T) {
	host := os.Getenv("ALFRED_TEST_DOCKER_HOST")
	image := os.Getenv("ALFRED_TEST_IMAGE")
	if image == "" {
		image = "alfred-test/busybox:latest"
	}
	tests := []struct {
		name         string
		host, image  string
		needsDaemon  bool
		want         []string
		wantContains string
	}{
		{name: "daemon down", host: "unix://" + filepath.Join(t.TempDir(), "no-docker.sock"), image: image,
			want: []string{"config", "oauth", "docker"}, wantContains: "does not answer"},
		{name: "image missing", host: host, image: "alfred-test/does-not-exist:never", needsDaemon: true,
			want: []string{"config", "oauth", "image"}, wantContains: "is not on the daemon"},
		// The test image has no agent CLI: the daemon and image are right,
		// and detection runs and says so.
		{name: "image present", host: host, image: image, needsDaemon: true,
			want: []string{"config", "oauth", "agents"}, wantContains: "OK   image: " + image},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsDaemon && host == "" {
				if testing.Short() {
					t.Skip("ALFRED_TEST_DOCKER_HOST is not set (see /tmp/alfred-test-docker/env)")
				}
				t.Fatal("ALFRED_TEST_DOCKER_HOST is not set: point it at a Docker daemon holding ALFRED_TEST_IMAGE")
			}
			env := doctorEnv(t)
			env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"] = "", ""
			env["ALFRED_OAUTH_CLIENT_ID"], env["ALFRED_OAUTH_CLIENT_SECRET"] = "", ""
			env["ALFRED_RUNNER"], env["ALFRED_DOCKER_HOST"], env["ALFRED_AGENT_IMAGE"] = "image", tt.host, tt.image
			code, out, failed := doctorLines(t, env)
			checkDoctor(t, code, out, failed, tt.want)
			if !strings.Contains(out, tt.wantContains) {
				t.Errorf("output lacks %q:\n%s", tt.wantContains, out)
			}
			t.Logf("alfred doctor, %s:\n%s", tt.name, out)
		})
	}
}

// TestDoctorSaysWhichCLIsRunSealed: per agent CLI, whether the gateway
// seals it: its provider served with a credential offered (a Claude
// subscription's token among them), a model at an address of its own that
// takes none, or what to offer; a provider served without a credential at
// its real address is not "yes".
func TestDoctorSaysWhichCLIsRunSealed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai-1234")
	t.Setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-1234")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
	t.Setenv("GEMINI_API_KEY", "gemini-key-1234")
	t.Setenv("XAI_API_KEY", "xai-key-1234")
	t.Setenv("GH_TOKEN", "github_pat_11doctor1234")
	sealedLines := func(c *config.Config) map[string]string {
		lines := map[string]string{}
		for _, l := range (&doctor{c: c}).checkSealed() {
			lines[l.Name] = l.String()
		}
		return lines
	}
	for _, tc := range []struct {
		offered []string
		want    map[string]string
	}{
		{[]string{"OPENAI_API_KEY"}, map[string]string{
			"sealed claude-code": "no: the gateway holds no anthropic credential: offer ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN in ALFRED_AGENT_ENV; until then its runs on AGENT_NETWORK none stop before they start",
			"sealed codex":       "yes: no network (AGENT_NETWORK none, the default), its model (openai) through the gateway, which holds the key (Authorization)",
			"sealed opencode":    "yes: no network (AGENT_NETWORK none, the default), its model (openai)",
			"sealed copilot":     "yes: no network (AGENT_NETWORK none, the default), its model (openai)",
			"sealed gemini":      "no: the gateway holds no gemini credential: offer GEMINI_API_KEY or GOOGLE_API_KEY in ALFRED_AGENT_ENV; until then",
			"sealed grok":        "no: the gateway holds no xai credential: offer GROK_API_KEY or XAI_API_KEY in ALFRED_AGENT_ENV; until then",
		}},
		{[]string{"CLAUDE_CODE_OAUTH_TOKEN"}, map[string]string{
			"sealed claude-code": "yes: no network (AGENT_NETWORK none, the default), its model (anthropic) through the gateway, which holds the key (Authorization)",
			"sealed codex":       "no: the gateway holds no openai credential: offer OPENAI_API_KEY or CODEX_API_KEY in ALFRED_AGENT_ENV; until then",
			"sealed opencode":    "no: the gateway holds no openai credential: offer OPENAI_API_KEY or CODEX_API_KEY in ALFRED_AGENT_ENV; until then",
			"sealed copilot": "no: the gateway holds no github-copilot credential: offer COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN in ALFRED_AGENT_ENV " +
				"(for Copilot's GitHub sign-in: a fine-grained PAT or an OAuth token, not a classic ghp_ one); " +
				"or the gateway holds no openai credential: offer OPENAI_API_KEY or CODEX_API_KEY in ALFRED_AGENT_ENV (for Copilot's BYOK provider); until then",
		}},
		{[]string{"GH_TOKEN"}, map[string]string{
			"sealed copilot": "yes: no network (AGENT_NETWORK none, the default), its model (github-copilot) through the gateway, which holds the key (Authorization)",
			"sealed codex":   "no: the gateway holds no openai credential",
		}},
		{[]string{"OPENAI_API_KEY", "GH_TOKEN"}, map[string]string{
			"sealed copilot": "yes: no network (AGENT_NETWORK none, the default), its model (github-copilot) through the gateway",
			"sealed codex":   "yes: no network (AGENT_NETWORK none, the default), its model (openai) through the gateway",
		}},
		{[]string{"ANTHROPIC_BASE_URL"}, map[string]string{
			"sealed claude-code": "yes: no network (AGENT_NETWORK none, the default), its model (anthropic) at ANTHROPIC_BASE_URL through the gateway, without a key",
		}},
		{[]string{"GEMINI_API_KEY", "XAI_API_KEY"}, map[string]string{
			"sealed gemini": "yes: no network (AGENT_NETWORK none, the default), its model (gemini) through the gateway, which holds the key (x-goog-api-key)",
			"sealed grok":   "yes: no network (AGENT_NETWORK none, the default), its model (xai) through the gateway, which holds the key (Authorization)",
		}},
	} {
		lines := sealedLines(&config.Config{Runner: "image", Gateway: "auto", AgentEnv: tc.offered})
		for name, want := range tc.want {
			if !strings.Contains(lines[name], want) {
				t.Errorf("offered %v, %s: %q, want %q", tc.offered, name, lines[name], want)
			}
		}
	}
	c := &config.Config{Runner: "image", Gateway: "auto", AgentEnv: []string{"OPENAI_API_KEY"}}
	c.Gateway = "off"
	if got := (&doctor{c: c}).checkSealed(); len(got) != 1 || !strings.Contains(got[0].String(), "off (ALFRED_GATEWAY off, runner image): agents run with their keys") {
		t.Errorf("gateway off: %v", got)
	}
}

// TestDoctorSaysAKeyTheProviderRefuses: a classic GitHub token (ghp_)
// offered for Copilot's sign-in is not held by the gateway (Copilot
// refuses that kind), Copilot is not sealed by it, and the doctor fails a
// line naming the variable and what to offer instead.
func TestDoctorSaysAKeyTheProviderRefuses(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_classic1234")
	c := &config.Config{Runner: "image", Gateway: "auto", AgentEnv: []string{"GITHUB_TOKEN"}}
	if served := servedProviders(c); slices.Contains(served, gateway.NameCopilot) {
		t.Errorf("the gateway holds the classic token: serves %v", served)
	}
	var copilot, refused string
	for _, l := range (&doctor{c: c}).checkSealed() {
		switch l.Name {
		case "sealed copilot":
			copilot = l.String()
		case "gateway key":
			if l.OK {
				t.Errorf("the refused key's line passes: %s", l)
			}
			refused = l.String()
		}
	}
	if !strings.Contains(copilot, "no: the gateway holds no github-copilot credential") {
		t.Errorf("sealed copilot: %q", copilot)
	}
	for _, want := range []string{"GITHUB_TOKEN holds a classic personal access token (ghp_), which Copilot refuses; the gateway does not hold it", "fine-grained token (github_pat_)"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the doctor's line %q lacks %q", refused, want)
		}
	}
	if strings.Contains(refused, "ghp_classic1234") {
		t.Errorf("the doctor's line shows the token: %q", refused)
	}
}
