package claudecode

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy where the model has Claude Code write one
// new file per prompt, git status lists those files and nothing else.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	dir := clitest.GitWorktree(t)
	mock := mockllm.Start(mockllm.Options{Reply: "done", WriteDir: dir})
	defer mock.Close()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	clitest.CleanWorktree{
		Adapter: a, Runner: clitest.Host(t), Mock: mock, Dir: dir, Asked: []string{"greeting-*.txt"},
		Env: clitest.Env(bin, map[string]string{"ANTHROPIC_BASE_URL": mock.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}),
	}.Check(t)
}
