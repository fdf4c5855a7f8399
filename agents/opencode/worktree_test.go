package opencode

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	clitest.CleanWorktree{
		Adapter: a, Runner: clitest.Host(t), Mock: mock, Timeout: 3 * time.Minute,
		Env: clitest.Env(bin, offered(map[string]string{"OPENCODE_CONFIG_CONTENT": mockConfig(mock.URL)})),
	}.Check(t)
}
