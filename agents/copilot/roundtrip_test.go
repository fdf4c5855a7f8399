package copilot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

func inRange(t *testing.T, v string) bool {
	t.Helper()
	c, err := semver.NewConstraint(VerifiedRange)
	if err != nil {
		t.Fatal(err)
	}
	return c.Check(semver.MustParse(v))
}

// sharedCache makes every fresh HOME share one ~/.cache, so that Copilot
// unpacks its package once per test instead of once per run.
func sharedCache(t *testing.T) func(home string) {
	cache := t.TempDir()
	return func(home string) {
		if err := os.Symlink(cache, filepath.Join(home, ".cache")); err != nil {
			t.Fatal(err)
		}
	}
}

// sessionIDArg returns the --session-id value of the n-th run (0-based).
func sessionIDArg(t *testing.T, r *homeRunner, n int) string {
	t.Helper()
	if n >= len(r.argvs) {
		t.Fatalf("only %d runs", len(r.argvs))
	}
	for _, a := range r.argvs[n] {
		if id, ok := strings.CutPrefix(a, "--session-id="); ok {
			return id
		}
	}
	t.Fatalf("run %d has no --session-id: %q", n, r.argvs[n])
	return ""
}

// TestRealMissingSession resumes an id that does not exist: the real binary's
// output must classify as state_missing (no credentials needed: the lookup comes
// before authentication).
func TestRealMissingSession(t *testing.T) {
	bin := cliBin(t, Executable)
	ws := t.TempDir()
	spec := sandbox.Spec{
		Workdir: sandbox.WorkspacePath, Worktree: &sandbox.Mount{Host: ws, Container: sandbox.WorkspacePath},
		Argv:    CLI{}.Argv(agents.Invocation{Mode: agents.ModeResume, Prompt: "hello", SessionName: "agent/issue-1-x", SessionID: CLI{}.NewSessionID()}),
		Env:     map[string]string{"HOME": t.TempDir(), "PATH": hostPath(t, bin), "COPILOT_AUTO_UPDATE": "false"},
		Timeout: 2 * time.Minute,
	}
	res, err := sandbox.NewHostRunner(sandbox.HostOptions{}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != sandbox.OutcomeExited {
		t.Fatalf("outcome %s; stderr %q", res.Outcome, res.Stderr)
	}
	if out := (CLI{}).Parse(res); out.Succeeded {
		t.Fatalf("resume of a missing session parsed as a success: %+v", out)
	}
	if got := (CLI{}).Classify(res); got != agents.FallbackStateMissing {
		t.Fatalf("Classify = %q, want state_missing; exit %d stdout %q stderr %q", got, res.ExitCode, res.Stdout, res.Stderr)
	}
}

// roundTripPrompt starts with dashes and spans lines, to prove that the argv
// carries it whole.
const roundTripPrompt = "--- Say ok.\n-rf"

// TestRealRoundTrip runs Copilot (BYOK, offline) against the mock model server through the
// shared flow: without a session, fresh, resumed (the mock sees the earlier
// messages), and after the state folder was emptied (silent fresh fallback).
func TestRealRoundTrip(t *testing.T) {
	bin := cliBin(t, Executable)
	mock := mockllm.Start(mockllm.Options{Reply: "ok"})
	defer mock.Close()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	runner := &homeRunner{t: t, inner: sandbox.NewHostRunner(sandbox.HostOptions{}), seed: sharedCache(t)}
	req := func(s *agents.SessionRef) agents.Request {
		return agents.Request{
			Prompt: roundTripPrompt, Phase: agents.PhaseDevelopment, Provider: "openai", Model: "mock-model", Timeout: 4 * time.Minute,
			Runner: runner, Session: s,
			Sandbox: sandbox.Spec{
				Workdir: sandbox.WorkspacePath, Worktree: &sandbox.Mount{Host: ws, Container: sandbox.WorkspacePath},
				Env: map[string]string{
					"HOME": agents.AgentHome, "PATH": hostPath(t, bin), "LANG": "C.UTF-8", "TERM": "dumb",
					"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": mock.URL + "/v1",
					"COPILOT_PROVIDER_API_KEY": "mock-provider-key",
					"ALFRED_SECRET":            "never passed",
				},
			},
		}
	}
	ctx := context.Background()
	run := func(name string, s *agents.SessionRef) *agents.Result {
		t.Helper()
		res, err := a.Run(ctx, req(s))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Outcome != agents.OutcomeSucceeded || res.Text != "ok" {
			t.Fatalf("%s: outcome %s text %q\nstdout %s\nstderr %s\nunhandled %v", name, res.Outcome, res.Text, res.Stdout, res.Stderr, mock.Unhandled())
		}
		return res
	}
	lastMessages := func() int {
		reqs := mock.Requests()
		if len(reqs) == 0 {
			t.Fatal("the mock got no request")
		}
		return reqs[len(reqs)-1].Messages
	}

	none := run("no session", nil)
	if none.NativeSessionID != "" || none.Resumed || none.ResumeFallback != "" {
		t.Fatalf("no session: session fields set: %+v", none)
	}

	name := "agent/issue-7-fix-login"
	fresh := run("fresh", &agents.SessionRef{Name: name, HostStateDir: state, FreshReason: agents.FallbackNoPriorSession})
	if fresh.Resumed || fresh.ResumeFallback != agents.FallbackNoPriorSession {
		t.Fatalf("fresh: %+v", fresh)
	}
	if want := sessionIDArg(t, runner, 1); fresh.NativeSessionID != want {
		t.Fatalf("fresh: native id %q, want the --session-id the adapter chose, %q", fresh.NativeSessionID, want)
	}
	yaml, err := os.ReadFile(filepath.Join(state, fresh.NativeSessionID, "workspace.yaml"))
	if err != nil {
		t.Fatalf("fresh run left no session in the state folder: %v", err)
	}
	if !strings.Contains(string(yaml), name) {
		t.Fatalf("the session is not labelled %q:\n%s", name, yaml)
	}
	freshMessages := lastMessages()
	sawPrompt := false
	for _, r := range mock.Requests() {
		sawPrompt = sawPrompt || strings.Contains(r.LastUserText, roundTripPrompt)
	}
	if !sawPrompt {
		t.Fatalf("no request carried the prompt %q: %+v", roundTripPrompt, mock.Requests())
	}

	resumed := run("resume", &agents.SessionRef{Name: name, HostStateDir: state, ResumeID: fresh.NativeSessionID})
	if !resumed.Resumed || resumed.NativeSessionID != fresh.NativeSessionID || resumed.ResumeFallback != "" {
		t.Fatalf("resume: %+v", resumed)
	}
	if got := lastMessages(); got <= freshMessages {
		t.Fatalf("resumed request carries %d messages, the fresh one %d: history not loaded", got, freshMessages)
	}

	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	fallback := run("resume after the state was deleted", &agents.SessionRef{Name: name, HostStateDir: state, ResumeID: fresh.NativeSessionID})
	if fallback.Resumed || fallback.ResumeFallback != agents.FallbackStateMissing || len(fallback.Attempts) != 2 ||
		fallback.Attempts[0].Fallback != agents.FallbackStateMissing || fallback.NativeSessionID == "" ||
		fallback.NativeSessionID == fresh.NativeSessionID {
		t.Fatalf("fallback: %+v", fallback)
	}
	if got := lastMessages(); got != freshMessages {
		t.Fatalf("fallback request carries %d messages, want a fresh conversation's %d", got, freshMessages)
	}
}
