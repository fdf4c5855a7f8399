package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// TestDecideStalledRunBlocksAtOnce: a stalled run blocks its mailbox with
// its outcome in the comment, retries left or not; another failure retries.
func TestDecideStalledRunBlocksAtOnce(t *testing.T) {
	why := "the agent stalled: no output and no model request for 2m0s, so Alfred stopped it (AGENT_STALL_TIMEOUT); check the CLI's provider settings"
	r := lifecycle.Rules{LLMRetries: 2}
	tests := []struct {
		name    string
		run     state.Run
		step    lifecycle.Step
		blocked bool
	}{
		{"stalled", state.Run{Status: state.RunFailed, Stalled: true, Outcome: why}, lifecycle.StepBlocked, true},
		{"failed otherwise", state.Run{Status: state.RunFailed, Outcome: "crash"}, lifecycle.StepRunFailed, false},
		{"canceled", state.Run{Status: state.RunCanceled, Stalled: true, Outcome: "canceled: finish"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run.ID, tt.run.Phase = "run-1", string(agents.PhaseDevelopment)
			mb := state.Mailbox{Status: string(lifecycle.StatusInDevelopment), ActiveRunID: "run-1"}
			got, a := lifecycle.DecideRunEnd(mb, tt.run, r)
			if a.Step != tt.step || got.ActiveRunID != "" {
				t.Errorf("step %q, active run %q", a.Step, got.ActiveRunID)
			}
			if said := a.Say != nil && a.Say.Kind == lifecycle.KindBlocked && strings.Contains(a.Say.Text, why); said != tt.blocked {
				t.Errorf("blocked comment %+v", a.Say)
			}
		})
	}
}

// reportingOnHost is onHost for an adapter that says its CLI prints as it
// works, so that its silence is watched without a gateway.
type reportingOnHost struct{ onHost }

func (reportingOnHost) ReportsProgress() bool { return true }

// stallHarness is a harness whose fake agent runs exec on the host with
// AGENT_STALL_TIMEOUT=1s (long enough that a loaded machine's slow process
// start is no stall); reporting says whether the adapter declares
// that its CLI prints as it works.
func stallHarness(t *testing.T, reporting bool, exec ...string) *harness {
	t.Helper()
	fa, err := fake.New(fake.Options{Reply: analysisReply, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, func(s *setup) {
		s.runner = "host"
		s.adapter = &scripted{Adapter: fa}
		s.wrap = func(a agents.Adapter) agents.Adapter {
			if reporting {
				return reportingOnHost{onHost{a}}
			}
			return onHost{a}
		}
		s.settings = append(s.settings, projectSetting("AGENT_STALL_TIMEOUT", "1s"))
	})
}

// TestStalledAgentIsStoppedAndSaid: a CLI that prints nothing is stopped
// long before its sleep ends; the run failed (not canceled), the mailbox
// blocks at once (LLM_MAX_RETRIES is 2) and the thread says why.
func TestStalledAgentIsStoppedAndSaid(t *testing.T) {
	t.Parallel()
	h := stallHarness(t, true, "sleep", "30")
	run := h.stalledRun()
	const why = "the agent stalled: no output for 1s, so Alfred stopped it (AGENT_STALL_TIMEOUT)"
	if run.Status != state.RunFailed || !run.Stalled || !strings.HasPrefix(run.Outcome, why) {
		t.Errorf("run: status %s stalled %v outcome %q", run.Status, run.Stalled, run.Outcome)
	}
	if d := run.FinishedAt.Sub(run.StartedAt); d >= 30*time.Second {
		t.Errorf("the run lasted %s: it was not stopped before its sleep ended", d)
	}
	if body := h.commentOf(7, lifecycle.KindBlocked); !strings.Contains(body, why) {
		t.Errorf("blocked comment:\n%s", body)
	}
}

// stalledRun assigns issue 7 and is its one run once its mailbox is
// blocked: a stall is not retried.
func (h *harness) stalledRun() state.Run {
	h.t.Helper()
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusBlocked)
	runs := mustRuns(h.t, h.store, mb.ID)
	if len(runs) != 1 {
		h.t.Fatalf("%d runs, want 1: a stall is not retried", len(runs))
	}
	return runs[0]
}

// TestAgentsThatShowLifeAreNotStopped: a CLI that keeps printing is not
// stopped, nor a silent one whose adapter does not say it prints as it
// works (Grok prints at its end) and that has no gateway.
func TestAgentsThatShowLifeAreNotStopped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reporting bool
		exec      []string
	}{
		{"it keeps printing", true, []string{"sh", "-c", "i=0; while [ $i -lt 30 ]; do echo tick; sleep 0.1; i=$((i+1)); done"}}, // 3 s, past the timeout
		{"its silence says nothing", false, []string{"sleep", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := stallHarness(t, tt.reporting, tt.exec...)
			h.assign(7)
			mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
			for _, run := range mustRuns(t, h.store, mb.ID) {
				if run.Status != state.RunSucceeded || run.Stalled {
					t.Errorf("run: status %s stalled %v outcome %q", run.Status, run.Stalled, run.Outcome)
				}
			}
		})
	}
}

// commentOf is the body of the issue's comment of kind.
func (h *harness) commentOf(iid int64, kind string) string {
	comments, _ := h.forge.Comments(context.Background(), h.issueTarget(iid))
	for _, c := range comments {
		if _, k, _ := forges.ParseMarker(c.Body); k == kind {
			return c.Body
		}
	}
	return ""
}

// TestStallSettingIsTheCatalogues: the stall's sentence names the setting
// the engine reads its timeout from.
func TestStallSettingIsTheCatalogues(t *testing.T) {
	if AgentStallTimeout.Key() != botrun.StallSetting {
		t.Errorf("bot/run names %s, the catalogue declares %s", botrun.StallSetting, AgentStallTimeout.Key())
	}
}
