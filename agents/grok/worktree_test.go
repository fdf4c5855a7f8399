package grok

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// TestRealWorktreeHoldsOnlyTheChange: after a real run in a git working
// copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	mock := mockllm.Start(mockllm.Options{})
	defer mock.Close()
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	clitest.CleanWorktree{
		Adapter: a, Runner: clitest.Host(t), Mock: mock, Timeout: 3 * time.Minute,
		Env: clitest.Env(bin, map[string]string{"GROK_API_KEY": "mock-provider-key", "GROK_BASE_URL": mock.URL + "/v1", "GROK_MODEL": "grok-code-fast-1"}),
	}.Check(t)
}
