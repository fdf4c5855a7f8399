package gemini

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	mock := mockllm.Start(mockllm.Options{})
	defer mock.Close()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	runner := clitest.Host(t)
	runner.Setup = apiKeyAuth
	clitest.CleanWorktree{
		Adapter: modelled{a, "gemini-2.5-flash"}, Runner: runner, Mock: mock, Timeout: 3 * time.Minute,
		Env: clitest.Env(bin, map[string]string{"GOOGLE_GEMINI_BASE_URL": mock.URL, "GEMINI_API_KEY": "mock-provider-key"}),
	}.Check(t)
}
