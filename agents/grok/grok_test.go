package grok

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestArgvGolden(t *testing.T) {
	inv := clitest.GoldenInvocation("xai", "grok-code-fast-1")
	got := CLI{}.Argv(inv)
	clitest.GoldenJSON(t, filepath.Join("testdata", "golden", "none.json"), got)
	// Grok has no sessions: no mode adds anything.
	for _, mode := range []agents.Mode{agents.ModeFresh, agents.ModeResume} {
		other := inv
		other.Mode, other.SessionName, other.SessionID = mode, "agent/issue-7-fix-login", "x"
		if a := (CLI{}).Argv(other); !slices.Equal(a, got) {
			t.Fatalf("%s argv %q differs from none %q", mode, a, got)
		}
	}
	if a := (CLI{}).Argv(agents.Invocation{Prompt: "p"}); !slices.Equal(a, []string{"grok", "--prompt=p"}) {
		t.Fatalf("argv without a model = %q", a)
	}
}

func TestParse(t *testing.T) {
	r := clitest.Result
	noKey := "❌ Error: API key required. Set GROK_API_KEY environment variable, use --api-key flag, or set \"apiKey\" field in ~/.grok/user-settings.json"
	toolRound := `{"role":"user","content":"p"}` + "\n" + `{"role":"assistant","content":"looking","tool_calls":[{"id":"1","type":"function","function":{"name":"bash","arguments":"{}"}}]}` + "\n" +
		`{"role":"tool","tool_call_id":"1","content":"x"}` + "\n" + `{"role":"assistant","content":"done"}` + "\n"
	clitest.CheckParse(t, CLI{}, []clitest.Parsed{
		{Name: "headless answer (recorded)", Res: r(0, string(clitest.Testdata(t, "headless.stdout.jsonl")), ""), Want: agents.Output{Succeeded: true, Text: "ok"}},
		{Name: "API 401, exit 0 (recorded)", Res: r(0, string(clitest.Testdata(t, "api-401.stdout.jsonl")), ""),
			Want: agents.Output{Text: "Sorry, I encountered an error: Grok API error: 401 invalid x-api-key"}},
		{Name: "thrown error", Res: r(1, `{"role":"assistant","content":"Error: boom"}`+"\n", ""), Want: agents.Output{Text: "Error: boom"}},
		{Name: "no API key", Res: r(1, "", noKey+"\n"), Want: agents.Output{Text: noKey}},
		{Name: "tool round then answer", Res: r(0, toolRound, ""), Want: agents.Output{Succeeded: true, Text: "done"}},
		{Name: "shell round (recorded)", Res: clitest.Recorded(t, "testdata", "fresh-shell"), Want: agents.Output{Succeeded: true, Text: "All done."}},
		{Name: "crash at start, nothing printed", Res: r(134, "", ""), Want: agents.Output{Text: "the CLI exited with code 134 and printed nothing"}},
		{Name: "malformed lines", Res: r(1, "{\"role\":\"assis\nTypeError: fetch failed\n", ""), Want: agents.Output{Text: "TypeError: fetch failed"}},
	})
}

// TestDecodeRecordedStream: the steps of each line of the recorded outputs
// (testdata/stream/*.golden.json): the bash call (grok's filler text
// dropped), its result, the answer; the 401 answer as a note.
func TestDecodeRecordedStream(t *testing.T) {
	clitest.CheckStream(t, CLI{}, "testdata", "fresh-shell", "headless.stdout.jsonl", "api-401.stdout.jsonl")
}

// TestDecodeBadLines: the decoder never fails on what a CLI may print.
func TestDecodeBadLines(t *testing.T) {
	clitest.CheckBadLines(t, CLI{}, `{"role":"assistant","content":null,"tool_calls":[{"function":null}]}`)
}

// TestNoProgress: grok prints only at its end, so its adapter does not
// report progress (the stall watchdog then leaves an unsealed run alone),
// yet its lines are decoded.
func TestNoProgress(t *testing.T) {
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if a.ReportsProgress() {
		t.Error("grok reports progress")
	}
	if steps, ok := a.DecodeLine([]byte(`{"role":"assistant","content":"hi"}`)); !ok || len(steps) != 1 {
		t.Errorf("DecodeLine = %v, %v", steps, ok)
	}
}

// TestNotResumable: the adapter refuses a session reference (the shared
// descriptor test checks its capabilities).
func TestNotResumable(t *testing.T) {
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Run(context.Background(), agents.Request{Prompt: "p", Runner: sandbox.NewHostRunner(sandbox.HostOptions{}),
		Session: &agents.SessionRef{Name: "agent/issue-1-x"}})
	if err == nil {
		t.Fatal("a session reference was accepted")
	}
}
