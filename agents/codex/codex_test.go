package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		{Name: "fresh-shell", Res: rec("fresh-shell"), Want: agents.Output{Succeeded: true, Text: "All done.", NativeSessionID: "01a241f1-5d83-7ad2-9402-11bbc9aa6fb9", InputTokens: 20, OutputTokens: 2}},
		{Name: "api-401", Res: rec("api-401"), Want: agents.Output{Text: "unexpected status 401 Unauthorized: invalid x-api-key, url: http://127.0.0.1:47812/v1/responses", NativeSessionID: "01a241f1-d80a-7d41-a31d-575486a02d2f"}},
		{Name: "crash at start, only a warning", Res: clitest.Result(134, "", "WARNING: proceeding, even though we could not create PATH aliases\n"), Want: agents.Output{Text: "the CLI exited with code 134 and printed nothing"}},
		{Name: "malformed lines", Res: clitest.Result(0, `{"type":"thread.started","thread_id":"t"}`+"\n{\"type\":\"item.comp\nnot json\n", ""), Want: agents.Output{Text: "not json", NativeSessionID: "t"}},
	})
}

// TestDecodeRecordedStream: the steps of each line of the recorded streams
// (testdata/stream/*.golden.json): the command when it starts, its output
// when it ends, the answer; errors as notes; thread, turn and usage events
// give none.
func TestDecodeRecordedStream(t *testing.T) {
	clitest.CheckStream(t, CLI{}, "testdata", "fresh", "fresh-shell", "resume", "api-401", "resume-no-key")
}

// TestDecodeBadLines: the decoder never fails on what a CLI may print,
// nor on items of shapes exec_events.rs declares that the recordings lack.
func TestDecodeBadLines(t *testing.T) {
	clitest.CheckBadLines(t, CLI{},
		`{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"a.go","kind":"update"}],"status":"completed"}}`,
		`{"type":"item.started","item":{"id":"i","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"x":1},"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"i","type":"mcp_tool_call","server":"s","tool":"t","error":{"message":"boom"},"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"false","exit_code":1,"status":"failed"}}`)
}

// TestDecodeItems: the shapes of exec_events.rs the recordings lack; an
// over-long id and path are clipped.
func TestDecodeItems(t *testing.T) {
	long := strings.Repeat("a", 2*agents.MaxPathBytes)
	tests := []struct {
		line string
		want []agents.Step
	}{
		{`{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"a.go","kind":"update"},{"path":"b.go","kind":"add"}],"status":"completed"}}`,
			[]agents.Step{{Kind: agents.StepEdit, Tool: "apply_patch", CallID: "i", Path: "a.go"}, {Kind: agents.StepEdit, Tool: "apply_patch", CallID: "i", Path: "b.go"}}},
		{`{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}`,
			[]agents.Step{{Kind: agents.StepToolResult, Tool: "shell", CallID: "i", Text: "exit code 1", Failed: true}}},
		{`{"type":"item.started","item":{"id":"i","type":"mcp_tool_call","server":"gh","tool":"search","arguments":{"q":"x"},"status":"in_progress"}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: "gh.search", CallID: "i", Args: `{"q":"x"}`}}},
		{`{"type":"turn.failed","error":{"message":"quota"}}`, []agents.Step{{Kind: agents.StepOther, Text: "error: quota"}}},
		{`{"type":"item.completed","item":{"id":"` + long + `","type":"file_change","changes":[{"path":"/` + long + `","kind":"add"}],"status":"completed"}}`,
			[]agents.Step{{Kind: agents.StepEdit, Tool: "apply_patch", CallID: long[:200] + "…", Path: "/" + long[:agents.MaxPathBytes-1] + "…"}}},
	}
	for _, tt := range tests {
		got, ok := CLI{}.DecodeLine([]byte(tt.line))
		if !ok || !slices.Equal(got, tt.want) {
			t.Errorf("DecodeLine(%s)\n = %+v, %v\nwant %+v", tt.line, got, ok, tt.want)
		}
	}
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
