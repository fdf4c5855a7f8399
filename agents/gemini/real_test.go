package gemini

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

// Tests against the real CLI, installed by scripts/agent-clis.sh and found
// through ALFRED_AGENT_CLIS_BIN.

func TestRealVersion(t *testing.T) {
	clitest.RealVersion(t, CLI{}, Executable, "0.61.0")
}

// TestRealMissingSession resumes a random UUID in a home without sessions:
// the real binary's output must classify as state_missing (no credentials
// needed: the lookup comes before authentication).
func TestRealMissingSession(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	got, res := clitest.ResumeMissing(t, CLI{}, bin, uuid.NewString(), CLI{}.Descriptor().FixedEnv)
	if got != agents.FallbackStateMissing {
		t.Fatalf("Classify = %q, want state_missing; exit %d stdout %q stderr %q", got, res.ExitCode, res.Stdout, res.Stderr)
	}
}

// apiKeyAuth writes the user settings that select Gemini API key auth:
// GOOGLE_GEMINI_BASE_URL alone selects the "gateway" auth type, which
// headless runs reject ("Invalid auth method selected.", exit 41). In the
// container this file comes with the credential mounts.
func apiKeyAuth(home string) error {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o600)
}

// TestRealRoundTrip: fresh, resumed (the mock sees the earlier messages),
// and silently fresh again after the state folder was emptied. The model is
// named: with the default "auto" model, Gemini first asks a router model for
// a JSON classification, which the mock does not give, and retries for ~80 s.
func TestRealRoundTrip(t *testing.T) {
	bin, mock, a := clitest.Real(t, Executable, CLI{})
	runner := clitest.Host(t)
	runner.Setup = apiKeyAuth
	clitest.RoundTrip{
		Adapter: modelled{a, "gemini-2.5-flash"}, Runner: runner, Mock: mock, Timeout: 3 * time.Minute,
		Env:     clitest.Env(bin, map[string]string{"GOOGLE_GEMINI_BASE_URL": mock.URL, "GEMINI_API_KEY": "mock-provider-key"}),
		ValidID: func(id string) error { _, err := uuid.Parse(id); return err },
	}.Check(t)
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
