package bot

import (
	"errors"
	"slices"
	"strings"
	"testing"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// TestSealRules: with the gateway on, a run on AGENT_NETWORK none (the
// default) is sealed when its CLI can run sealed to a provider the gateway
// serves, and stops with a sentence that says how to fix it when not; a run
// its project put on a network is not sealed and gets the withheld keys back.
func TestSealRules(t *testing.T) {
	claude, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	unsealable, err := fake.New(fake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		adapter  agents.Adapter
		settings []state.SettingOverride
		sealed   bool
		refused  string // part of the error; empty: no error
	}{
		{"default network none: sealed", claude, nil, true, ""},
		{"on Kubernetes too: sealed", claude, nil, true, ""},
		{"a network chosen: unsealed with its key", claude, []state.SettingOverride{projectSetting("AGENT_NETWORK", "bridge")}, false, ""},
		{"a CLI that cannot run sealed", unsealable, nil, false, "fake cannot run sealed: it has no way to reach its model"},
		{"another provider asked", claude, []state.SettingOverride{projectSetting("AGENT_PROVIDER", "openai")}, false, "with provider openai: sealed, it calls anthropic"},
		{"a model of another provider", claude, []state.SettingOverride{projectSetting("AGENT_MODEL", "openai/gpt-5")}, false, "with provider openai"},
		{"a model of the provider served", claude, []state.SettingOverride{projectSetting("AGENT_MODEL", "anthropic/claude-x")}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner := namedRunner("image")
			if strings.Contains(tc.name, "Kubernetes") {
				runner = "kubernetes"
			}
			e, _ := sealingEngine(t, runner, "", "anthropic", "http://127.0.0.1:1")
			e.cfg.Seal.Withheld = map[string]string{"ANTHROPIC_API_KEY": "sk-held"}
			e.settings.Overrides = staticOverrides(tc.settings)
			sc := Scope{Forge: "forgejo", Owner: "alice", Project: "demo"}
			spec := e.cfg.Sandbox
			spec.Env = map[string]string{"PATH": "/usr/bin:/bin"}
			spec.Network = AgentNetwork.Get(e.settings, sc)
			s, err := e.seal("run-1", sc, tc.adapter, &spec)
			if s != nil {
				defer s.Close()
			}
			switch {
			case tc.refused != "":
				if !errors.Is(err, botrun.ErrUnsealable) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "set AGENT_NETWORK to a Docker network") {
					t.Fatalf("err %v; want %q and how to run it unsealed", err, tc.refused)
				}
			case err != nil:
				t.Fatal(err)
			case (s != nil) != tc.sealed:
				t.Fatalf("sealed %v; want %v", s != nil, tc.sealed)
			case tc.sealed && (spec.Network != "none" || spec.Env["ANTHROPIC_API_KEY"] != s.Token()):
				t.Fatalf("sealed spec: network %q, key %q", spec.Network, spec.Env["ANTHROPIC_API_KEY"])
			case !tc.sealed && (spec.Network != "bridge" || spec.Env["ANTHROPIC_API_KEY"] != "sk-held"):
				t.Fatalf("unsealed spec: network %q, env %v", spec.Network, spec.Env)
			}
		})
	}
}

// TestSealDropsCredentialMounts: a sealed run keeps no credential mount but
// the configuration its CLI declares it needs (Gemini's settings.json); an
// unsealed run keeps them all.
func TestSealDropsCredentialMounts(t *testing.T) {
	a, err := gemini.New()
	if err != nil {
		t.Fatal(err)
	}
	settings := sandbox.Mount{Host: "/srv/creds/gemini-settings.json", Container: gemini.SettingsPath, ReadOnly: true}
	oauth := sandbox.Mount{Host: "/srv/creds/oauth_creds.json", Container: agents.AgentHome + "/.gemini/oauth_creds.json", ReadOnly: true}
	for _, network := range []string{"none", "bridge"} {
		e, _ := sealingEngine(t, namedRunner("image"), "", "gemini", "http://127.0.0.1:1")
		spec := sandbox.Spec{Network: network, Env: map[string]string{}, Credentials: []sandbox.Mount{settings, oauth}}
		s, err := e.seal("run-"+network, Scope{}, a, &spec)
		if err != nil {
			t.Fatal(err)
		}
		want := []sandbox.Mount{settings, oauth}
		if s != nil {
			s.Close()
			want = want[:1]
		}
		if !slices.Equal(spec.Credentials, want) {
			t.Errorf("network %s: credential mounts %v; want %v", network, spec.Credentials, want)
		}
	}
}
