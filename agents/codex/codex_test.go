package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestGoldenArgv(t *testing.T) {
	clitest.ArgvByPhase(t, CLI{}, "gpt-5-codex", "01a22ae1-0511-7ef3-bd9e-4e143102ad95")
}

func TestParseRecorded(t *testing.T) {
	const thread = "01a22ae1-0511-7ef3-bd9e-4e143102ad95"
	rec := func(name string) *sandbox.Result { return clitest.Recorded(t, "testdata", name) }
	clitest.CheckParse(t, CLI{}, []clitest.Parsed{
		{Name: "fresh", Res: rec("fresh"), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: thread, InputTokens: 10, OutputTokens: 1}},
		{Name: "resume", Res: rec("resume"), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: thread, InputTokens: 30, OutputTokens: 3}},
		{Name: "resume-missing", Res: rec("resume-missing"), Want: agents.Output{Text: "Error: thread/resume: thread/resume failed: no rollout found for thread id 01a22ae1-0511-7ef3-bd9e-000000000000 (code -32600)"}},
		{Name: "resume-no-key", Res: rec("resume-no-key"), Want: agents.Output{Text: "Missing environment variable: `MOCK_KEY`.", NativeSessionID: thread}},
	})
}

// TestClassify: outputs recorded from 0.171.0 (testdata/) and messages
// quoted in agents-cli-facts.md.
func TestClassify(t *testing.T) {
	rec := func(name string) *sandbox.Result { return clitest.Recorded(t, "testdata", name) }
	started := `{"type":"thread.started","thread_id":"x"}` + "\n"
	clitest.CheckClassify(t, CLI{}, []clitest.Classified{
		{Name: "resume-missing", Res: rec("resume-missing"), Want: agents.FallbackStateMissing},
		{Name: "resume-no-key", Res: rec("resume-no-key"), Want: agents.FallbackNone},
		{Name: "no rollout, 0.117", Res: clitest.Result(1, "", "Error: thread/resume: thread/resume failed: no rollout found for thread id 0199a213-81c0-7800-8aa1-bbab2a035a53\n"), Want: agents.FallbackStateMissing},
		{Name: "API 401", Res: clitest.Result(1, started+`{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: invalid x-api-key, url: http://127.0.0.1:1/v1/responses"}}`, ""), Want: agents.FallbackNone},
		{Name: "reconnecting", Res: clitest.Result(124, started+`{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}`, ""), Want: agents.FallbackNone},
		{Name: "no prompt", Res: clitest.Result(1, "", "Reading prompt from stdin...\nNo prompt provided via stdin.\n"), Want: agents.FallbackNone},
	})
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

// onMock points codex at the mock model, as a mounted config.toml would.
// The home starts empty on every run, as the container's tmpfs does: the
// SQLite indexes codex keeps in CODEX_HOME are gone at each run, and only
// the rollout files in the mounted state folder carry the session.
func onMock(m *clitest.Mocked) {
	m.Runner.Setup = func(home string) error { return writeConfig(home, m.Mock.URL) }
	m.Env["OPENAI_API_KEY"] = "sk-test"
}

func TestRealRoundTrip(t *testing.T) {
	m := clitest.Real(t, CLI{}, mockllm.Options{}, onMock)
	clitest.RoundTrip{Mocked: m, Phase: agents.PhaseDevelopment, ValidID: clitest.UUID}.Check(t)
}

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	clitest.CleanWorktree{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, onMock)}.Check(t)
}

// TestArgvBaseURL: codex reads no OPENAI_BASE_URL, so argv gives it as a
// provider of its own, before `resume`, keyed by OPENAI_API_KEY, over HTTP.
func TestArgvBaseURL(t *testing.T) {
	const url = "http://127.0.0.1:47080/openai/v1"
	flags := []string{
		"-c", `model_providers.openai-base-url={name="OPENAI_BASE_URL",base_url="` + url + `",env_key="OPENAI_API_KEY",wire_api="responses",supports_websockets=false}`,
		"-c", `model_provider="openai-base-url"`,
	}
	tests := []struct {
		name string
		inv  agents.Invocation
		want []string
	}{
		{"none", agents.Invocation{Phase: agents.PhaseDevelopment},
			slices.Concat([]string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}, flags, []string{"-"})},
		{"resume", agents.Invocation{Mode: agents.ModeResume, SessionID: "t1", Phase: agents.PhaseAnalysis},
			slices.Concat([]string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only"}, flags, []string{"resume", "t1", "-"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.inv.Env = map[string]string{"OPENAI_BASE_URL": url}
			if got := (CLI{}).Argv(tc.inv); !slices.Equal(got, tc.want) {
				t.Errorf("argv\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
