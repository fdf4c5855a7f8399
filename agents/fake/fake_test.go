package fake

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

func TestSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	a, err := New(Options{ResumableSessions: true, Reply: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Capabilities(); !c.ResumableSessions || c.SessionStatePath != SessionStatePath {
		t.Fatalf("capabilities = %+v", c)
	}

	first, err := a.Run(ctx, agents.Request{Prompt: "p", Session: &agents.SessionRef{Name: "agent/issue-1-x", FreshReason: agents.FallbackNoPriorSession}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(first.NativeSessionID); err != nil || first.Resumed || first.ResumeFallback != agents.FallbackNoPriorSession || first.Text != "done" {
		t.Fatalf("fresh result = %+v", first)
	}

	second, err := a.Run(ctx, agents.Request{Prompt: "p", Session: &agents.SessionRef{Name: "agent/issue-1-x", ResumeID: first.NativeSessionID}})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Resumed || second.NativeSessionID != first.NativeSessionID || second.ResumeFallback != "" {
		t.Fatalf("resume result = %+v", second)
	}

	a.RefuseNextResume()
	third, err := a.Run(ctx, agents.Request{Prompt: "p", Session: &agents.SessionRef{Name: "agent/issue-1-x", ResumeID: first.NativeSessionID}})
	if err != nil {
		t.Fatal(err)
	}
	if third.Resumed || third.ResumeFallback != agents.FallbackRefused || third.Outcome != agents.OutcomeSucceeded ||
		third.NativeSessionID == first.NativeSessionID || len(third.Attempts) != 2 {
		t.Fatalf("refused resume result = %+v", third)
	}

	a.MissNextResume()
	fourth, err := a.Run(ctx, agents.Request{Prompt: "p", Session: &agents.SessionRef{Name: "n", ResumeID: third.NativeSessionID}})
	if err != nil {
		t.Fatal(err)
	}
	if fourth.ResumeFallback != agents.FallbackStateMissing || fourth.Outcome != agents.OutcomeSucceeded {
		t.Fatalf("missing resume result = %+v", fourth)
	}

	a.FailNext("Invalid API key")
	fifth, err := a.Run(ctx, agents.Request{Prompt: "p", Session: &agents.SessionRef{Name: "n", ResumeID: fourth.NativeSessionID}})
	if err != nil {
		t.Fatal(err)
	}
	if fifth.Outcome != agents.OutcomeFailed || fifth.ResumeFallback != "" || len(fifth.Attempts) != 1 || fifth.Text != "Invalid API key" {
		t.Fatalf("ambiguous failure result = %+v", fifth)
	}

	if got := len(a.Requests()); got != 5 {
		t.Fatalf("recorded %d requests, want 5", got)
	}
	if got := len(a.Specs()); got != 7 {
		t.Fatalf("recorded %d attempts, want 7", got)
	}
}

func TestNoSessionPath(t *testing.T) {
	a, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agents.Request{Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeSucceeded || res.Text != "ok" || res.NativeSessionID != "" || res.Resumed || res.ResumeFallback != "" {
		t.Fatalf("result = %+v", res)
	}
	spec := a.Specs()[0]
	want := []string{Executable, "--print", "--output-format", "json", "--", "hello"}
	if len(spec.Argv) != len(want) || spec.Session != nil {
		t.Fatalf("argv = %q session = %+v, want %q and no mount", spec.Argv, spec.Session, want)
	}
	if _, err := a.Run(context.Background(), agents.Request{Prompt: "p", Session: &agents.SessionRef{Name: "n"}}); err == nil {
		t.Fatal("a non-resumable fake accepted a session reference")
	}
}

// execRunner runs argv directly (a stand-in for the host runner in this test).
type execRunner struct{}

func (execRunner) Name() string { return "exec" }
func (execRunner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	start := time.Now()
	cmd := exec.CommandContext(ctx, spec.Argv[0], spec.Argv[1:]...)
	err := cmd.Run()
	res := &sandbox.Result{Outcome: sandbox.OutcomeExited, Started: start, Duration: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		res.ExitCode = ee.ExitCode()
	} else if err != nil {
		return nil, err
	}
	return res, nil
}

func TestExecRunsThroughRunner(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("this test needs the `true` command: %v", err)
	}
	if _, err := os.Stat(truePath); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Exec: []string{truePath}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agents.Request{Prompt: "p", Runner: execRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeSucceeded || res.Attempts[0].Duration <= 0 {
		t.Fatalf("result = %+v, want success with the exec's duration", res)
	}
	if _, err := a.Run(context.Background(), agents.Request{Prompt: "p"}); err == nil {
		t.Fatal("Exec without a runner: no error")
	}
}
