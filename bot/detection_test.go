package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// TestFirstRunWaitsForDetection: an issue assigned right after the start,
// while the agent CLIs are still being detected, waits for the detection, so
// its analysis already has a named session, which development resumes.
func TestFirstRunWaitsForDetection(t *testing.T) {
	t.Parallel()
	detected := make(chan struct{})
	h := newHarness(t, func(s *setup) { s.detected, s.undetected = detected, true })
	h.assign(7)
	time.Sleep(300 * time.Millisecond)
	if n := len(h.adapter.Requests()); n != 0 {
		t.Fatalf("%d agent invocations before the detection ended", n)
	}

	err := h.store.Update(context.Background(), func(tx *state.Tx) error {
		return tx.PutInstallation(state.AgentInstallation{AdapterID: fake.ID, Runner: "image", Image: "alfred-test", Version: fake.Version, ResumableSessions: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	close(detected)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	h.command(7, lifecycle.CommandValidatePlan)
	mb := h.waitStatus(7, lifecycle.StatusInCI)
	ls := h.sessions(t, mb)
	if len(ls) != 2 || ls[0].SessionName == nil || *ls[0].SessionName != mb.BranchName || ls[0].NativeSessionID == nil {
		t.Fatalf("sessions: %+v, want the analysis named %s", ls, mb.BranchName)
	}
	if !ls[1].Resumed || *ls[1].NativeSessionID != *ls[0].NativeSessionID {
		t.Errorf("development did not resume the analysis session: %+v", ls[1])
	}
}

// TestDetectionWaitIsBounded: a detection that never ends holds runs only
// for DetectionWait; the run then goes on without a session and the status
// comment says why.
func TestDetectionWaitIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) {
		s.detected, s.detectionWait, s.undetected = make(chan struct{}), 200*time.Millisecond, true
	})
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 || !strings.Contains(runs[0].NoSession, "still being detected") {
		t.Fatalf("runs: %+v, want one without a session because detection had not ended", runs)
	}
	cs, _ := h.forge.Comments(context.Background(), h.issueTarget(7))
	var status string
	for _, c := range cs {
		if _, k, _ := forges.ParseMarker(c.Body); k == lifecycle.KindSession {
			status = c.Body
		}
	}
	if !strings.Contains(status, "none: the agent CLIs were still being detected") {
		t.Errorf("status comment: %q", status)
	}
}
