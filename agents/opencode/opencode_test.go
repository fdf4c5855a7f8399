package opencode

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestArgvGolden(t *testing.T) {
	base := agents.Invocation{
		Prompt: "Fix issue #7.\n--- context ---\n-rf", Phase: agents.PhaseDevelopment,
		Provider: "anthropic", Model: "claude-sonnet-4-5", Workdir: "/workspace",
	}
	clitest.ArgvGolden(t, CLI{}, base, "agent/issue-7-fix-login", CLI{}.Descriptor().NewSessionID(), "ses_dd51e5029ffe6f5YB4sQK1KroY")
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

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRecorded(t *testing.T) {
	for _, tc := range []struct {
		file      string
		exit      int
		succeeded bool
		id, text  string
		in, out   int64
	}{
		{"fresh.stdout.jsonl", 0, true, "ses_dd51e5029ffe6f5YB4sQK1KroY", "ok", 10, 1},
		{"resume.stdout.jsonl", 0, true, "ses_dd51e5029ffe6f5YB4sQK1KroY", "ok", 10, 1},
		{"api-401.stdout.jsonl", 1, false, "ses_dd51a180affe3yvYGmt9GX8zjK", "APIError: invalid x-api-key", 0, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := CLI{}.Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: tc.exit, Stdout: readTestdata(t, tc.file)})
			if got.Succeeded != tc.succeeded || got.NativeSessionID != tc.id || got.Text != tc.text ||
				got.InputTokens != tc.in || got.OutputTokens != tc.out {
				t.Fatalf("Parse = %+v", got)
			}
		})
	}
	miss := CLI{}.Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: 1, Stderr: readTestdata(t, "missing-session.stderr")})
	if miss.Succeeded || miss.NativeSessionID != "" || miss.Text != "Error: Session not found" {
		t.Fatalf("Parse(missing session) = %+v", miss)
	}
	// 1.1–1.14 exit 0 with nothing on stdout: not a success.
	if got := (CLI{}).Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited}); got.Succeeded {
		t.Fatalf("Parse(empty, exit 0) = %+v", got)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name           string
		exit           int
		stdout, stderr string
		want           agents.FallbackReason
	}{
		{"1.18.33 missing session (recorded)", 1, "", string(readTestdata(t, "missing-session.stderr")), agents.FallbackStateMissing},
		{"1.15.0 missing session, first start (recorded)", 1, "", string(readTestdata(t, "missing-session-1.15.0.stderr")), agents.FallbackStateMissing},
		{"1.3.2 missing session, exit 0", 0, "", "NotFoundError: NotFoundError\n data: { message: \"Session not found: ses_x\" }", agents.FallbackStateMissing},
		{"1.0.0 missing session", 1, "", "Error: Unexpected error, check log file at /x for more details\nNotFoundError: NotFoundError", agents.FallbackStateMissing},
		{"API 401 (recorded)", 1, string(readTestdata(t, "api-401.stdout.jsonl")), "", agents.FallbackNone},
		{"no network", 1, `{"type":"error","timestamp":1,"sessionID":"ses_x","error":{"name":"APIError","data":{"message":"Cannot connect to API: Unable to connect. Is the computer able to access the url?","isRetryable":true}}}`, "", agents.FallbackNone},
		{"database not writable", 1, "", "\x1b[91m\x1b[1mError: \x1b[0mUnexpected error\n\nunable to open database file\n", agents.FallbackNone},
		{"crash", 134, "", "panic: something\n", agents.FallbackNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CLI{}.Classify(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: tc.exit, Stdout: []byte(tc.stdout), Stderr: []byte(tc.stderr)})
			if got != tc.want {
				t.Fatalf("Classify = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Capabilities(); !c.ResumableSessions || c.SessionStatePath != SessionStatePath || a.ID() != ID {
		t.Fatalf("adapter = %s %+v", a.ID(), c)
	}
	if v, err := (CLI{}).Descriptor().ParseVersion([]byte("1.18.33\n"), nil); err != nil || v.String() != "1.18.33" {
		t.Fatalf("ParseVersion = %v, %v", v, err)
	}
}
