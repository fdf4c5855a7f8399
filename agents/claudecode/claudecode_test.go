package claudecode

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestGoldenArgv(t *testing.T) {
	clitest.ArgvByPhase(t, CLI{}, "claude-sonnet-4-5", "3f0e2b1c-5d6a-4e7f-8a9b-0c1d2e3f4a5b")
}

// TestParseRecorded: outputs of the real 2.1.197 under stream-json,
// recorded against agents/mockllm (testdata/README.md).
func TestParseRecorded(t *testing.T) {
	const id, missing = "76a2062b-293b-4d4d-8665-efcc80a7e202", "11111111-2222-4333-8444-555555555555"
	const cost = 0.00015000000000000001 // total_cost_usd, as recorded: two model turns
	rec := func(name string) *sandbox.Result { return clitest.Recorded(t, "testdata", name) }
	clitest.CheckParse(t, CLI{}, []clitest.Parsed{
		{Name: "fresh", Res: rec("fresh"), Want: agents.Output{Succeeded: true, Text: "All done.", NativeSessionID: id, InputTokens: 20, OutputTokens: 2, CostUSD: cost}},
		{Name: "resume", Res: rec("resume"), Want: agents.Output{Succeeded: true, Text: "All done.", NativeSessionID: id, InputTokens: 10, OutputTokens: 1, CostUSD: 0.00007500000000000001}},
		{Name: "resume-missing", Res: rec("resume-missing"), Want: agents.Output{Text: "No conversation found with session ID: " + missing, NativeSessionID: missing}},
		{Name: "resume-not-logged-in", Res: rec("resume-not-logged-in"), Want: agents.Output{Text: "Not logged in · Please run /login", NativeSessionID: id}},
		{Name: "resume-network-refused", Res: rec("resume-network-refused"), Want: agents.Output{Text: "API Error: Unable to connect to API (ConnectionRefused)", NativeSessionID: id}},
		{Name: "resume-api-401", Res: rec("resume-api-401"), Want: agents.Output{Text: "Invalid API key · Fix external API key", NativeSessionID: id}},
		{Name: "fresh-id-in-use", Res: rec("fresh-id-in-use"), Want: agents.Output{Text: "Error: Session ID " + id + " is already in use."}},
		{Name: "fresh-invalid-id", Res: rec("fresh-invalid-id"), Want: agents.Output{Text: "Error: Invalid session ID. Must be a valid UUID."}},
		{Name: "killed mid-stream", Res: clitest.Result(137, firstLines(t, "fresh", 2), ""), Want: agents.Output{Text: "the CLI exited with code 137 without printing its result"}},
		{Name: "a result without text", Res: clitest.Result(1, `{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"x"}`, ""), Want: agents.Output{Text: "claude reported an error (error_max_turns) without a message", NativeSessionID: "x"}},
	})
}

// firstLines are the first n lines of a recorded stdout.
func firstLines(t *testing.T, name string, n int) string {
	lines := strings.SplitAfter(string(clitest.Recorded(t, "testdata", name).Stdout), "\n")
	return strings.Join(lines[:n], "")
}

// TestClassify: outputs recorded from 2.1.197 under stream-json
// (testdata/) and messages quoted in agents-cli-facts.md.
func TestClassify(t *testing.T) {
	rec := func(name string) *sandbox.Result { return clitest.Recorded(t, "testdata", name) }
	clitest.CheckClassify(t, CLI{}, []clitest.Classified{
		{Name: "resume-missing", Res: rec("resume-missing"), Want: agents.FallbackStateMissing},
		{Name: "resume-not-logged-in", Res: rec("resume-not-logged-in"), Want: agents.FallbackNone},
		{Name: "resume-network-refused", Res: rec("resume-network-refused"), Want: agents.FallbackNone},
		{Name: "resume-api-401", Res: rec("resume-api-401"), Want: agents.FallbackNone},
		{Name: "fresh-invalid-id", Res: rec("fresh-invalid-id"), Want: agents.FallbackNone},
		{Name: "fresh-id-in-use", Res: rec("fresh-id-in-use"), Want: agents.FallbackNone},
		{Name: "no conversation, json mode", Res: clitest.Result(1, "", "No conversation found with session ID: 5b0f2c2e-1111-4a4a-9b9b-123456789abc\n"), Want: agents.FallbackStateMissing},
		{Name: "not a uuid nor a title", Res: clitest.Result(1, "", `Error: --resume requires a valid session ID or session title when used with --print. Usage: claude -p --resume <session-id|title>. Provided value "my-task-1" is not a UUID and does not match any session title.`), Want: agents.FallbackStateMissing},
		{Name: "API 401", Res: clitest.Result(1, `{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Fix external API key","session_id":"x"}`, ""), Want: agents.FallbackNone},
		{Name: "login", Res: clitest.Result(1, `{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"x"}`, ""), Want: agents.FallbackNone},
		{Name: "crash", Res: clitest.Result(1, "", "Segmentation fault\n"), Want: agents.FallbackNone},
	})
}

// TestDecodeRecordedStream: the steps of each line of the recorded streams
// (testdata/stream/*.golden.json): the init gives none, the Bash call and
// its result, the Write call, its result and the file it wrote, the answer;
// a failed run's result is a note with its error.
func TestDecodeRecordedStream(t *testing.T) {
	clitest.CheckStream(t, CLI{}, "testdata", "fresh", "fresh-write", "resume", "resume-missing", "resume-api-401", "resume-not-logged-in")
}

// TestDecodeBlocks: the decoder reads an assistant event as the transcript
// reads its entry (assistantSteps: no time, no tool of an earlier line); a
// tool result with the file it wrote; an over-long tool, call id and path
// are clipped.
func TestDecodeBlocks(t *testing.T) {
	long := strings.Repeat("a", 2*agents.MaxPathBytes)
	tests := []struct {
		line string
		want []agents.Step
	}{
		{`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}`,
			[]agents.Step{{Kind: agents.StepAssistant, Text: "hi"}, {Kind: agents.StepToolCall, Tool: "Bash", CallID: "t", Args: `{"command":"ls"}`}}},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"` + long + `","name":"` + long + `","input":null}]}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: long[:200] + "…", CallID: long[:200] + "…"}}},
		{`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},"tool_use_result":{"filePath":"/w/a.go"}}`,
			[]agents.Step{{Kind: agents.StepToolResult, CallID: "t", Text: "ok"}, {Kind: agents.StepEdit, CallID: "t", Path: "/w/a.go"}}},
		{`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},"tool_use_result":{"filePath":"/` + long + `"}}`,
			[]agents.Step{{Kind: agents.StepToolResult, CallID: "t", Text: "ok"}, {Kind: agents.StepEdit, CallID: "t", Path: "/" + long[:agents.MaxPathBytes-1] + "…"}}},
	}
	for _, tt := range tests {
		got, ok := CLI{}.DecodeLine([]byte(tt.line))
		if !ok || !slices.Equal(got, tt.want) {
			t.Errorf("DecodeLine(%.120s)\n = %+v, %v\nwant %+v", tt.line, got, ok, tt.want)
		}
	}
}

// TestDecodeBadLines: the decoder never fails on what a CLI may print.
func TestDecodeBadLines(t *testing.T) {
	clitest.CheckBadLines(t, CLI{}, `{"type":"system","subtype":"api_retry"}`, `{"type":"user","message":{"content":"a prompt"}}`)
}

// onMock points Claude Code at the mock model (ANTHROPIC_BASE_URL).
func onMock(m *clitest.Mocked) {
	m.Env["ANTHROPIC_BASE_URL"], m.Env["ANTHROPIC_API_KEY"] = m.Mock.URL, "sk-ant-test"
}

// TestRealRoundTrip runs the round trip on the pinned Claude Code and on the
// previous pin (clitest.Installs): both are inside the verified range.
func TestRealRoundTrip(t *testing.T) {
	for _, in := range clitest.Installs(t, Executable) {
		t.Run(in.Name, func(t *testing.T) {
			m := clitest.RealIn(t, in.Bin, CLI{}, mockllm.Options{}, onMock)
			m.Env["UNLISTED_SECRET"] = "must not reach the CLI"
			clitest.RoundTrip{Mocked: m, Phase: agents.PhaseDevelopment, ValidID: clitest.UUID}.Check(t)
		})
	}
}

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy where the model has Claude Code write one
// new file per prompt, git status lists those files and nothing else; on the
// pinned Claude Code and on the previous pin.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	for _, in := range clitest.Installs(t, Executable) {
		t.Run(in.Name, func(t *testing.T) {
			dir := clitest.GitWorktree(t)
			m := clitest.RealIn(t, in.Bin, CLI{}, mockllm.Options{Reply: "done", WriteDir: dir}, onMock)
			clitest.CleanWorktree{Mocked: m, Dir: dir, Asked: []string{"greeting-*.txt"}}.Check(t)
		})
	}
}

// TestRealRetriesBoundedByTimeout: with the API unreachable, Claude Code
// retries for minutes by itself; our wall-clock budget ends the run.
func TestRealRetriesBoundedByTimeout(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	req := agents.Request{Prompt: "p", Phase: agents.PhaseAnswer, Timeout: 25 * time.Second, Runner: clitest.Host(t)}
	req.Sandbox.Workdir = t.TempDir()
	req.Sandbox.Env = clitest.Env(bin, map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "ANTHROPIC_API_KEY": "sk-ant-test"})
	res, err := a.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeTimeout {
		t.Fatalf("outcome %s (rc %d, stdout %s), want timeout", res.Outcome, res.ExitCode, res.Stdout)
	}
}
