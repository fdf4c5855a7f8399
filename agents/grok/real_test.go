package grok

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

// Tests against the real CLI, installed by scripts/agent-clis.sh and found
// through ALFRED_AGENT_CLIS_BIN.

// TestRealRun runs the real grok headless through the adapter against the
// mock model server (OpenAI chat completions at GROK_BASE_URL): an answer
// succeeds, an HTTP 401 (which grok reports with exit 0) fails.
func TestRealRun(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		status int
		want   agents.Outcome
		text   string
	}{
		{"answer", 0, agents.OutcomeSucceeded, "ok"},
		{"HTTP 401", 401, agents.OutcomeFailed, "Sorry, I encountered an error: Grok API error: 401 invalid x-api-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := mockllm.Start(mockllm.Options{Status: tc.status})
			defer mock.Close()
			ws := t.TempDir()
			res, err := a.Run(context.Background(), agents.Request{
				Prompt: "--- Say ok.\n-rf", Phase: agents.PhaseDevelopment, Model: "grok-code-fast-1", Timeout: 3 * time.Minute,
				Runner: clitest.Host(t),
				Sandbox: sandbox.Spec{
					Workdir: sandbox.WorkspacePath, Worktree: &sandbox.Mount{Host: ws, Container: sandbox.WorkspacePath},
					Env: clitest.Env(bin, map[string]string{"GROK_API_KEY": "mock-provider-key", "GROK_BASE_URL": mock.URL + "/v1"}),
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.want || res.Text != tc.text || res.NativeSessionID != "" || len(res.Attempts) != 1 {
				t.Fatalf("result %+v\nstdout %s\nstderr %s", res, res.Stdout, res.Stderr)
			}
			reqs := mock.Requests()
			if len(reqs) == 0 || reqs[0].Model != "grok-code-fast-1" || reqs[0].LastUserText != "--- Say ok.\n-rf" {
				t.Fatalf("mock saw %+v, want the prompt verbatim", reqs)
			}
		})
	}
}

// TestRealWorktreeHoldsOnlyTheChange: after a real run in a git working
// copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	clitest.CleanWorktree{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, func(m *clitest.Mocked) {
		maps.Copy(m.Env, map[string]string{"GROK_API_KEY": "mock-provider-key", "GROK_BASE_URL": m.Mock.URL + "/v1", "GROK_MODEL": "grok-code-fast-1"})
		m.Timeout = 3 * time.Minute
	})}.Check(t)
}
