package bot

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/codex"
	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/agents/grok"
	"github.com/alchemic-studio/alfred/agents/opencode"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/gateway"
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

// TestSealDropsCredentialMounts: a sealed run keeps no credential mount
// (its CLI's configuration comes from its adapter, bot/run's homeFiles); an
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
			want = nil
		}
		if !slices.Equal(spec.Credentials, want) {
			t.Errorf("network %s: credential mounts %v; want %v", network, spec.Credentials, want)
		}
	}
}

// sealedAs is an adapter that declares the descriptor of a real CLI, so
// that the seal takes it for that CLI; its Run is the fake's, which a run
// refused by the seal never reaches.
type sealedAs struct {
	agents.Adapter
	desc   agents.Descriptor
	called *atomic.Int32
}

func (s sealedAs) Descriptor() agents.Descriptor { return s.desc }
func (s sealedAs) ID() string                    { return s.desc.ID }

func (s sealedAs) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	s.called.Add(1)
	return s.Adapter.Run(ctx, req)
}

// TestMissingCredentialSaidInTheThread: with the gateway on and no
// credential for a CLI's provider (Anthropic served without a key at its
// real address, as when nothing is offered), a run of each of the six CLIs
// starts no agent: it fails with the sentence that names the credential to
// offer and how, and the thread says it.
func TestMissingCredentialSaidInTheThread(t *testing.T) {
	t.Parallel()
	for _, mk := range []func() (*agents.Local, error){claudecode.New, codex.New, opencode.New, copilot.New, gemini.New, grok.New} {
		l, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		desc := l.Descriptor()
		t.Run(desc.ID, func(t *testing.T) {
			t.Parallel()
			var called atomic.Int32
			h := newHarness(t, func(s *setup) {
				s.wrap = func(a agents.Adapter) agents.Adapter { return sealedAs{a, desc, &called} }
				s.settings = append(s.settings, projectSetting("LLM_MAX_RETRIES", "0"))
			})
			keyless, _ := gateway.ProviderNamed(gateway.NameAnthropic, "", "")
			g, _ := testGateway(t, keyless)
			h.engine.Close()
			cfg := h.engine.cfg
			cfg.Seal = &botrun.Seal{Gateway: g}
			h.startWith(cfg)
			h.assign(7)
			mb := h.waitStatus(7, lifecycle.StatusBlocked)
			why := desc.Sealed.Missing(g.Served())
			if why == "" || !strings.Contains(why, "offer ") {
				t.Fatalf("Missing says %q", why)
			}
			runs := mustRuns(t, h.store, mb.ID)
			if len(runs) != 1 || !strings.Contains(runs[0].Outcome, desc.ID+" cannot run sealed: "+why) {
				t.Fatalf("runs %+v; want one whose outcome says %q", runs, why)
			}
			if n := called.Load(); n != 0 {
				t.Errorf("the agent was called %d times", n)
			}
			if body := h.commentOf(7, lifecycle.KindBlocked); !strings.Contains(body, why) {
				t.Errorf("blocked comment lacks %q:\n%s", why, body)
			}
			t.Logf("%s: %s", desc.ID, runs[0].Outcome)
		})
	}
}
