package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestArgvGolden(t *testing.T) {
	base := agents.Invocation{
		Prompt: "Fix issue #7.\n--- context ---\n-rf", Phase: agents.PhaseDevelopment,
		Provider: "google", Model: "gemini-2.5-pro", Workdir: "/workspace",
	}
	clitest.ArgvGolden(t, CLI{}, base, "agent/issue-7-fix-login", "0cb916db-26aa-40f2-86b5-1ba81b225fd2", "daa12b36-4a23-4be5-8460-14505f5bdfaf")
}

func TestNewSessionID(t *testing.T) {
	a, b := CLI{}.Descriptor().NewSessionID(), CLI{}.Descriptor().NewSessionID()
	if _, err := uuid.Parse(a); err != nil || a == b {
		t.Fatalf("NewSessionID = %q, %q: want two random UUIDs", a, b)
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
		stderr    bool
		exit      int
		succeeded bool
		id, text  string
		in, out   int64
	}{
		{"fresh.stdout.json", false, 0, true, "daa12b36-4a23-4be5-8460-14505f5bdfaf", "ok", 60, 6},
		{"resume.stdout.json", false, 0, true, "daa12b36-4a23-4be5-8460-14505f5bdfaf", "ok", 10, 1},
		{"api-401.stderr", true, 145, false, "33955dfd-c8bd-42f1-a6cc-91024d68e142",
			`{"error":{"code":401,"message":"invalid x-api-key","status":"UNAUTHENTICATED"}}`, 0, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res := &sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: tc.exit}
			if tc.stderr {
				res.Stderr = readTestdata(t, tc.file)
			} else {
				res.Stdout = readTestdata(t, tc.file)
			}
			got := CLI{}.Parse(res)
			if got.Succeeded != tc.succeeded || got.NativeSessionID != tc.id || got.Text != tc.text ||
				got.InputTokens != tc.in || got.OutputTokens != tc.out {
				t.Fatalf("Parse = %+v", got)
			}
		})
	}
	miss := CLI{}.Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: 42, Stderr: readTestdata(t, "missing-session.stderr")})
	if miss.Succeeded || miss.NativeSessionID != "" || !strings.HasPrefix(miss.Text, "Error resuming session: Invalid session identifier") {
		t.Fatalf("Parse(missing session) = %+v", miss)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name           string
		exit           int
		stdout, stderr string
		want           agents.FallbackReason
	}{
		{"0.61.0 unknown id, project has sessions (recorded)", 42, "", string(readTestdata(t, "missing-session.stderr")), agents.FallbackStateMissing},
		{"0.61.0 project has no sessions", 42, "", "Error resuming session: No previous sessions found for this project.\n", agents.FallbackStateMissing},
		{"0.61.0 --resume=../evil", 42, "", "Error resuming session: Invalid session identifier \"../evil\".\n  Searched for sessions in /h/.gemini/tmp/ws/chats.\n", agents.FallbackStateMissing},
		{"invalid --session-id (fresh only)", 1, "", "Invalid session ID \"../evil\": Only alphanumeric characters, dashes, and underscores are allowed.\n", agents.FallbackNone},
		{"exclusive flags", 1, "", "The flags --resume, --session-id, and --session-file are mutually exclusive. Please provide only one.\n", agents.FallbackNone},
		{"0.40.1 has no --session-id (fresh only)", 1, "", "Usage: gemini [options]\n\nUnknown arguments: session-id, sessionId\n", agents.FallbackNone},
		{"session id exists (a fresh start)", 42, "", "Error starting session: Session ID \"x\" already exists. Use --resume to resume it, or provide a different ID.\n", agents.FallbackNone},
		{"no auth", 41, "", `{"session_id":"n","error":{"type":"Error","message":"Please set an Auth method in your /h/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA","code":41}}`, agents.FallbackNone},
		{"untrusted folder", 55, "", "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, ...\n", agents.FallbackNone},
		{"API 401 (recorded)", 145, "", string(readTestdata(t, "api-401.stderr")), agents.FallbackNone},
		{"crash", 134, "", "FATAL ERROR: Reached heap limit\n", agents.FallbackNone},
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
	if v, err := (CLI{}).Descriptor().ParseVersion([]byte("0.61.0\n"), nil); err != nil || v.String() != "0.61.0" {
		t.Fatalf("ParseVersion = %v, %v", v, err)
	}
}
