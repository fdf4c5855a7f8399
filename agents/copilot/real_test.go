package copilot

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

// Tests against the real CLI, installed by scripts/agent-clis.sh and found
// through ALFRED_AGENT_CLIS_BIN.

// onMock points Copilot at the mock model: offline, a BYOK provider
// speaking OpenAI chat completions. Every fresh home shares one ~/.cache, so
// that Copilot unpacks its package (~10 s) once per test, not once per run.
func onMock(t *testing.T) func(m *clitest.Mocked) {
	cache := t.TempDir()
	return func(m *clitest.Mocked) {
		maps.Copy(m.Env, map[string]string{"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": m.Mock.URL + "/v1",
			"COPILOT_PROVIDER_API_KEY": "mock-provider-key", "COPILOT_MODEL": "mock-model"})
		m.Runner.Setup = func(home string) error { return os.Symlink(cache, filepath.Join(home, ".cache")) }
		m.Timeout = 3 * time.Minute
	}
}

// TestRealRoundTrip: fresh, resumed (the mock sees the earlier messages),
// and silently fresh again after the state folder was emptied.
func TestRealRoundTrip(t *testing.T) {
	clitest.RoundTrip{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, onMock(t)), ValidID: clitest.UUID}.Check(t)
}

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	clitest.CleanWorktree{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, onMock(t))}.Check(t)
}

// TestRealFreshIDAndLabel checks that a fresh session takes the id the
// adapter chose and the session name as its label, with a prompt that
// starts with dashes and spans lines.
func TestRealFreshIDAndLabel(t *testing.T) {
	m := clitest.Real(t, CLI{}, mockllm.Options{}, onMock(t))
	rec := &recorder{inner: m.Runner.Inner}
	m.Runner.Inner = rec
	state := t.TempDir()
	const name, prompt = "agent/issue-7-fix-login", "--- Say \"ok\".\n-rf"
	res, err := m.Adapter.Run(context.Background(), agents.Request{
		Prompt: prompt, Phase: agents.PhaseDevelopment, Timeout: m.Timeout, Runner: m.Runner,
		Session: &agents.SessionRef{Name: name, HostStateDir: state, FreshReason: agents.FallbackNoPriorSession},
		Sandbox: sandbox.Spec{Workdir: t.TempDir(), Env: m.Env},
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
	reqs := m.Mock.Requests()
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
