package opencode

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

func TestArgvGolden(t *testing.T) {
	clitest.ArgvGolden(t, CLI{}, "anthropic", "claude-sonnet-4-5", CLI{}.Descriptor().NewSessionID(), "ses_dd51e5029ffe6f5YB4sQK1KroY")
}

func TestArgvModel(t *testing.T) {
	for _, tc := range []struct{ provider, model, want string }{
		{"", "", ""},
		{"anthropic", "", ""},
		{"anthropic", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"},
		{"", "mock/m", "mock/m"},
		{"openai", "mock/m", "mock/m"},
		{"", "gpt-5", "gpt-5"},
	} {
		argv := CLI{}.Argv(agents.Invocation{Mode: agents.ModeNone, Provider: tc.provider, Model: tc.model, Prompt: "p"})
		i := slices.Index(argv, "--model")
		got := ""
		if i >= 0 {
			got = argv[i+1]
		}
		if got != tc.want {
			t.Errorf("provider %q model %q: --model %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
}

func TestParseRecorded(t *testing.T) {
	const id = "ses_dd51e5029ffe6f5YB4sQK1KroY"
	file := func(name string) string { return string(clitest.Testdata(t, name)) }
	clitest.CheckParse(t, CLI{}, []clitest.Parsed{
		{Name: "fresh", Res: clitest.Result(0, file("fresh.stdout.jsonl"), ""), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: id, InputTokens: 10, OutputTokens: 1}},
		{Name: "resume", Res: clitest.Result(0, file("resume.stdout.jsonl"), ""), Want: agents.Output{Succeeded: true, Text: "ok", NativeSessionID: id, InputTokens: 10, OutputTokens: 1}},
		{Name: "API 401", Res: clitest.Result(1, file("api-401.stdout.jsonl"), ""), Want: agents.Output{NativeSessionID: "ses_dd51a180affe3yvYGmt9GX8zjK", Text: "APIError: invalid x-api-key"}},
		{Name: "missing session", Res: clitest.Result(1, "", file("missing-session.stderr")), Want: agents.Output{Text: "Error: Session not found"}},
		{Name: "1.1-1.14: exit 0, nothing on stdout", Res: clitest.Result(0, "", ""), Want: agents.Output{Text: "the CLI exited with code 0 and printed nothing"}},
		{Name: "fresh-shell", Res: clitest.Recorded(t, "testdata", "fresh-shell"), Want: agents.Output{Succeeded: true, Text: "All done.", NativeSessionID: "ses_dbe0d9f30ffe6pQb1bvcSd5pvq", InputTokens: 20, OutputTokens: 2}},
		{Name: "crash at start", Res: clitest.Result(139, "", "Segmentation fault\n"), Want: agents.Output{Text: "Segmentation fault"}},
	})
}

// TestDecodeRecordedStream: the steps of each line of the recorded streams
// (testdata/stream/*.golden.json): the bash call with its result, the
// answer, the API error as a note; the step frames give none.
func TestDecodeRecordedStream(t *testing.T) {
	clitest.CheckStream(t, CLI{}, "testdata", "fresh-shell", "fresh.stdout.jsonl", "api-401.stdout.jsonl")
}

// TestDecodeBadLines: the decoder never fails on what a CLI may print.
func TestDecodeBadLines(t *testing.T) {
	clitest.CheckBadLines(t, CLI{},
		`{"type":"tool_use","sessionID":"s","part":{"tool":"write","callID":"c","state":{"status":"completed","input":{"filePath":"/w/a.go","content":"x"},"output":""}}}`,
		`{"type":"tool_use","sessionID":"s","part":{"tool":"bash","callID":"c","state":{"status":"error","input":{"command":"false"},"error":"exit 1"}}}`)
}

// TestDecodeEdit: a completed write is a call, its result and the file it
// wrote; a failed call is a failed result; an over-long tool, call id and
// path are clipped.
func TestDecodeEdit(t *testing.T) {
	long := strings.Repeat("a", 2*agents.MaxPathBytes)
	tests := []struct {
		line string
		want []agents.Step
	}{
		{`{"type":"tool_use","sessionID":"s","part":{"tool":"write","callID":"c","state":{"status":"completed","input":{"filePath":"/w/a.go"},"output":"Wrote file"}}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: "write", CallID: "c", Args: `{"filePath":"/w/a.go"}`}, {Kind: agents.StepToolResult, Tool: "write", CallID: "c", Text: "Wrote file"}, {Kind: agents.StepEdit, Tool: "write", CallID: "c", Path: "/w/a.go"}}},
		{`{"type":"tool_use","sessionID":"s","part":{"tool":"bash","callID":"c","state":{"status":"error","input":{"command":"false"},"error":"exit 1"}}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: "bash", CallID: "c", Args: `{"command":"false"}`}, {Kind: agents.StepToolResult, Tool: "bash", CallID: "c", Text: "exit 1", Failed: true}}},
		{`{"type":"tool_use","sessionID":"s","part":{"tool":"write","callID":"` + long + `","state":{"status":"completed","input":{"filePath":"/` + long + `"},"output":""}}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: "write", CallID: long[:200] + "…", Args: agents.Args(json.RawMessage(`{"filePath":"/` + long + `"}`))},
				{Kind: agents.StepToolResult, Tool: "write", CallID: long[:200] + "…"}, {Kind: agents.StepEdit, Tool: "write", CallID: long[:200] + "…", Path: "/" + long[:agents.MaxPathBytes-1] + "…"}}},
		{`{"type":"tool_use","sessionID":"s","part":{"tool":"` + long + `","callID":"c","state":{"status":"error","input":{},"error":"x"}}}`,
			[]agents.Step{{Kind: agents.StepToolCall, Tool: long[:200] + "…", CallID: "c", Args: "{}"}, {Kind: agents.StepToolResult, Tool: long[:200] + "…", CallID: "c", Text: "x", Failed: true}}},
	}
	for _, tt := range tests {
		got, ok := CLI{}.DecodeLine([]byte(tt.line))
		if !ok || !slices.Equal(got, tt.want) {
			t.Errorf("DecodeLine(%s)\n = %+v, %v\nwant %+v", tt.line, got, ok, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	r := clitest.Result
	clitest.CheckClassify(t, CLI{}, []clitest.Classified{
		{Name: "1.18.33 missing session (recorded)", Res: r(1, "", string(clitest.Testdata(t, "missing-session.stderr"))), Want: agents.FallbackStateMissing},
		{Name: "1.15.0 missing session, first start (recorded)", Res: r(1, "", string(clitest.Testdata(t, "missing-session-1.15.0.stderr"))), Want: agents.FallbackStateMissing},
		{Name: "1.3.2 missing session, exit 0", Res: r(0, "", "NotFoundError: NotFoundError\n data: { message: \"Session not found: ses_x\" }"), Want: agents.FallbackStateMissing},
		{Name: "1.0.0 missing session", Res: r(1, "", "Error: Unexpected error, check log file at /x for more details\nNotFoundError: NotFoundError"), Want: agents.FallbackStateMissing},
		{Name: "API 401 (recorded)", Res: r(1, string(clitest.Testdata(t, "api-401.stdout.jsonl")), ""), Want: agents.FallbackNone},
		{Name: "no network", Res: r(1, `{"type":"error","timestamp":1,"sessionID":"ses_x","error":{"name":"APIError","data":{"message":"Cannot connect to API: Unable to connect. Is the computer able to access the url?","isRetryable":true}}}`, ""), Want: agents.FallbackNone},
		{Name: "database not writable", Res: r(1, "", "\x1b[91m\x1b[1mError: \x1b[0mUnexpected error\n\nunable to open database file\n"), Want: agents.FallbackNone},
		{Name: "crash", Res: r(134, "", "panic: something\n"), Want: agents.FallbackNone},
	})
}
