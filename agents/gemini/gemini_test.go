package gemini

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

func TestArgvGolden(t *testing.T) {
	clitest.ArgvGolden(t, CLI{}, "google", "gemini-2.5-pro", "0cb916db-26aa-40f2-86b5-1ba81b225fd2", "daa12b36-4a23-4be5-8460-14505f5bdfaf")
}

func TestParseRecorded(t *testing.T) {
	const id = "daa12b36-4a23-4be5-8460-14505f5bdfaf"
	file := func(name string) string { return string(clitest.Testdata(t, name)) }
	clitest.CheckParse(t, CLI{}, []clitest.Parsed{
		{Name: "fresh", Res: clitest.Result(0, file("fresh.stdout.json"), ""), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: id, InputTokens: 60, OutputTokens: 6}},
		{Name: "resume", Res: clitest.Result(0, file("resume.stdout.json"), ""), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: id, InputTokens: 10, OutputTokens: 1}},
		{Name: "API 401", Res: clitest.Result(145, "", file("api-401.stderr")), Want: agents.Output{NativeSessionID: "33955dfd-c8bd-42f1-a6cc-91024d68e142",
			Text: `{"error":{"code":401,"message":"invalid x-api-key","status":"UNAUTHENTICATED"}}`}},
		{Name: "missing session", Res: clitest.Result(42, "", file("missing-session.stderr")), Want: agents.Output{
			Text: "Error resuming session: Invalid session identifier \"08b9332d-65fc-497e-870b-6efb5f51bd78\".\n" +
				"  Searched for sessions in /tmp/gm/home/.gemini/tmp/ws/chats.\n" +
				"  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest."}},
	})
}

func TestClassify(t *testing.T) {
	r := clitest.Result
	clitest.CheckClassify(t, CLI{}, []clitest.Classified{
		{Name: "0.61.0 unknown id, project has sessions (recorded)", Res: r(42, "", string(clitest.Testdata(t, "missing-session.stderr"))), Want: agents.FallbackStateMissing},
		{Name: "0.61.0 project has no sessions", Res: r(42, "", "Error resuming session: No previous sessions found for this project.\n"), Want: agents.FallbackStateMissing},
		{Name: "0.61.0 --resume=../evil", Res: r(42, "", "Error resuming session: Invalid session identifier \"../evil\".\n  Searched for sessions in /h/.gemini/tmp/ws/chats.\n"), Want: agents.FallbackStateMissing},
		{Name: "invalid --session-id (fresh only)", Res: r(1, "", "Invalid session ID \"../evil\": Only alphanumeric characters, dashes, and underscores are allowed.\n"), Want: agents.FallbackNone},
		{Name: "exclusive flags", Res: r(1, "", "The flags --resume, --session-id, and --session-file are mutually exclusive. Please provide only one.\n"), Want: agents.FallbackNone},
		{Name: "0.40.1 has no --session-id (fresh only)", Res: r(1, "", "Usage: gemini [options]\n\nUnknown arguments: session-id, sessionId\n"), Want: agents.FallbackNone},
		{Name: "session id exists (a fresh start)", Res: r(42, "", "Error starting session: Session ID \"x\" already exists. Use --resume to resume it, or provide a different ID.\n"), Want: agents.FallbackNone},
		{Name: "no auth", Res: r(41, "", `{"session_id":"n","error":{"type":"Error","message":"Please set an Auth method in your /h/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA","code":41}}`), Want: agents.FallbackNone},
		{Name: "untrusted folder", Res: r(55, "", "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, ...\n"), Want: agents.FallbackNone},
		{Name: "API 401 (recorded)", Res: r(145, "", string(clitest.Testdata(t, "api-401.stderr"))), Want: agents.FallbackNone},
		{Name: "crash", Res: r(134, "", "FATAL ERROR: Reached heap limit\n"), Want: agents.FallbackNone},
	})
}
