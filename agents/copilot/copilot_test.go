package copilot

import (
	"slices"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestArgvGolden(t *testing.T) {
	clitest.ArgvGolden(t, CLI{}, "openai", "gpt-5.4", "0cb916db-26aa-40f2-86b5-1ba81b225fd2", "be59c7c6-171e-49cc-b29d-d6d812c01514")
}

func TestParseRecorded(t *testing.T) {
	const id = "be59c7c6-171e-49cc-b29d-d6d812c01514"
	out := func(exit int, file string) *sandbox.Result {
		return clitest.Result(exit, string(clitest.Testdata(t, file)), "")
	}
	clitest.CheckParse(t, CLI{}, []clitest.Parsed{
		{Name: "fresh", Res: out(0, "fresh.stdout.jsonl"), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: id}},
		{Name: "resume", Res: out(0, "resume.stdout.jsonl"), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: id}},
		{Name: "API 401", Res: out(1, "api-401.stdout.jsonl"), Want: agents.Output{NativeSessionID: "afcbbf81-184c-483f-bfb1-352b36ac1849",
			Text: "Authentication failed with provider at http://127.0.0.1:43693/v1 (HTTP 401).\n  Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or COPILOT_PROVIDER_BEARER_TOKEN."}},
		{Name: "missing session", Res: clitest.Result(1, "", string(clitest.Testdata(t, "missing-session.stderr"))),
			Want: agents.Output{Text: "Error: No session, task, or name matched 'e35b8461-156a-408c-81ac-3204d1ae7282'."}},
		{Name: "not authenticated, in a fresh home", Res: clitest.Result(1, "", "Package extraction took 10581ms\n\nError: No authentication information found.\n"),
			Want: agents.Output{Text: "Error: No authentication information found."}},
		{Name: "exit 0, result exitCode 1", Res: clitest.Result(0, `{"type":"result","timestamp":"t","sessionId":"x","exitCode":1,"usage":{}}`+"\n", ""),
			Want: agents.Output{NativeSessionID: "x", Text: "copilot ended with exit code 1 and no error message"}},
		{Name: "fresh-shell", Res: clitest.Recorded(t, "testdata", "fresh-shell"), Want: agents.Output{Succeeded: true, Text: "All done.", NativeSessionID: id}},
		{Name: "crash at start, nothing printed", Res: clitest.Result(139, "", ""), Want: agents.Output{Text: "the CLI exited with code 139 and printed nothing"}},
		{Name: "malformed lines", Res: clitest.Result(1, "{\"type\":\"assistant.mess\nnode: out of memory\n", ""), Want: agents.Output{Text: "node: out of memory"}},
	})
}

// TestDecodeRecordedStream: the steps of each line of the recorded streams
// (testdata/stream/*.golden.json): the bash call as it starts, its result,
// the answer; the provider's 401 as a note; ephemeral events and session
// bookkeeping give none.
func TestDecodeRecordedStream(t *testing.T) {
	clitest.CheckStream(t, CLI{}, "testdata", "fresh-shell", "fresh.stdout.jsonl", "api-401.stdout.jsonl")
}

// TestDecodeBadLines: the decoder never fails on what a CLI may print.
func TestDecodeBadLines(t *testing.T) {
	clitest.CheckBadLines(t, CLI{}, `{"type":"tool.execution_complete","data":{"toolCallId":"c","success":false,"error":{"message":"denied"}}}`,
		`{"type":"tool.execution_complete","data":{"toolCallId":"c","success":false,"error":"plain"}}`)
}

// TestDecodeCalls: a call as it starts, its end read as the transcript
// reads it (resultSteps: no request known, so no tool and no edit); an
// over-long tool and call id are clipped.
func TestDecodeCalls(t *testing.T) {
	long := strings.Repeat("a", 1000)
	tests := []struct {
		line string
		want []agents.Step
	}{
		{`{"type":"tool.execution_start","data":{"toolCallId":"c","toolName":"create","arguments":{"path":"/w/a.go"}}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: "create", CallID: "c", Args: `{"path":"/w/a.go"}`}}},
		{`{"type":"tool.execution_complete","data":{"toolCallId":"c","success":true,"result":{"content":"Created"}}}`,
			[]agents.Step{{Kind: agents.StepToolResult, CallID: "c", Text: "Created"}}},
		{`{"type":"tool.execution_complete","data":{"toolCallId":"c","success":false,"error":{"message":"denied"}}}`,
			[]agents.Step{{Kind: agents.StepToolResult, CallID: "c", Text: "denied", Failed: true}}},
		{`{"type":"tool.execution_start","data":{"toolCallId":"` + long + `","toolName":"` + long + `"}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: long[:200] + "…", CallID: long[:200] + "…"}}},
		{`{"type":"tool.execution_complete","data":{"toolCallId":"` + long + `","success":true,"result":{"content":"ok"}}}`,
			[]agents.Step{{Kind: agents.StepToolResult, CallID: long[:200] + "…", Text: "ok"}}},
	}
	for _, tt := range tests {
		got, ok := CLI{}.DecodeLine([]byte(tt.line))
		if !ok || !slices.Equal(got, tt.want) {
			t.Errorf("DecodeLine(%.120s)\n = %+v, %v\nwant %+v", tt.line, got, ok, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	stderr := func(text string) *sandbox.Result { return clitest.Result(1, "", text) }
	clitest.CheckClassify(t, CLI{}, []clitest.Classified{
		{Name: "1.0.102 unknown id (recorded)", Res: stderr(string(clitest.Testdata(t, "missing-session.stderr"))), Want: agents.FallbackStateMissing},
		{Name: "1.0.50 unknown id", Res: stderr("Error: No session, task, or name matched 'my-task-1'.\n"), Want: agents.FallbackStateMissing},
		{Name: "unknown id in a fresh home", Res: stderr("Package extraction took 5034ms\nError: No session, task, or name matched 'cef08ba1-eb18-4481-9b0f-fdb02f942485'.\n"), Want: agents.FallbackStateMissing},
		{Name: "ambiguous name", Res: stderr("Error: Multiple sessions match the name 'my-task-CP'.\nMatching sessions:\n  a\n  b\nSpecify the session ID directly: copilot --resume=<id>\n"), Want: agents.FallbackRefused},
		{Name: "non-UUID --session-id (fresh only)", Res: stderr("Error: No session or task matched 'my-task-1'.\nThe value is not a valid UUID, so a new session cannot be created.\n"), Want: agents.FallbackNone},
		{Name: "1.0.50 has no --session-id (fresh only)", Res: stderr("error: unknown option '--session-id=0cb916db-26aa-40f2-86b5-1ba81b225fd2'\n"), Want: agents.FallbackNone},
		{Name: "not authenticated", Res: stderr("Error: No authentication information found.\nCopilot can be authenticated with GitHub using an OAuth Token or a Fine-Grained Personal Access Token.\n"), Want: agents.FallbackNone},
		{Name: "classic PAT", Res: stderr("Error: Classic Personal Access Tokens (ghp_) are not supported by Copilot.\n"), Want: agents.FallbackNone},
		{Name: "no network", Res: stderr("Error: Authentication token found but could not be validated.\n  Failed to fetch PAT user login: network fetch failed: x\nYour token may still be valid. Check your network connection and try again.\n"), Want: agents.FallbackNone},
		{Name: "provider 401 (recorded)", Res: clitest.Result(1, string(clitest.Testdata(t, "api-401.stdout.jsonl")), ""), Want: agents.FallbackNone},
		{Name: "crash", Res: clitest.Result(134, "", "Segmentation fault\n"), Want: agents.FallbackNone},
	})
}

// TestArgvBehindGateway: signed in with a run's token (behind github_pat_),
// the CLI runs with its built-in MCP servers and client telemetry off;
// with a real GitHub token, BYOK, or no environment, it runs as ever.
func TestArgvBehindGateway(t *testing.T) {
	off := []string{"--disable-builtin-mcps", "--disable-client-telemetry"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"the run's token behind github_pat_", map[string]string{"COPILOT_GITHUB_TOKEN": gateway.GitHubTokenPrefix + "alfred-run-abc"}, true},
		{"a real token", map[string]string{"COPILOT_GITHUB_TOKEN": "github_pat_11ABCDEF"}, false},
		{"BYOK", map[string]string{"COPILOT_PROVIDER_API_KEY": "alfred-run-abc"}, false},
		{"no environment", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := CLI{}.Argv(agents.Invocation{Mode: agents.ModeNone, Env: tc.env})
			got := slices.Contains(argv, off[0]) && slices.Contains(argv, off[1])
			if got != tc.want || !tc.want && slices.ContainsFunc(argv, func(a string) bool { return slices.Contains(off, a) }) {
				t.Errorf("argv %q: want the flags off %v: %v", argv, off, tc.want)
			}
		})
	}
}

// TestSealedWays: Copilot runs sealed signed in when the gateway holds a
// GitHub token, with an OpenAI key too; BYOK when it holds only the key;
// with neither, the sentence names both ways.
func TestSealedWays(t *testing.T) {
	openAI := gateway.OpenAI("", "sk-1")
	gitHub := gateway.Copilot("", "github_pat_real")
	sd := CLI{}.Descriptor().Sealed
	for _, tc := range []struct {
		name   string
		served []gateway.Provider
		want   string
	}{
		{"a GitHub token and an OpenAI key", []gateway.Provider{openAI, gitHub}, gateway.NameCopilot},
		{"a GitHub token", []gateway.Provider{gitHub}, gateway.NameCopilot},
		{"an OpenAI key", []gateway.Provider{openAI}, gateway.NameOpenAI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sd.For(tc.served); got.Provider != tc.want || sd.Missing(tc.served) != "" {
				t.Errorf("sealed to %s (missing %q), want %s", got.Provider, sd.Missing(tc.served), tc.want)
			}
		})
	}
	why := sd.Missing(nil)
	for _, v := range []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "OPENAI_API_KEY", "GitHub sign-in", "BYOK"} {
		if !strings.Contains(why, v) {
			t.Errorf("Missing with nothing served = %q: it does not name %s", why, v)
		}
	}
}
