package claudecode

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

func TestGoldenArgv(t *testing.T) {
	const id = "3f0e2b1c-5d6a-4e7f-8a9b-0c1d2e3f4a5b"
	golden := map[string]any{"verified_range": VerifiedRange, "session_state_path": SessionStatePath}
	for _, phase := range []agents.Phase{agents.PhaseDevelopment, agents.PhaseAnalysis} {
		for _, mode := range []agents.Mode{agents.ModeNone, agents.ModeFresh, agents.ModeResume} {
			inv := agents.Invocation{Mode: mode, Prompt: "Fix the bug.\n-- full context --", Phase: phase, Model: "claude-sonnet-4-5"}
			if mode != agents.ModeNone {
				inv.SessionName, inv.SessionID = "agent/issue-7-add-a-name", id
			}
			golden[string(phase)+"/"+string(mode)] = CLI{}.Argv(inv)
		}
	}
	clitest.GoldenJSON(t, filepath.Join("testdata", "golden", "argv.json"), golden)
}

func TestNewSessionIDIsRandomUUID(t *testing.T) {
	a, b := CLI{}.Descriptor().NewSessionID(), CLI{}.Descriptor().NewSessionID()
	if _, err := uuid.Parse(a); err != nil || a == b {
		t.Fatalf("NewSessionID() = %q, %q: want two different UUIDs", a, b)
	}
}

func TestParseRecorded(t *testing.T) {
	tests := []struct {
		name      string
		succeeded bool
		id        string
		text      string
	}{
		{"fresh", true, "76a2062b-293b-4d4d-8665-efcc80a7e202", "ok"},
		{"resume", true, "76a2062b-293b-4d4d-8665-efcc80a7e202", "ok"},
		{"resume-missing", false, "", "No conversation found with session ID: 11111111-2222-4333-8444-555555555555"},
		{"resume-missing-stream", false, "11111111-2222-4333-8444-555555555555", "No conversation found with session ID: 11111111-2222-4333-8444-555555555555"},
		{"resume-not-logged-in", false, "76a2062b-293b-4d4d-8665-efcc80a7e202", "Not logged in · Please run /login"},
		{"resume-network-refused", false, "76a2062b-293b-4d4d-8665-efcc80a7e202", "API Error: Unable to connect to API (ConnectionRefused)"},
		{"fresh-id-in-use", false, "", "Error: Session ID 76a2062b-293b-4d4d-8665-efcc80a7e202 is already in use."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := CLI{}.Parse(clitest.Recorded(t, "testdata", tt.name))
			if out.Succeeded != tt.succeeded || out.NativeSessionID != tt.id || out.Text != tt.text {
				t.Fatalf("Parse = %+v, want succeeded=%v id=%q text=%q", out, tt.succeeded, tt.id, tt.text)
			}
		})
	}
	out := CLI{}.Parse(clitest.Recorded(t, "testdata", "fresh"))
	if out.InputTokens != 10 || out.OutputTokens != 1 || out.CostUSD <= 0 {
		t.Fatalf("usage = %d/%d $%v, want 10/1 and a cost", out.InputTokens, out.OutputTokens, out.CostUSD)
	}
}

func TestClassify(t *testing.T) {
	// Recorded from 2.1.197 (testdata/) and messages quoted in agents-cli-facts.md.
	recorded := map[string]agents.FallbackReason{
		"resume-missing":         agents.FallbackStateMissing,
		"resume-missing-stream":  agents.FallbackStateMissing,
		"resume-not-logged-in":   agents.FallbackNone,
		"resume-network-refused": agents.FallbackNone,
		"fresh-invalid-id":       agents.FallbackNone,
		"fresh-id-in-use":        agents.FallbackNone,
	}
	for name, want := range recorded {
		if got := (CLI{}).Classify(clitest.Recorded(t, "testdata", name)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", name, got, want)
		}
	}
	facts := []struct {
		stdout, stderr string
		want           agents.FallbackReason
	}{
		{"", "No conversation found with session ID: 5b0f2c2e-1111-4a4a-9b9b-123456789abc\n", agents.FallbackStateMissing},
		{"", `Error: --resume requires a valid session ID or session title when used with --print. Usage: claude -p --resume <session-id|title>. Provided value "my-task-1" is not a UUID and does not match any session title.`, agents.FallbackStateMissing},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Fix external API key","session_id":"x"}`, "", agents.FallbackNone},
		{`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"x"}`, "", agents.FallbackNone},
		{"", "Segmentation fault\n", agents.FallbackNone},
	}
	for _, f := range facts {
		res := clitest.Result(1, f.stdout, f.stderr)
		if got := (CLI{}).Classify(res); got != f.want {
			t.Errorf("Classify(stdout=%q stderr=%q) = %q, want %q", f.stdout, f.stderr, got, f.want)
		}
	}
}

func TestRealVersion(t *testing.T) {
	clitest.RealVersion(t, CLI{}, Executable, "2.1.197")
}

func TestRealRoundTrip(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	mock := mockllm.Start(mockllm.Options{Reply: "ok"})
	defer mock.Close()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	clitest.RoundTrip{
		Adapter: a,
		Runner:  clitest.Host(t),
		Mock:    mock,
		Phase:   agents.PhaseDevelopment,
		Env: clitest.Env(bin, map[string]string{
			"ANTHROPIC_BASE_URL": mock.URL,
			"ANTHROPIC_API_KEY":  "sk-ant-test",
			"UNLISTED_SECRET":    "must not reach the CLI",
		}),
		ValidID: func(s string) error { _, err := uuid.Parse(s); return err },
	}.Check(t)
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

func TestRealResumeMissingIsStateMissing(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	got, res := clitest.ResumeMissing(t, CLI{}, bin, uuid.NewString(), nil) // no credentials: the lookup comes first
	if got != agents.FallbackStateMissing || (CLI{}).Parse(res).Succeeded {
		t.Fatalf("Classify = %q, want state_missing\nrc %d stdout %s\nstderr %s", got, res.ExitCode, res.Stdout, res.Stderr)
	}
}
