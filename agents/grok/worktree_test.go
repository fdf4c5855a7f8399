package grok

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

// TestRealWorktreeHoldsOnlyTheChange: after a real run in a git working
// copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	clitest.CleanWorktree{
		Adapter: a, Runner: clitest.Host(t), Mock: mock, Timeout: 3 * time.Minute,
		Env: clitest.Env(bin, map[string]string{"GROK_API_KEY": "mock-provider-key", "GROK_BASE_URL": mock.URL + "/v1", "GROK_MODEL": "grok-code-fast-1"}),
	}.Check(t)
}
