package gemini

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestArgvGolden(t *testing.T) {
	clitest.ArgvGolden(t, CLI{}, "google", "gemini-2.5-pro", "0cb916db-26aa-40f2-86b5-1ba81b225fd2", "daa12b36-4a23-4be5-8460-14505f5bdfaf")
}

// TestParseRecorded: outputs of the real 0.61.0 under stream-json,
// recorded against agents/mockllm (testdata/README.md), and what a CLI may
// print when it breaks.
func TestParseRecorded(t *testing.T) {
	const id = "daa12b36-4a23-4be5-8460-14505f5bdfaf"
	rec := func(name string) *sandbox.Result { return clitest.Recorded(t, "testdata", name) }
	clitest.CheckParse(t, CLI{}, []clitest.Parsed{
		{Name: "fresh", Res: rec("fresh"), Want: agents.Output{Succeeded: true, Text: "All done.", NativeSessionID: id, InputTokens: 20, OutputTokens: 2}},
		{Name: "resume", Res: rec("resume"), Want: agents.Output{Succeeded: true, Text: "All done.", NativeSessionID: id, InputTokens: 10, OutputTokens: 1}},
		{Name: "API 401", Res: rec("api-401"), Want: agents.Output{NativeSessionID: "f37ae30b-2e65-46e8-b0de-35151808fea3",
			Text: `[API Error: {"error":{"code":401,"message":"invalid x-api-key","status":"UNAUTHENTICATED"}}]`}},
		{Name: "missing session", Res: rec("resume-missing"), Want: agents.Output{
			Text: "Error resuming session: Invalid session identifier \"08b9332d-65fc-497e-870b-6efb5f51bd78\".\n" +
				"  Searched for sessions in /tmp/rec/gm-home/.gemini/tmp/gmws/chats.\n" +
				"  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest."}},
		{Name: "no auth", Res: rec("no-auth"), Want: agents.Output{Text: "Please set an Auth method in your /tmp/rec/gm-home2/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA"}},
		{Name: "error object after a stack trace", Res: clitest.Result(145, "", "Error when talking to Gemini API\n    at x\n"+`{"session_id":"s","error":{"type":"Error","message":"quota","code":429}}`), Want: agents.Output{Text: "quota"}},
		{Name: "killed mid-stream", Res: clitest.Result(137, firstLines(t, "fresh", 3), "YOLO mode is enabled. All tool calls will be automatically approved.\n"), Want: agents.Output{NativeSessionID: id, Text: "the CLI exited with code 137 without printing its result"}},
		{Name: "a result of another status", Res: clitest.Result(53, `{"type":"result","status":"turn_limit"}`, ""), Want: agents.Output{Text: `gemini ended with status "turn_limit"`}},
	})
}

// firstLines are the first n lines of a recorded stdout.
func firstLines(t *testing.T, name string, n int) string {
	lines := strings.SplitAfter(string(clitest.Recorded(t, "testdata", name).Stdout), "\n")
	return strings.Join(lines[:n], "")
}

// TestDecodeRecordedStream: the steps of each line of the recorded streams
// (testdata/stream/*.golden.json): the shell call, its result, the answer;
// the init and the prompt give none; a failed result is a note.
func TestDecodeRecordedStream(t *testing.T) {
	clitest.CheckStream(t, CLI{}, "testdata", "fresh", "resume", "api-401")
}

// TestDecodeBadLines: the decoder never fails on what a CLI may print.
func TestDecodeBadLines(t *testing.T) {
	clitest.CheckBadLines(t, CLI{}, `{"type":"error","severity":"warning","message":"Loop detected"}`, `{"type":"tool_result","status":"error","error":{"message":"denied"}}`)
}

func TestClassify(t *testing.T) {
	r := clitest.Result
	clitest.CheckClassify(t, CLI{}, []clitest.Classified{
		{Name: "0.61.0 unknown id, project has sessions (recorded)", Res: clitest.Recorded(t, "testdata", "resume-missing"), Want: agents.FallbackStateMissing},
		{Name: "0.61.0 project has no sessions", Res: r(42, "", "Error resuming session: No previous sessions found for this project.\n"), Want: agents.FallbackStateMissing},
		{Name: "0.61.0 --resume=../evil", Res: r(42, "", "Error resuming session: Invalid session identifier \"../evil\".\n  Searched for sessions in /h/.gemini/tmp/ws/chats.\n"), Want: agents.FallbackStateMissing},
		{Name: "invalid --session-id (fresh only)", Res: r(1, "", "Invalid session ID \"../evil\": Only alphanumeric characters, dashes, and underscores are allowed.\n"), Want: agents.FallbackNone},
		{Name: "exclusive flags", Res: r(1, "", "The flags --resume, --session-id, and --session-file are mutually exclusive. Please provide only one.\n"), Want: agents.FallbackNone},
		{Name: "0.40.1 has no --session-id (fresh only)", Res: r(1, "", "Usage: gemini [options]\n\nUnknown arguments: session-id, sessionId\n"), Want: agents.FallbackNone},
		{Name: "session id exists (a fresh start)", Res: r(42, "", "Error starting session: Session ID \"x\" already exists. Use --resume to resume it, or provide a different ID.\n"), Want: agents.FallbackNone},
		{Name: "no auth", Res: r(41, "", `{"session_id":"n","error":{"type":"Error","message":"Please set an Auth method in your /h/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA","code":41}}`), Want: agents.FallbackNone},
		{Name: "untrusted folder", Res: r(55, "", "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, ...\n"), Want: agents.FallbackNone},
		{Name: "API 401 (recorded)", Res: clitest.Recorded(t, "testdata", "api-401"), Want: agents.FallbackNone},
		{Name: "no auth (recorded)", Res: clitest.Recorded(t, "testdata", "no-auth"), Want: agents.FallbackNone},
		{Name: "crash", Res: r(134, "", "FATAL ERROR: Reached heap limit\n"), Want: agents.FallbackNone},
	})
}
