package grok

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestArgvGolden(t *testing.T) {
	inv := agents.Invocation{
		Mode: agents.ModeNone, Prompt: "Fix issue #7.\n--- context ---\n-rf", Phase: agents.PhaseDevelopment,
		Provider: "xai", Model: "grok-code-fast-1", Workdir: "/workspace",
	}
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

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name           string
		exit           int
		stdout, stderr string
		succeeded      bool
		text           string
	}{
		{"headless answer (recorded)", 0, string(readTestdata(t, "headless.stdout.jsonl")), "", true, "ok"},
		{"API 401, exit 0 (recorded)", 0, string(readTestdata(t, "api-401.stdout.jsonl")), "", false, "Sorry, I encountered an error: Grok API error: 401 invalid x-api-key"},
		{"thrown error", 1, `{"role":"assistant","content":"Error: boom"}` + "\n", "", false, "Error: boom"},
		{"no API key", 1, "", "❌ Error: API key required. Set GROK_API_KEY environment variable, use --api-key flag, or set \"apiKey\" field in ~/.grok/user-settings.json\n", false,
			"❌ Error: API key required. Set GROK_API_KEY environment variable, use --api-key flag, or set \"apiKey\" field in ~/.grok/user-settings.json"},
		{"tool round then answer", 0, `{"role":"user","content":"p"}` + "\n" + `{"role":"assistant","content":"looking","tool_calls":[{"id":"1","type":"function","function":{"name":"bash","arguments":"{}"}}]}` + "\n" +
			`{"role":"tool","tool_call_id":"1","content":"x"}` + "\n" + `{"role":"assistant","content":"done"}` + "\n", "", true, "done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CLI{}.Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: tc.exit, Stdout: []byte(tc.stdout), Stderr: []byte(tc.stderr)})
			if got.Succeeded != tc.succeeded || got.Text != tc.text || got.NativeSessionID != "" {
				t.Fatalf("Parse = %+v", got)
			}
		})
	}
}

func TestNotResumable(t *testing.T) {
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Capabilities(); c.ResumableSessions || c.SessionStatePath != "" || c.Kind != agents.KindLocal || a.ID() != ID {
		t.Fatalf("adapter = %s %+v", a.ID(), c)
	}
	if (CLI{}).Descriptor().NewSessionID() != "" {
		t.Fatal("NewSessionID must be empty")
	}
	_, err = a.Run(context.Background(), agents.Request{Prompt: "p", Runner: sandbox.NewHostRunner(sandbox.HostOptions{}),
		Session: &agents.SessionRef{Name: "agent/issue-1-x"}})
	if err == nil {
		t.Fatal("a session reference was accepted")
	}
	if v, err := (CLI{}).Descriptor().ParseVersion([]byte("1.0.1\n"), nil); err != nil || v.String() != "1.0.1" {
		t.Fatalf("ParseVersion = %v, %v", v, err)
	}
}
