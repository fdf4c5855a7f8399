package codex

import (
	"testing"

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
	runner.Setup = func(home string) error { return writeConfig(home, mock.URL) }
	clitest.CleanWorktree{
		Adapter: a, Runner: runner, Mock: mock,
		Env: clitest.Env(bin, map[string]string{"OPENAI_API_KEY": "sk-test"}),
	}.Check(t)
}
