package bot

import (
	"context"
	"encoding/pem"
	"os"
	"slices"
	"strings"
	"testing"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// TestSealCopilotWays: Copilot's run is sealed signed in when the gateway
// holds a GitHub token (with an OpenAI key too), with the gateway as its
// HTTPS proxy, the run's token behind github_pat_, and the gateway's
// certificate authority mounted read-only (a certificate only); with an
// OpenAI key alone, or when the project asks for openai, as a BYOK client.
// The offered GitHub token is in neither spec.
func TestSealCopilotWays(t *testing.T) {
	a, err := copilot.New()
	if err != nil {
		t.Fatal(err)
	}
	const offered = "github_pat_11OFFEREDTOKEN_in_the_bot"
	for _, tc := range []struct {
		name      string
		providers []gateway.Provider
		signedIn  bool
	}{
		{"a GitHub token", []gateway.Provider{gateway.Copilot("", "github_pat_11HELD")}, true},
		{"a GitHub token and an OpenAI key", []gateway.Provider{gateway.OpenAI("", "sk-held"), gateway.Copilot("", "github_pat_11HELD")}, true},
		{"an OpenAI key", []gateway.Provider{gateway.OpenAI("", "sk-held")}, false},
		{"both, openai asked", []gateway.Provider{gateway.OpenAI("", "sk-held"), gateway.Copilot("", "github_pat_11HELD")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "gw") // short: a socket path is at most 107 bytes
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			g, err := gateway.New(gateway.Options{Providers: tc.providers, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close() })
			e := engineSealedBy(t, g, namedRunner("image"), "")
			if strings.Contains(tc.name, "openai asked") {
				e.settings.Overrides = staticOverrides([]state.SettingOverride{projectSetting("AGENT_PROVIDER", "openai")})
			}
			spec := sandbox.Spec{Network: "none", Env: map[string]string{"PATH": "/usr/bin", "GH_TOKEN": offered, "COPILOT_GITHUB_TOKEN": offered}}
			s, err := e.seal("run-copilot", Scope{Forge: "forgejo", Owner: "alice", Project: "demo"}, a, &spec)
			if err != nil || s == nil {
				t.Fatalf("seal: %v %v", s, err)
			}
			defer s.Close()
			for k, v := range spec.Env {
				if strings.Contains(v, offered) {
					t.Errorf("the sealed spec offers the GitHub token in %s", k)
				}
			}
			ca := sandbox.Mount{Host: s.CAPath(), Container: gateway.ContainerCA, ReadOnly: true}
			if !tc.signedIn {
				if spec.Env["COPILOT_PROVIDER_API_KEY"] != s.Token() || spec.Env["COPILOT_OFFLINE"] != "true" || slices.Contains(spec.Binds, ca) {
					t.Errorf("BYOK spec: env %v, binds %v", spec.Env, spec.Binds)
				}
				return
			}
			want := map[string]string{"COPILOT_GITHUB_TOKEN": gateway.GitHubTokenPrefix + s.Token(),
				"HTTPS_PROXY": "http://agent:" + s.Token() + "@127.0.0.1:47080", "NODE_EXTRA_CA_CERTS": gateway.ContainerCA}
			for k, v := range want {
				if spec.Env[k] != v {
					t.Errorf("%s = %q, want %q", k, spec.Env[k], v)
				}
			}
			if _, ok := spec.Env["COPILOT_OFFLINE"]; ok || !slices.Contains(spec.Binds, ca) {
				t.Errorf("signed-in spec: env %v, binds %v (want %v)", spec.Env, spec.Binds, ca)
			}
			b, err := os.ReadFile(s.CAPath())
			if block, rest := pem.Decode(b); err != nil || block == nil || block.Type != "CERTIFICATE" || strings.TrimSpace(string(rest)) != "" {
				t.Errorf("the mounted CA file %q (%v): want one certificate and nothing else", b, err)
			}
		})
	}
}

// engineSealedBy is an engine that seals runs on runner behind g (fwd: the
// forwarder to mount; empty: the image's own).
func engineSealedBy(t *testing.T, g *gateway.Gateway, runner sandbox.Runner, fwd string) *Engine {
	t.Helper()
	h := newHarness(t)
	h.engine.Close()
	cfg := h.engine.cfg
	cfg.Runner, cfg.Seal = runner, &botrun.Seal{Gateway: g, Forwarder: fwd}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}
