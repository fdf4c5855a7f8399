package bot

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// TestStalledClaudeCodeInDocker: the real Claude Code of the agent image
// (ALFRED_TEST_AGENT_IMAGE) runs unsealed (AGENT_NETWORK host: it reaches
// the mock model on the host's loopback with its own key) and streams its
// events. The mock has it call Bash once, then holds the answer to the
// request carrying the call's result open (mockllm.Options.HoldAfter):
// nothing comes on the stream any more. The watchdog stops the CLI about
// AGENT_STALL_TIMEOUT and a tick after that request; the run is recorded
// stalled, its outcome naming the last step the agent took, and the thread
// says it.
func TestStalledClaudeCodeInDocker(t *testing.T) {
	t.Parallel()
	runner, image := agentImageRunner(t)
	stalledClaude(t, func(cfg *Config) { inAgentImage(cfg, runner, image, nil) })
}

// TestStalledClaudeCodeOnHost: the same on the host runner, with the real
// Claude Code of ALFRED_AGENT_CLIS_BIN: the host runner feeds the live
// output as the image runner does, so the watchdog sees the same stream.
func TestStalledClaudeCodeOnHost(t *testing.T) {
	t.Parallel()
	bin := requireEnv(t, "ALFRED_AGENT_CLIS_BIN", "run scripts/agent-clis.sh and export what it prints")
	home := t.TempDir()
	stalledClaude(t, func(cfg *Config) {
		cfg.Runner = sandbox.NewHostRunner(sandbox.HostOptions{})
		cfg.Sandbox.Env = map[string]string{"HOME": home, "PATH": bin + ":/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
	})
}

// stalledClaude runs an analysis with the real Claude Code, unsealed, on
// the runner and in the environment place sets up, against a mock model
// that has it call Bash once and then holds its next answer open, and
// checks the stall.
func stalledClaude(t *testing.T, place func(cfg *Config)) {
	t.Helper()
	const command = "echo hello-from-tool"
	mock := mockllm.Start(mockllm.Options{Shell: command, HoldAfter: 1})
	t.Cleanup(mock.Close)
	claude, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 15 * time.Second
	h := newHarness(t, func(s *setup) {
		s.adapters[claudecode.ID] = claude
		s.settings = append(s.settings, projectSetting("AGENT_ADAPTER", claudecode.ID), projectSetting("RUN_TIMEOUT", "5m"),
			projectSetting("AGENT_NETWORK", "host"), projectSetting("AGENT_STALL_TIMEOUT", timeout.String()))
	})
	h.engine.Close()
	cfg := h.engine.cfg
	place(&cfg)
	maps.Copy(cfg.Sandbox.Env, map[string]string{"ANTHROPIC_BASE_URL": mock.URL, "ANTHROPIC_API_KEY": "sk-ant-unsealed-0123456789", "CLAUDE_CODE_MAX_RETRIES": "0"})
	cfg.Seal = nil // a network chosen: the run is unsealed, only its stream shows its activity
	h.startWith(cfg)

	held := make(chan time.Time, 1)
	go func() { // when the model stopped answering: the second request
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if len(mock.Requests()) >= 2 {
				held <- time.Now()
				return
			}
		}
	}()
	run := h.stalledRun()
	why := "the agent stalled: no output for 15s after the result of a call of Bash `" + command + "`, so Alfred stopped it (AGENT_STALL_TIMEOUT)"
	if run.Status != state.RunFailed || !run.Stalled || !strings.HasPrefix(run.Outcome, why) {
		t.Fatalf("run: status %s stalled %v outcome %q, want %q\nlog:\n%s", run.Status, run.Stalled, run.Outcome, why, run.Log)
	}
	var since time.Duration
	select {
	case at := <-held:
		since = run.FinishedAt.Sub(at)
	default:
		t.Fatalf("the mock saw %d requests: it never held an answer", len(mock.Requests()))
	}
	// Stopped about a timeout and a tick (15s/8) after the model went
	// quiet; the rest is the container's end and the record.
	if since < timeout-time.Second || since > timeout+2*time.Second+20*time.Second {
		t.Errorf("the run ended %s after the model stopped answering, want about %s", since, timeout)
	}
	if body := h.commentOf(7, lifecycle.KindBlocked); !strings.Contains(body, why) {
		t.Errorf("blocked comment:\n%s", body)
	}
	t.Logf("stalled %s after the held request: %s", since.Round(time.Millisecond), run.Outcome)
}
