package copilot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestArgvGolden(t *testing.T) {
	base := agents.Invocation{
		Prompt: "Fix issue #7.\n--- context ---\n-rf", Phase: agents.PhaseDevelopment,
		Provider: "openai", Model: "gpt-5.4", Workdir: "/workspace",
	}
	clitest.ArgvGolden(t, CLI{}, base, "agent/issue-7-fix-login", "0cb916db-26aa-40f2-86b5-1ba81b225fd2", "be59c7c6-171e-49cc-b29d-d6d812c01514")
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
		exit      int
		succeeded bool
		id, text  string
	}{
		{"fresh.stdout.jsonl", 0, true, "be59c7c6-171e-49cc-b29d-d6d812c01514", "ok"},
		{"resume.stdout.jsonl", 0, true, "be59c7c6-171e-49cc-b29d-d6d812c01514", "ok"},
		{"api-401.stdout.jsonl", 1, false, "afcbbf81-184c-483f-bfb1-352b36ac1849",
			"Authentication failed with provider at http://127.0.0.1:43693/v1 (HTTP 401).\n  Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or COPILOT_PROVIDER_BEARER_TOKEN."},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := CLI{}.Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: tc.exit, Stdout: readTestdata(t, tc.file)})
			if got.Succeeded != tc.succeeded || got.NativeSessionID != tc.id || got.Text != tc.text {
				t.Fatalf("Parse = %+v", got)
			}
		})
	}
	miss := CLI{}.Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: 1, Stderr: readTestdata(t, "missing-session.stderr")})
	if miss.Succeeded || miss.NativeSessionID != "" || miss.Text != "Error: No session, task, or name matched 'e35b8461-156a-408c-81ac-3204d1ae7282'." {
		t.Fatalf("Parse(missing session) = %+v", miss)
	}
	// exit 0 but the result says 1: not a success.
	bad := []byte(`{"type":"result","timestamp":"t","sessionId":"x","exitCode":1,"usage":{}}` + "\n")
	if got := (CLI{}).Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, Stdout: bad}); got.Succeeded {
		t.Fatalf("Parse(result exitCode 1) = %+v", got)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name           string
		exit           int
		stdout, stderr string
		want           agents.FallbackReason
	}{
		{"1.0.102 unknown id (recorded)", 1, "", string(readTestdata(t, "missing-session.stderr")), agents.FallbackStateMissing},
		{"1.0.50 unknown id", 1, "", "Error: No session, task, or name matched 'my-task-1'.\n", agents.FallbackStateMissing},
		{"ambiguous name", 1, "", "Error: Multiple sessions match the name 'my-task-CP'.\nMatching sessions:\n  a\n  b\nSpecify the session ID directly: copilot --resume=<id>\n", agents.FallbackRefused},
		{"non-UUID --session-id (fresh only)", 1, "", "Error: No session or task matched 'my-task-1'.\nThe value is not a valid UUID, so a new session cannot be created.\n", agents.FallbackNone},
		{"1.0.50 has no --session-id (fresh only)", 1, "", "error: unknown option '--session-id=0cb916db-26aa-40f2-86b5-1ba81b225fd2'\n", agents.FallbackNone},
		{"not authenticated", 1, "", "Error: No authentication information found.\nCopilot can be authenticated with GitHub using an OAuth Token or a Fine-Grained Personal Access Token.\n", agents.FallbackNone},
		{"classic PAT", 1, "", "Error: Classic Personal Access Tokens (ghp_) are not supported by Copilot.\n", agents.FallbackNone},
		{"no network", 1, "", "Error: Authentication token found but could not be validated.\n  Failed to fetch PAT user login: network fetch failed: x\nYour token may still be valid. Check your network connection and try again.\n", agents.FallbackNone},
		{"provider 401 (recorded)", 1, string(readTestdata(t, "api-401.stdout.jsonl")), "", agents.FallbackNone},
		{"crash", 134, "", "Segmentation fault\n", agents.FallbackNone},
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
	if v, err := (CLI{}).Descriptor().ParseVersion([]byte("GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n"), nil); err != nil || v.String() != "1.0.102" {
		t.Fatalf("ParseVersion = %v, %v", v, err)
	}
}
