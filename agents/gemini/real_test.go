package gemini

import (
	"context"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// Tests against the real CLI, installed by scripts/agent-clis.sh and found
// through ALFRED_AGENT_CLIS_BIN.

// onMock points Gemini at the mock model: GOOGLE_GEMINI_BASE_URL, with the
// settings that select API key auth, which it needs: the adapter's own
// (HomeFiles, which the engine mounts in a container). The model is named: with the default
// "auto" model, Gemini first asks a router model for a JSON classification,
// which the mock does not give, and retries for ~80 s.
func onMock(m *clitest.Mocked) {
	m.Adapter = modelled{m.Adapter, "gemini-2.5-flash"}
	m.Env["GOOGLE_GEMINI_BASE_URL"], m.Env["GEMINI_API_KEY"] = m.Mock.URL, "mock-provider-key"
	m.Runner.Setup = clitest.HomeFile(".gemini/settings.json", CLI{}.HomeFiles(m.Env)[SettingsPath])
	m.Timeout = 3 * time.Minute
}

// TestRealRoundTrip: fresh, resumed (the mock sees the earlier messages),
// and silently fresh again after the state folder was emptied.
func TestRealRoundTrip(t *testing.T) {
	clitest.RoundTrip{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, onMock), ValidID: clitest.UUID}.Check(t)
}

// TestRealWorktreeHoldsOnlyTheChange: after real runs (no session, fresh,
// resumed) in a git working copy, asked for no change, git status is empty.
func TestRealWorktreeHoldsOnlyTheChange(t *testing.T) {
	clitest.CleanWorktree{Mocked: clitest.Real(t, CLI{}, mockllm.Options{}, onMock)}.Check(t)
}

// modelled sets the model of every request.
type modelled struct {
	agents.Adapter
	model string
}

func (m modelled) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	req.Model = m.model
	return m.Adapter.Run(ctx, req)
}
