package gemini

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	runner := clitest.Host(t)
	runner.Setup = apiKeyAuth
	clitest.CleanWorktree{
		Adapter: modelled{a, "gemini-2.5-flash"}, Runner: runner, Mock: mock, Timeout: 3 * time.Minute,
		Env: clitest.Env(bin, map[string]string{"GOOGLE_GEMINI_BASE_URL": mock.URL, "GEMINI_API_KEY": "mock-provider-key"}),
	}.Check(t)
}
