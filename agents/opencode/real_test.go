package opencode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/sandbox"
)

// Tests against the real CLI, installed by scripts/agent-clis.sh and found
// through ALFRED_AGENT_CLIS_BIN.

func TestRealVersion(t *testing.T) {
	clitest.RealVersion(t, CLI{}, Executable, "1.18.33")
}

// TestRealMissingSession resumes an id that does not exist: the real binary's
// output must classify as state_missing (no provider needed: the lookup comes
// first).
func TestRealMissingSession(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	got, res := clitest.ResumeMissing(t, CLI{}, bin, "ses_dd51e5029ffe6f5YB4sQK1Krzz", offered(nil))
	if got != agents.FallbackStateMissing {
		t.Fatalf("Classify = %q, want state_missing; exit %d stdout %q stderr %q", got, res.ExitCode, res.Stdout, res.Stderr)
	}
	if out := (CLI{}).Parse(res); out.Succeeded {
		t.Fatalf("resume of a missing session parsed as a success: %+v", out)
	}
}

// offered is the environment the engine would offer, with the adapter's
// fixed variables (ResumeMissing runs the argv without the flow).
func offered(extra map[string]string) map[string]string {
	env := map[string]string{"OPENCODE_DISABLE_MODELS_FETCH": "1"}
	for k, v := range (CLI{}).Descriptor().FixedEnv {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// mockConfig is an OpenCode configuration with one OpenAI-compatible
// provider, "mock", served by the mock model server.
func mockConfig(url string) string {
	return `{"provider":{"mock":{"npm":"@ai-sdk/openai-compatible","name":"Mock","options":{"baseURL":"` + url +
		`/v1","apiKey":"mock-key"},"models":{"m":{"name":"m"}}}},"model":"mock/m"}`
}

// TestRealRoundTrip: fresh, resumed (the mock sees the earlier messages),
// and silently fresh again after the state folder was emptied.
func TestRealRoundTrip(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	clitest.RoundTrip{
		Adapter: a, Runner: clitest.Host(t), Mock: mock, Timeout: 3 * time.Minute,
		Env: clitest.Env(bin, offered(map[string]string{"OPENCODE_CONFIG_CONTENT": mockConfig(mock.URL)})),
		ValidID: func(id string) error {
			if !strings.HasPrefix(id, "ses_") {
				return os.ErrInvalid
			}
			return nil
		},
	}.Check(t)
}

// TestRealNoSessionAndVerbatimPrompt runs without a session reference (no
// mount: the relocated database folder must still be usable) with a prompt
// that argv would not carry verbatim, and checks where the database went.
func TestRealNoSessionAndVerbatimPrompt(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	runner := clitest.Host(t)
	var db bool
	runner.Inner = inspect{inner: runner.Inner, after: func() {
		_, err := os.Stat(filepath.Join(runner.Home, ".local", "state", "opencode", "opencode.db"))
		db = err == nil
	}}
	const prompt = "--- Say \"ok\".\n-rf"
	res, err := a.Run(context.Background(), agents.Request{
		Prompt: prompt, Phase: agents.PhaseAnswer, Timeout: 3 * time.Minute, Runner: runner,
		Sandbox: sandbox.Spec{Workdir: t.TempDir(), Env: clitest.Env(bin, offered(map[string]string{"OPENCODE_CONFIG_CONTENT": mockConfig(mock.URL)}))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeSucceeded || res.Text != "ok" || res.NativeSessionID != "" || res.Resumed || res.ResumeFallback != "" {
		t.Fatalf("result %+v\nstdout %s\nstderr %s", res, res.Stdout, res.Stderr)
	}
	reqs := mock.Requests()
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
