package codex

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	runner := clitest.Host(t)
	runner.Setup = func(home string) error { return writeConfig(home, mock.URL) }
	clitest.CleanWorktree{
		Adapter: a, Runner: runner, Mock: mock,
		Env: clitest.Env(bin, map[string]string{"OPENAI_API_KEY": "sk-test"}),
	}.Check(t)
}
