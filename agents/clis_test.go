package agents_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/codex"
	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/agents/grok"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/opencode"
	"github.com/alchemic-studio/alfred/gateway"
)

// The tests every local CLI goes through, one row a CLI: its descriptor,
// and, with the real binaries (ALFRED_AGENT_CLIS_BIN), its version, a
// missing session, and a sealed run. Each CLI's package tests what only it
// does (argv, parsing, classifying, its round trip).

// cli is one local CLI, with what the shared tests need to know of it.
type cli struct {
	agents.CLI
	new func() (*agents.Local, error)
	// version is the first line its version command prints; pinned is the
	// version in it, the one scripts/agent-clis.sh installs; previous is the
	// one scripts/agent-clis.sh --previous installs, "" for none.
	version, pinned, previous string
	// missing is a session id in the CLI's format that does not exist; ""
	// for a CLI that never resumes.
	missing string
	// provider and model name the model of a sealed run; setup is what a
	// mount brings into its home, env what else is offered to it.
	provider, model string
	setup           func(home string) error
	env             map[string]string
}

var clis = []cli{
	{CLI: claudecode.CLI{}, new: claudecode.New, version: "2.1.332 (Claude Code)", pinned: "2.1.332", previous: "2.1.197",
		missing: uuid.NewString(), provider: "anthropic", model: "claude-sonnet-4-5"},
	{CLI: codex.CLI{}, new: codex.New, version: "codex-cli 0.171.0", pinned: "0.171.0",
		missing: "01a22ae1-0511-7ef3-bd9e-000000000001", provider: "openai", model: "gpt-5"},
	{CLI: opencode.CLI{}, new: opencode.New, version: "1.18.33", pinned: "1.18.33", missing: "ses_dd51e5029ffe6f5YB4sQK1Krzz",
		provider: "openai", model: "gpt-5", env: map[string]string{"OPENCODE_DISABLE_MODELS_FETCH": "1"}},
	{CLI: copilot.CLI{}, new: copilot.New, version: "GitHub Copilot CLI 1.0.102.", pinned: "1.0.102",
		missing: uuid.NewString(), provider: "openai", model: "gpt-5"},
	{CLI: gemini.CLI{}, new: gemini.New, version: "0.61.0", pinned: "0.61.0", missing: uuid.NewString(),
		provider: "gemini", model: "gemini-2.5-flash", setup: clitest.HomeFile(".gemini/settings.json", gemini.CLI{}.HomeFiles(map[string]string{"GEMINI_API_KEY": "k"})[gemini.SettingsPath])},
	{CLI: grok.CLI{}, new: grok.New, version: "1.0.1", pinned: "1.0.1", provider: "xai", model: "grok-code-fast-1"},
}

// TestDescriptors: each CLI's adapter is built from its descriptor; a fresh
// session gets a random UUID exactly when the CLI takes one; the version
// parser reads the pinned version, inside the verified range; the CLI runs
// sealed behind a provider of the gateway, its credentials withheld.
func TestDescriptors(t *testing.T) {
	for _, c := range clis {
		d := c.Descriptor()
		t.Run(d.ID, func(t *testing.T) {
			a, err := c.new()
			if err != nil {
				t.Fatal(err)
			}
			if a.ID() != d.ID || a.Descriptor().Executable != d.Executable || !sameCaps(a.Capabilities(), d.Capabilities()) {
				t.Errorf("adapter %s %+v, descriptor %s %+v", a.ID(), a.Capabilities(), d.ID, d.Capabilities())
			}
			x, y := d.NewSessionID(), d.NewSessionID()
			if _, err := uuid.Parse(x); d.TakesSessionID != (err == nil && x != y) || (!d.TakesSessionID && x != "") {
				t.Errorf("NewSessionID = %q, %q with TakesSessionID %v", x, y, d.TakesSessionID)
			}
			v, err := d.ParseVersion([]byte(c.version+"\n"), nil)
			if err != nil || v.String() != c.pinned || !semver.MustParse(c.pinned).Equal(v) || !inRange(t, d.VerifiedRange, v) {
				t.Errorf("ParseVersion(%q) = %v, %v; want %s inside %s", c.version, v, err, c.pinned, d.VerifiedRange)
			}
			checkSealed(t, d)
			if (d.Takeover != nil) != (d.SessionStatePath != "") {
				t.Errorf("takeover %+v with session state path %q: a CLI that resumes says how a person resumes it", d.Takeover, d.SessionStatePath)
			}
		})
	}
}

func sameCaps(a, b agents.Capabilities) bool {
	return a.Kind == b.Kind && a.ResumableSessions == b.ResumableSessions && a.SessionStatePath == b.SessionStatePath &&
		slices.Equal(a.WorktreeFiles, b.WorktreeFiles)
}

func inRange(t *testing.T, rng string, v *semver.Version) bool {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		t.Fatal(err)
	}
	return c.Check(v)
}

// checkSealed: the sealed environment has the token, the base URL, and none
// of the offered credentials.
func checkSealed(t *testing.T, d agents.Descriptor) {
	t.Helper()
	s := d.Sealed
	if s == nil {
		t.Fatal("the CLI does not run sealed")
	}
	if _, ok := gateway.ProviderNamed(s.Provider, "", "k"); !ok {
		t.Fatalf("sealed provider %q is none of the gateway's", s.Provider)
	}
	offered := map[string]string{"HOME": agents.AgentHome}
	for _, k := range s.Credentials {
		offered[k] = "sk-offered-secret"
	}
	env := s.Environment(offered, s.BaseURL(47080), "alfred-run-token")
	if slices.Contains(slices.Collect(maps.Values(env)), "sk-offered-secret") {
		t.Errorf("sealed environment %v keeps an offered credential", env)
	}
	if !slices.Contains(slices.Collect(maps.Values(env)), "alfred-run-token") || env["HOME"] != agents.AgentHome {
		t.Errorf("sealed environment %v: want the token, and the rest of the offer", env)
	}
	if len(offered) != len(s.Credentials)+1 || offered["HOME"] != agents.AgentHome {
		t.Errorf("Environment changed the offer: %v", offered)
	}
}

// TestRealVersion detects each real binary on the host runner, as `alfred
// agents detect` does (clitest.RealVersion), and the previous pin of a CLI
// that has one.
func TestRealVersion(t *testing.T) {
	t.Parallel() // each row runs real binaries: all of them at once
	for _, c := range clis {
		t.Run(c.Descriptor().ID, func(t *testing.T) {
			t.Parallel()
			clitest.RealVersion(t, c.CLI, c.Descriptor().Executable, c.pinned)
		})
		if c.previous == "" {
			continue
		}
		t.Run(c.Descriptor().ID+"/previous", func(t *testing.T) {
			t.Parallel()
			bin := clitest.PreviousBin(t, c.Descriptor().Executable)
			clitest.RealVersionIn(t, bin, c.CLI, c.previous)
		})
	}
}

// TestRealMissingSession resumes an id that does not exist with no
// credentials (every CLI looks the session up first): the real output must
// classify as state_missing, and not parse as a success.
func TestRealMissingSession(t *testing.T) {
	t.Parallel() // each row runs real binaries: all of them at once
	for _, c := range clis {
		if c.missing == "" {
			continue // the CLI never resumes
		}
		t.Run(c.Descriptor().ID, func(t *testing.T) {
			t.Parallel()
			d := c.Descriptor()
			env := maps.Clone(d.FixedEnv)
			if env == nil {
				env = map[string]string{}
			}
			maps.Copy(env, c.env)
			got, res := clitest.ResumeMissing(t, c.CLI, clitest.Bin(t, d.Executable), c.missing, env)
			if got != agents.FallbackStateMissing || c.Parse(res).Succeeded {
				t.Fatalf("Classify = %q, want state_missing\nrc %d stdout %s\nstderr %s", got, res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}

// TestRealSealed runs each real CLI sealed (clitest.Sealed): its answer
// comes through the forwarder and the gateway, which holds the key and
// meters; then again with a prompt injection, whose attempt to send the
// environment out the gateway refuses and records.
func TestRealSealed(t *testing.T) {
	t.Parallel() // each row runs real binaries: all of them at once
	fwd := clitest.Forwarder(t)
	for _, c := range clis {
		t.Run(c.Descriptor().ID, func(t *testing.T) {
			t.Parallel()
			for _, inject := range []bool{false, true} {
				name := map[bool]string{false: "answer", true: "prompt injection"}[inject]
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					clitest.Sealed{CLI: c.CLI, Forwarder: fwd, Provider: c.provider, Model: c.model,
						Setup: c.setup, Env: c.env, Inject: inject}.Check(t)
				})
			}
		})
	}
}

// TestBadOutput: whatever a CLI prints when it breaks (a crash at start,
// malformed or torn JSON lines, nothing at all), Parse says why, never a
// bare "failed" nor raw JSON, and never calls it a success.
func TestBadOutput(t *testing.T) {
	cases := []struct {
		name           string
		rc             int
		stdout, stderr string
	}{
		{"crash at start, nothing printed", 1, "", ""},
		{"killed by a signal", 137, "", ""},
		{"crash at start, a message", 1, "", "Segmentation fault\n"},
		{"malformed lines only", 0, "{\"type\":\"assist\n{\"role\":\n", ""},
		{"a torn last line", 1, "{\"type\":\"x\",\"n\":1}\n{\"type\":\"resu", ""},
		{"text only, exit 0", 0, "something went wrong\n", ""},
	}
	for _, c := range clis {
		t.Run(c.Descriptor().ID, func(t *testing.T) {
			for _, tc := range cases {
				out := c.Parse(clitest.Result(tc.rc, tc.stdout, tc.stderr))
				text := strings.TrimSpace(out.Text)
				if out.Succeeded || text == "" || strings.EqualFold(text, "failed") || strings.HasPrefix(text, "{") {
					t.Errorf("%s: Parse = %+v: want a failure whose text says why", tc.name, out)
				}
			}
		})
	}
}

// TestEveryCLIStreams: every CLI decodes its stdout into steps, and those
// that print as they work report progress (grok prints at its end).
func TestEveryCLIStreams(t *testing.T) {
	for _, c := range clis {
		a, err := c.new()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.CLI.(agents.StreamDecoder); !ok {
			t.Errorf("%s has no stream decoder", a.ID())
		}
		if want := a.ID() != grok.ID; a.ReportsProgress() != want {
			t.Errorf("%s ReportsProgress = %v, want %v", a.ID(), a.ReportsProgress(), want)
		}
	}
}
