package copilot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

// Tests against the real CLI, installed by scripts/agent-clis.sh and found
// through ALFRED_AGENT_CLIS_BIN.

func TestRealVersion(t *testing.T) {
	clitest.RealVersion(t, CLI{}, Executable, "1.0.102")
}

// TestRealMissingSession resumes a random UUID: the real binary's output
// must classify as state_missing (no credentials needed: the lookup comes
// before authentication).
func TestRealMissingSession(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	got, res := clitest.ResumeMissing(t, CLI{}, bin, uuid.NewString(), CLI{}.Descriptor().FixedEnv)
	if got != agents.FallbackStateMissing {
		t.Fatalf("Classify = %q, want state_missing; exit %d stdout %q stderr %q", got, res.ExitCode, res.Stdout, res.Stderr)
	}
}

// byok is the environment that points Copilot at the mock model (offline
// mode, OpenAI chat completions).
func byok(bin string, mock *mockllm.Server) map[string]string {
	return clitest.Env(bin, map[string]string{
		"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": mock.URL + "/v1",
		"COPILOT_PROVIDER_API_KEY": "mock-provider-key", "COPILOT_MODEL": "mock-model",
	})
}

// sharedCache makes every fresh home share one ~/.cache, so that Copilot
// unpacks its package (~10 s) once per test instead of once per run.
func sharedCache(t *testing.T) func(home string) error {
	cache := t.TempDir()
	return func(home string) error { return os.Symlink(cache, filepath.Join(home, ".cache")) }
}

// TestRealRoundTrip: fresh, resumed (the mock sees the earlier messages),
// and silently fresh again after the state folder was emptied.
func TestRealRoundTrip(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	runner := clitest.Host(t)
	runner.Setup = sharedCache(t)
	clitest.RoundTrip{
		Adapter: a, Runner: runner, Mock: mock, Env: byok(bin, mock), Timeout: 3 * time.Minute,
		ValidID: func(id string) error { _, err := uuid.Parse(id); return err },
	}.Check(t)
}

// TestRealFreshIDAndLabel checks that a fresh session takes the id the
// adapter chose and the session name as its label, with a prompt that
// starts with dashes and spans lines.
func TestRealFreshIDAndLabel(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	runner := clitest.Host(t)
	runner.Setup = sharedCache(t)
	rec := &recorder{inner: runner.Inner}
	runner.Inner = rec
	state := t.TempDir()
	const name, prompt = "agent/issue-7-fix-login", "--- Say \"ok\".\n-rf"
	res, err := a.Run(context.Background(), agents.Request{
		Prompt: prompt, Phase: agents.PhaseDevelopment, Timeout: 3 * time.Minute, Runner: runner,
		Session: &agents.SessionRef{Name: name, HostStateDir: state, FreshReason: agents.FallbackNoPriorSession},
		Sandbox: sandbox.Spec{Workdir: t.TempDir(), Env: byok(bin, mock)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeSucceeded {
		t.Fatalf("result %+v\nstdout %s\nstderr %s", res, res.Stdout, res.Stderr)
	}
	chosen := ""
	for _, arg := range rec.argv {
		if id, ok := strings.CutPrefix(arg, "--session-id="); ok {
			chosen = id
		}
	}
	if chosen == "" || res.NativeSessionID != chosen {
		t.Fatalf("native id %q, want the --session-id the adapter chose (argv %q)", res.NativeSessionID, rec.argv)
	}
	yaml, err := os.ReadFile(filepath.Join(state, chosen, "workspace.yaml"))
	if err != nil {
		t.Fatalf("no session in the state folder: %v", err)
	}
	if !strings.Contains(string(yaml), "name: "+name) {
		t.Fatalf("the session is not labelled %q:\n%s", name, yaml)
	}
	reqs := mock.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].LastUserText, "\n\n"+prompt) {
		t.Fatalf("the mock did not get the prompt verbatim: %+v", reqs)
	}
}

// recorder keeps the argv of the last run.
type recorder struct {
	inner sandbox.Runner
	argv  []string
}

func (r *recorder) Name() string { return r.inner.Name() }

func (r *recorder) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	r.argv = spec.Argv
	return r.inner.Run(ctx, spec)
}
