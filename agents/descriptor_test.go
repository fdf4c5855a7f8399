package agents

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/gateway"
)

func TestDescriptorDefaults(t *testing.T) {
	d := Descriptor{ID: "x", Executable: "xcli", VerifiedRange: ">=1.0.0"}
	if got := d.versionArgv(); !slices.Equal(got, []string{"xcli", "--version"}) {
		t.Errorf("default version argv = %q", got)
	}
	if v, err := d.ParseVersion([]byte("xcli 1.2.3\n"), []byte("9.9.9")); err != nil || v.String() != "1.2.3" {
		t.Errorf("default ParseVersion = %v, %v; want 1.2.3 from stdout", v, err)
	}
	if id := d.NewSessionID(); id != "" {
		t.Errorf("NewSessionID without TakesSessionID = %q, want empty", id)
	}
	if c := d.Capabilities(); c.Kind != KindLocal || c.ResumableSessions || c.SessionStatePath != "" {
		t.Errorf("Capabilities = %+v, want local and not resumable", c)
	}

	d.VersionArgv = []string{"xcli", "version"}
	d.VersionParser = func(_, stderr []byte) (*semver.Version, error) { return FindVersion(stderr) }
	d.TakesSessionID = true
	d.SessionStatePath = AgentHome + "/.x"
	if got := d.versionArgv(); !slices.Equal(got, d.VersionArgv) {
		t.Errorf("version argv = %q, want VersionArgv", got)
	}
	if v, err := d.ParseVersion([]byte("1.2.3"), []byte("9.9.9")); err != nil || v.String() != "9.9.9" {
		t.Errorf("ParseVersion with a parser = %v, %v; want 9.9.9 from stderr", v, err)
	}
	a, b := d.NewSessionID(), d.NewSessionID()
	if _, err := uuid.Parse(a); err != nil || a == b {
		t.Errorf("NewSessionID = %q, %q: want two random UUIDs", a, b)
	}
	if c := d.Capabilities(); !c.ResumableSessions || c.SessionStatePath != AgentHome+"/.x" {
		t.Errorf("Capabilities = %+v, want resumable at %s/.x", c, AgentHome)
	}
	if _, err := (Descriptor{ID: "x", Executable: "xcli"}).ParseVersion([]byte("none"), nil); !errors.Is(err, ErrNoVersion) {
		t.Errorf("ParseVersion(no version) error = %v, want ErrNoVersion", err)
	}
}

func TestDescriptorValidate(t *testing.T) {
	ok := Descriptor{ID: "x", Executable: "xcli", VerifiedRange: ">=1.0.0"}
	for name, tt := range map[string]struct {
		edit func(*Descriptor)
		want string // "" means valid
	}{
		"valid":                {func(*Descriptor) {}, ""},
		"no id":                {func(d *Descriptor) { d.ID = "" }, "no adapter id"},
		"no executable":        {func(d *Descriptor) { d.Executable = "" }, "no executable"},
		"version argv instead": {func(d *Descriptor) { d.Executable, d.VersionArgv = "", []string{"x", "-V"} }, ""},
		"bad range":            {func(d *Descriptor) { d.VerifiedRange = "not a range" }, "verified range"},
		"state outside home":   {func(d *Descriptor) { d.SessionStatePath = "/root/.x" }, AgentHome},
		"bad worktree pattern": {func(d *Descriptor) { d.WorktreeFiles = []string{"!x"} }, "plain exclude line"},
		"sealed":               {func(d *Descriptor) { d.Sealed = sealedX() }, ""},
		"takeover": {func(d *Descriptor) {
			d.SessionStatePath, d.Takeover = AgentHome+"/.x", &Takeover{Argv: []string{"xcli", "--resume=" + TakeoverID}}
		}, ""},
		"takeover without sessions": {func(d *Descriptor) { d.Takeover = &Takeover{Argv: []string{"xcli", TakeoverID}} }, "session state path"},
		"takeover adopts no folder": {func(d *Descriptor) {
			d.SessionStatePath, d.Takeover = AgentHome+"/.x", &Takeover{Argv: []string{"xcli", TakeoverID}, Adopt: "true"}
		}, "PerDirectory"},
		"takeover without the id": {func(d *Descriptor) {
			d.SessionStatePath, d.Takeover = AgentHome+"/.x", &Takeover{Argv: []string{"xcli", "--continue"}}
		}, "must name the session"},
		"sealed, no key var":       {func(d *Descriptor) { d.Sealed = sealedX(); d.Sealed.KeyVar = "" }, "KeyVar"},
		"sealed, no such provider": {func(d *Descriptor) { d.Sealed = sealedX(); d.Sealed.Provider = "bedrock" }, "catalogue"},
		"sealed sets a variable the CLI never receives": {
			func(d *Descriptor) { d.Sealed = sealedX(); d.Sealed.Set = map[string]string{"X_OFFLINE": "1"} }, "X_OFFLINE"},
		"sealed, an unknown token prefix":   {func(d *Descriptor) { d.Sealed = sealedX(); d.Sealed.TokenPrefix = "ghp_" }, "TokenPrefixes"},
		"sealed as a proxy, no CA variable": {func(d *Descriptor) { d.Sealed = sealedX(); d.Sealed.Proxy = true }, "CAVar"},
		"a preferred way":                   {func(d *Descriptor) { d.Sealed = sealedX(); d.Sealed.Preferred = signInX() }, ""},
		"a preferred way of its own": {func(d *Descriptor) {
			d.Sealed = sealedX()
			d.Sealed.Preferred = signInX()
			d.Sealed.Preferred.Preferred = sealedX()
		}, "no Preferred of its own"},
		"a preferred way that is wrong": {func(d *Descriptor) {
			d.Sealed = sealedX()
			d.Sealed.Preferred = signInX()
			d.Sealed.Preferred.CAVar = ""
		}, "preferred: sealed: a Proxy needs CAVar"},
		"sealed sets an allowed variable": {
			func(d *Descriptor) {
				d.Sealed, d.EnvAllowlist = sealedX(), []string{"X_OFFLINE"}
				d.Sealed.Set = map[string]string{"X_OFFLINE": "1"}
			}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			d := ok
			tt.edit(&d)
			err := d.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// sealedX is how a CLI "x" runs sealed: X_BASE_URL and X_API_KEY.
func sealedX() *Sealed {
	return &Sealed{Provider: "openai", BaseURLVar: "X_BASE_URL", BaseURLPath: "/v1", KeyVar: "X_API_KEY",
		Credentials: []string{"X_BASE_URL", "X_API_KEY", "X_ORG_TOKEN"}}
}

// signInX is how "x" runs sealed signed in: the gateway as its HTTPS
// proxy, X_TOKEN the run's token behind github_pat_.
func signInX() *Sealed {
	return &Sealed{Provider: gateway.NameCopilot, Proxy: true, BaseURLVar: "HTTPS_PROXY", CAVar: "NODE_EXTRA_CA_CERTS",
		KeyVar: "X_BASE_URL", TokenPrefix: gateway.GitHubTokenPrefix, Credentials: []string{"X_BASE_URL", "X_API_KEY", "X_ORG_TOKEN"}}
}

// TestSealedPreferred: the preferred way is taken when its provider is
// served with a key, whatever else is; the other when only its own is;
// Missing names both when neither is. A proxy's environment has the
// forwarder as its proxy with the token as password, the CA's place in
// the container, and the token behind its prefix.
func TestSealedPreferred(t *testing.T) {
	openAI, _ := gateway.ProviderNamed(gateway.NameOpenAI, "", "sk-1")
	gitHub, _ := gateway.ProviderNamed(gateway.NameCopilot, "", "github_pat_real")
	s := sealedX()
	s.Note = "BYOK"
	s.Preferred = signInX()
	for _, tc := range []struct {
		name    string
		served  []gateway.Provider
		want    string // the provider taken
		missing string
	}{
		{"both", []gateway.Provider{openAI, gitHub}, gateway.NameCopilot, ""},
		{"the sign-in only", []gateway.Provider{gitHub}, gateway.NameCopilot, ""},
		{"an OpenAI key only", []gateway.Provider{openAI}, gateway.NameOpenAI, ""},
		{"neither", nil, gateway.NameOpenAI, "the gateway holds no github-copilot credential: offer COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN in ALFRED_AGENT_ENV; " +
			"or the gateway holds no openai credential: offer OPENAI_API_KEY or CODEX_API_KEY in ALFRED_AGENT_ENV (BYOK)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.For(tc.served).Provider; got != tc.want {
				t.Errorf("For = %s, want %s", got, tc.want)
			}
			if got := s.Missing(tc.served); got != tc.missing {
				t.Errorf("Missing = %q, want %q", got, tc.missing)
			}
		})
	}
	if got := s.Providers(); !slices.Equal(got, []string{gateway.NameCopilot, gateway.NameOpenAI}) {
		t.Errorf("Providers = %v", got)
	}
	if s.Calling(gateway.NameOpenAI) != s || s.Calling(gateway.NameCopilot) != s.Preferred || s.Calling(gateway.NameGemini) != nil || s.Calling("") != nil {
		t.Error("Calling does not find the way that calls each provider")
	}
	p := s.Preferred
	env := p.Environment(map[string]string{"HOME": "/h", "X_API_KEY": "sk-real"}, p.BaseURL(47080), "alfred-run-tok")
	want := map[string]string{"HOME": "/h", "HTTPS_PROXY": "http://agent:alfred-run-tok@127.0.0.1:47080",
		"NODE_EXTRA_CA_CERTS": gateway.ContainerCA, "X_BASE_URL": "github_pat_alfred-run-tok"}
	if !maps.Equal(env, want) {
		t.Errorf("the proxy's environment %v, want %v", env, want)
	}
}

// TestSealedEnvironment: a sealed run's environment is the offer without
// the credentials, plus the base URL, the token and Set; the CLI receives
// the credentials when not sealed.
func TestSealedEnvironment(t *testing.T) {
	s := sealedX()
	s.Set = map[string]string{"X_OFFLINE": "1"}
	offered := map[string]string{"HOME": "/h", "X_API_KEY": "sk-real", "X_ORG_TOKEN": "org-secret", "X_BASE_URL": "https://api"}
	got := s.Environment(offered, s.BaseURL(47080), "tok")
	want := map[string]string{"HOME": "/h", "X_BASE_URL": "http://127.0.0.1:47080/openai/v1", "X_API_KEY": "tok", "X_OFFLINE": "1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Environment = %v\nwant %v", got, want)
	}
	if len(offered) != 4 || offered["X_API_KEY"] != "sk-real" {
		t.Errorf("Environment changed the offer: %v", offered)
	}
	d := Descriptor{ID: "x", Executable: "x", VerifiedRange: ">=1", Sealed: s}
	if env := d.env(offered); env["X_API_KEY"] != "sk-real" || env["X_ORG_TOKEN"] != "org-secret" {
		t.Errorf("not sealed, the CLI gets %v: want its credentials", env)
	}
}

// TestSealedMissing: a sealed CLI misses nothing when its provider is
// served with a key, or without one at an address of its own; else the
// sentence names every variable its key may come from, and the CLI's note.
func TestSealedMissing(t *testing.T) {
	withKey, _ := gateway.ProviderNamed(gateway.NameOpenAI, "", "sk-1")
	keyless, _ := gateway.ProviderNamed(gateway.NameAnthropic, "", "")
	local, _ := gateway.ProviderNamed(gateway.NameAnthropic, "http://127.0.0.1:9", "")
	const anthropic = "the gateway holds no anthropic credential: offer ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN in ALFRED_AGENT_ENV"
	for _, tc := range []struct {
		name     string
		provider string
		note     string
		served   []gateway.Provider
		want     string
	}{
		{"served with a key", gateway.NameOpenAI, "", []gateway.Provider{withKey}, ""},
		{"a local model that takes none", gateway.NameAnthropic, "", []gateway.Provider{local}, ""},
		{"keyless at the real address", gateway.NameAnthropic, "", []gateway.Provider{keyless, withKey}, anthropic},
		{"not served", gateway.NameAnthropic, "", nil, anthropic},
		{"with the CLI's note", gateway.NameOpenAI, "a note", []gateway.Provider{keyless},
			"the gateway holds no openai credential: offer OPENAI_API_KEY or CODEX_API_KEY in ALFRED_AGENT_ENV (a note)"},
		{"outside the catalogue", "nowhere", "", nil, "its provider nowhere is not in the gateway's catalogue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sealed{Provider: tc.provider, Note: tc.note}
			if got := s.Missing(tc.served); got != tc.want {
				t.Errorf("Missing = %q, want %q", got, tc.want)
			}
		})
	}
}
