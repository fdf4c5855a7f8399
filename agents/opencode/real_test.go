package opencode

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

// onMock points OpenCode at the mock model: one OpenAI-compatible provider,
// "mock" (OPENCODE_CONFIG_CONTENT), and no models.dev.
func onMock(m *clitest.Mocked) {
	maps.Copy(m.Env, map[string]string{"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_CONFIG_CONTENT": `{"provider":{"mock":{` +
		`"npm":"@ai-sdk/openai-compatible","name":"Mock","options":{"baseURL":"` + m.Mock.URL + `/v1","apiKey":"mock-key"},` +
		`"models":{"m":{"name":"m"}}}},"model":"mock/m"}`})
	m.Timeout = 3 * time.Minute
}

// TestRealRoundTrip: fresh, resumed (the mock sees the earlier messages),
// and silently fresh again after the state folder was emptied.
func TestRealRoundTrip(t *testing.T) {
	clitest.RoundTrip{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, onMock), ValidID: func(id string) error {
		if !strings.HasPrefix(id, "ses_") {
			return os.ErrInvalid
		}
		return nil
	}}.Check(t)
}

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	clitest.CleanWorktree{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, onMock)}.Check(t)
}

// TestRealNoSessionAndVerbatimPrompt runs without a session reference (no
// mount: the relocated database folder must still be usable) with a prompt
// that argv would not carry verbatim, and checks where the database went.
func TestRealNoSessionAndVerbatimPrompt(t *testing.T) {
	m := clitest.Real(t, CLI{}, mockllm.Options{}, onMock)
	var db bool
	m.Runner.Inner = inspect{inner: m.Runner.Inner, after: func() {
		_, err := os.Stat(filepath.Join(m.Runner.Home, ".local", "state", "opencode", "opencode.db"))
		db = err == nil
	}}
	const prompt = "--- Say \"ok\".\n-rf"
	res, err := m.Adapter.Run(context.Background(), agents.Request{
		Prompt: prompt, Phase: agents.PhaseAnswer, Timeout: m.Timeout, Runner: m.Runner,
		Sandbox: sandbox.Spec{Workdir: t.TempDir(), Env: m.Env},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeSucceeded || res.Text != "ok" || res.NativeSessionID != "" || res.Resumed || res.ResumeFallback != "" {
		t.Fatalf("result %+v\nstdout %s\nstderr %s", res, res.Stdout, res.Stderr)
	}
	reqs := m.Mock.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].LastUserText != prompt {
		t.Fatalf("the mock did not get the prompt verbatim: %+v", reqs)
	}
	if !db {
		t.Fatalf("no database at ~/.local/state/opencode/opencode.db: OPENCODE_DB=%s did not apply", DBEnv)
	}
}

// inspect calls after once the inner run is over, before the next run
// empties the home.
type inspect struct {
	inner sandbox.Runner
	after func()
}

func (i inspect) Name() string { return i.inner.Name() }

func (i inspect) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	res, err := i.inner.Run(ctx, spec)
	i.after()
	return res, err
}
