package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/state"
)

// TestSecretsListsEverySecretHeld: the engine and the pages hide the same
// values: the forge token, the API key, the OAuth client secret, every
// webhook secret, the metrics token, the sign-in cookies' keys, the
// password in the state remote's URL and the secret-named variables
// offered to the agents.
func TestSecretsListsEverySecretHeld(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-1234")
	t.Setenv("AGENT_LANGUAGE", "fr")
	c := &config.Config{APIKey: "api-1234", Forges: []config.Forge{{Token: "tok-1234", OAuthClientSecret: "oauth-1234",
		WebhookSecrets: []string{"old-1234", "new-1234"}}}, AgentEnv: []string{"ANTHROPIC_API_KEY", "AGENT_LANGUAGE"},
		MetricsToken: "metrics-1234", SessionKeys: []string{"cookie-1234"}, StateRemote: "https://alfred:remote-1234@forge.example/a/state.git"}
	got := secrets(c)
	for _, want := range []string{"tok-1234", "api-1234", "oauth-1234", "old-1234", "new-1234", "sk-ant-1234", "metrics-1234", "cookie-1234", "remote-1234"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %q", want, got)
		}
	}
	if slices.Contains(got, "fr") || slices.Contains(got, "") {
		t.Errorf("secrets hold a value that is not one: %q", got)
	}
}

// TestGatewayKeepsTheKey: with the gateway on (the default with the image
// runner), the served providers' variables ALFRED_AGENT_ENV names go to the
// gateway and to no container's base spec, the seal keeps them for the runs
// a project puts on a network, and the key is still among the secrets
// hidden; off, they are offered as before.
func TestGatewayKeepsTheKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-1234")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/base")
	t.Setenv("OPENAI_API_KEY", "sk-openai-1234")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
	t.Setenv("MORPH_API_KEY", "sk-morph-1234") // Grok's: xAI is not served (no GROK_API_KEY)
	c := &config.Config{Runner: "image", Gateway: "off", AgentEnv: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "MORPH_API_KEY"}}
	if env := baseSpec(c).Env; env["ANTHROPIC_API_KEY"] != "sk-ant-1234" {
		t.Errorf("gateway off: the key is not offered: %v", env)
	}
	if s, err := newSeal(c, t.TempDir(), slog.Default()); s != nil || err != nil {
		t.Errorf("gateway off: a seal %v %v", s, err)
	}
	c.Gateway = "auto"
	env := baseSpec(c).Env
	if _, ok := env["ANTHROPIC_API_KEY"]; ok {
		t.Errorf("gateway on: the key is offered to containers: %v", env)
	}
	if _, ok := env["ANTHROPIC_BASE_URL"]; ok {
		t.Errorf("gateway on: the base URL is offered to containers: %v", env)
	}
	if _, ok := env["OPENAI_API_KEY"]; ok {
		t.Errorf("gateway on: the OpenAI key is offered to containers: %v", env)
	}
	if env["MORPH_API_KEY"] != "sk-morph-1234" {
		t.Errorf("gateway on: a CLI whose provider is not served lost its key: %v", env)
	}
	if !slices.Contains(secrets(c), "sk-ant-1234") {
		t.Errorf("gateway on: the held key is not hidden: %q", secrets(c))
	}
	data := t.TempDir()
	leftover := filepath.Join(data, gatewayDirName, "alfred-gw-0123456789")
	if err := os.MkdirAll(leftover, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := newSeal(c, data, slog.Default())
	if err != nil || s == nil || s.Gateway == nil {
		t.Fatalf("gateway on: %v %v", s, err)
	}
	defer s.Gateway.Close()
	if got := s.Gateway.Providers(); !slices.Equal(got, []string{"anthropic", "openai"}) {
		t.Errorf("providers %v", got)
	}
	if want := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1234", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1/base", "OPENAI_API_KEY": "sk-openai-1234", "OPENAI_BASE_URL": "http://127.0.0.1:2/v1"}; !maps.Equal(s.Withheld, want) {
		t.Errorf("withheld %v; want %v", s.Withheld, want)
	}
	sess, err := s.Gateway.Open("r1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if !strings.HasPrefix(sess.SocketPath(), filepath.Join(data, gatewayDirName)+"/") {
		t.Errorf("socket %s is not under the data folder", sess.SocketPath())
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("a killed run's socket folder is left: %v", err)
	}
	if _, err := newSeal(c, "/"+strings.Repeat("d", 90), slog.Default()); err == nil {
		t.Error("a data folder too long for the sockets was accepted")
	}
}

// TestPagesKnowTheLifecycle: the pages get the statuses from the lifecycle
// table and the phases from the agents, not from copies of their own.
func TestPagesKnowTheLifecycle(t *testing.T) {
	c := &config.Config{StateDir: t.TempDir()}
	d, err := pageDeps(c, nil, nil, map[string]agents.Adapter{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, 0, len(agents.Phases()))
	for _, p := range agents.Phases() {
		want = append(want, string(p))
	}
	if !slices.Equal(d.Phases, want) {
		t.Errorf("pages' phases %q, want %q", d.Phases, want)
	}
	all := d.Statuses.All()
	for _, st := range lifecycle.Statuses() {
		if !slices.Contains(all, string(st)) {
			t.Errorf("pages' statuses %q lack %s", all, st)
		}
	}
	if len(all) != len(lifecycle.Statuses()) {
		t.Errorf("pages' statuses %q, want the table's %d", all, len(lifecycle.Statuses()))
	}
}

// TestAgentsScreenSaysWhatIsSealed: the agents screen says, per CLI, what
// alfred doctor says of its seal: yes with its provider's credential
// offered, else which credential to offer; nothing for an adapter that runs
// in the bot.
func TestAgentsScreenSaysWhatIsSealed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai-1234")
	c := &config.Config{StateDir: t.TempDir(), Runner: "image", Gateway: "auto", AgentEnv: []string{"OPENAI_API_KEY"}}
	adapters := map[string]agents.Adapter{}
	for _, mk := range locals {
		l, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		adapters[l.ID()] = l
	}
	fa, err := fake.New(fake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	adapters[fake.ID] = fa
	d, err := pageDeps(c, nil, nil, adapters, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"claude-code": "no: the gateway holds no anthropic credential: offer ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN in ALFRED_AGENT_ENV",
		"codex":       "yes: no network (AGENT_NETWORK none, the default), its model (openai) through the gateway",
		"gemini":      "no: the gateway holds no gemini credential: offer GEMINI_API_KEY or GOOGLE_API_KEY in ALFRED_AGENT_ENV",
		fake.ID:       "no: this CLI cannot run sealed",
	}
	for _, a := range d.Agents {
		if w, ok := want[a.ID]; ok && !strings.HasPrefix(a.Sealed, w) {
			t.Errorf("%s: sealed %q, want %q", a.ID, a.Sealed, w)
		}
	}
}

// TestStateKeeperReadiness: the pages' readiness is the base check's, then
// the store's health (state.Health): a failed commit makes it fail.
func TestStateKeeperReadiness(t *testing.T) {
	k := &stateKeeper{health: state.NewHealth(slog.New(slog.DiscardHandler), t.TempDir()), log: slog.New(slog.DiscardHandler)}
	ready := k.ready(func(context.Context) error { return nil })
	if err := ready(context.Background()); err != nil {
		t.Fatalf("ready() = %v before any commit", err)
	}
	k.observe(time.Millisecond, fmt.Errorf("commit state: write pack: %w", syscall.ENOSPC))
	if err := ready(context.Background()); err == nil || !strings.Contains(err.Error(), "state writes fail since") {
		t.Fatalf("ready() = %v after a failed commit", err)
	}
	if err := k.ready(func(context.Context) error { return errors.New("not writable") })(context.Background()); err == nil {
		t.Fatal("the base check is ignored")
	}
	if k.notes() != nil {
		t.Fatal("notes without a mirror")
	}
}

func TestForgeCredentialsStayOnTheirHost(t *testing.T) {
	c := &config.Config{Forges: []config.Forge{
		{Kind: "forgejo", Name: "forgejo", URL: "https://code.example.org", Token: "fj-token"},
		{Kind: "github", Name: "github", URL: "https://api.github.com", Token: "gh-token"},
	}}
	for _, tt := range []struct {
		remote, user, token string
	}{
		{"https://code.example.org/alfred/alfred-state.git", "oauth2", "fj-token"},
		{"https://github.com/acme/alfred-state.git", "x-access-token", "gh-token"},
		{"https://elsewhere.example/alfred-state.git", "", ""},
		{"git@code.example.org:alfred/alfred-state.git", "", ""},
	} {
		if user, token := forgeCredentials(c, tt.remote); user != tt.user || token != tt.token {
			t.Errorf("credentials for %s: %q %q, want %q %q", tt.remote, user, token, tt.user, tt.token)
		}
	}
}

// TestOpenWaitsForTheLock: serve's state open waits while another server
// holds the store (a replaced Pod's predecessor still shutting down) and
// opens once it lets go; past its wait, the error names the lock.
func TestOpenWaitsForTheLock(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		holdFor  time.Duration
		wantOpen bool
	}{
		{"the holder stops within the wait", 10 * time.Second, 400 * time.Millisecond, true},
		{"the holder outlasts the wait", 300 * time.Millisecond, 3 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			holder, err := state.Open(ctx, dir, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			released := make(chan struct{})
			go func() {
				defer close(released)
				time.Sleep(tc.holdFor)
				holder.Close()
			}()
			start := time.Now()
			st, err := openWaiting(ctx, dir, state.Options{}, tc.wait, log)
			took := time.Since(start)
			<-released
			if !tc.wantOpen {
				if !errors.Is(err, state.ErrLocked) {
					t.Fatalf("open past the wait: %v, want ErrLocked", err)
				}
				if took < tc.wait {
					t.Fatalf("gave up after %v, before its wait of %v", took, tc.wait)
				}
				return
			}
			if err != nil {
				t.Fatalf("open once the holder stopped: %v", err)
			}
			defer st.Close()
			if took < tc.holdFor {
				t.Fatalf("opened after %v while the holder held the store for %v", took, tc.holdFor)
			}
		})
	}
}
