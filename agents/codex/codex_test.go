package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

func TestGoldenArgv(t *testing.T) {
	const id = "01a22ae1-0511-7ef3-bd9e-4e143102ad95"
	golden := map[string]any{"verified_range": VerifiedRange, "session_state_path": SessionStatePath}
	for _, phase := range []agents.Phase{agents.PhaseDevelopment, agents.PhaseAnalysis} {
		for _, mode := range []agents.Mode{agents.ModeNone, agents.ModeFresh, agents.ModeResume} {
			inv := agents.Invocation{Mode: mode, Prompt: "Fix the bug.\n-- full context --", Phase: phase, Model: "gpt-5-codex"}
			if mode == agents.ModeResume {
				inv.SessionID = id
			}
			if mode != agents.ModeNone {
				inv.SessionName = "agent/issue-7-add-a-name"
			}
			golden[string(phase)+"/"+string(mode)] = CLI{}.Argv(inv)
		}
	}
	clitest.GoldenJSON(t, filepath.Join("testdata", "golden", "argv.json"), golden)
}

func TestNoCallerChosenID(t *testing.T) {
	if id := (CLI{}).Descriptor().NewSessionID(); id != "" {
		t.Fatalf("NewSessionID() = %q, want empty: codex exec cannot take an id", id)
	}
}

func TestParseRecorded(t *testing.T) {
	const thread = "01a22ae1-0511-7ef3-bd9e-4e143102ad95"
	tests := []struct {
		name      string
		succeeded bool
		id        string
		text      string
		in, out   int64
	}{
		{"fresh", true, thread, "ok", 10, 1},
		{"resume", true, thread, "ok", 30, 3},
		{"resume-missing", false, "", "Error: thread/resume: thread/resume failed: no rollout found for thread id 01a22ae1-0511-7ef3-bd9e-000000000000 (code -32600)", 0, 0},
		{"resume-no-key", false, thread, "Missing environment variable: `MOCK_KEY`.", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := CLI{}.Parse(clitest.Recorded(t, "testdata", tt.name))
			if out.Succeeded != tt.succeeded || out.NativeSessionID != tt.id || out.Text != tt.text ||
				out.InputTokens != tt.in || out.OutputTokens != tt.out {
				t.Fatalf("Parse = %+v, want succeeded=%v id=%q text=%q tokens %d/%d", out, tt.succeeded, tt.id, tt.text, tt.in, tt.out)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	recorded := map[string]agents.FallbackReason{
		"resume-missing": agents.FallbackStateMissing,
		"resume-no-key":  agents.FallbackNone,
	}
	for name, want := range recorded {
		if got := (CLI{}).Classify(clitest.Recorded(t, "testdata", name)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", name, got, want)
		}
	}
	// Messages quoted in agents-cli-facts.md.
	facts := []struct {
		rc             int
		stdout, stderr string
		want           agents.FallbackReason
	}{
		{1, "", "Error: thread/resume: thread/resume failed: no rollout found for thread id 0199a213-81c0-7800-8aa1-bbab2a035a53\n", agents.FallbackStateMissing},
		{1, `{"type":"thread.started","thread_id":"x"}` + "\n" + `{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: invalid x-api-key, url: http://127.0.0.1:1/v1/responses"}}`, "", agents.FallbackNone},
		{124, `{"type":"thread.started","thread_id":"x"}` + "\n" + `{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}`, "", agents.FallbackNone},
		{1, "", "Reading prompt from stdin...\nNo prompt provided via stdin.\n", agents.FallbackNone},
	}
	for _, f := range facts {
		if got := (CLI{}).Classify(clitest.Result(f.rc, f.stdout, f.stderr)); got != f.want {
			t.Errorf("Classify(rc=%d stdout=%q stderr=%q) = %q, want %q", f.rc, f.stdout, f.stderr, got, f.want)
		}
	}
}

func TestRealVersion(t *testing.T) {
	clitest.RealVersion(t, CLI{}, Executable, "0.171.0")
}

// writeConfig points codex at the mock, as a mounted config.toml would.
func writeConfig(home, url string) error {
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`model_provider = "mock"
model = "mock-model"

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
`, url)
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestRealRoundTrip(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	mock := mockllm.Start(mockllm.Options{Reply: "ok"})
	defer mock.Close()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	// The home starts empty on every run, as the container's tmpfs does: the
	// SQLite indexes codex keeps in CODEX_HOME are gone at each run, and only
	// the rollout files in the mounted state folder carry the session.
	runner := clitest.Host(t)
	runner.Setup = func(home string) error { return writeConfig(home, mock.URL) }
	clitest.RoundTrip{
		Adapter: a,
		Runner:  runner,
		Mock:    mock,
		Phase:   agents.PhaseDevelopment,
		Env:     clitest.Env(bin, map[string]string{"OPENAI_API_KEY": "sk-test"}),
		ValidID: func(s string) error {
			if !uuidRE.MatchString(s) {
				return fmt.Errorf("not a UUID")
			}
			return nil
		},
	}.Check(t)
}

func TestRealResumeMissingIsStateMissing(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	// A UUID v7 like codex's own thread ids; no credentials: the lookup comes first.
	got, res := clitest.ResumeMissing(t, CLI{}, bin, "01a22ae1-0511-7ef3-bd9e-000000000001", nil)
	if got != agents.FallbackStateMissing || (CLI{}).Parse(res).Succeeded {
		t.Fatalf("Classify = %q, want state_missing\nrc %d stdout %s\nstderr %s", got, res.ExitCode, res.Stdout, res.Stderr)
	}
}
