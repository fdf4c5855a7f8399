package copilot

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
	runner.Setup = sharedCache(t)
	clitest.CleanWorktree{
		Adapter: a, Runner: runner, Mock: mock, Env: byok(bin, mock), Timeout: 3 * time.Minute,
	}.Check(t)
}
