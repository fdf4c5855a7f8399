package bot

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/sandbox"
)

// onHost runs an adapter's processes with the real host runner.
type onHost struct{ agents.Adapter }

func (a onHost) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	req.Runner = sandbox.NewHostRunner(sandbox.HostOptions{})
	return a.Adapter.Run(ctx, req)
}

// agentScript prints lines (its secrets among them, one split across two
// writes), then waits until a line comes through the fifo $0, then prints
// one more line and exits.
const agentScript = `echo "reading the issue"
echo "key $FAKE_API_KEY and token tok-s3cret"
printf '%s' "split ${FAKE_API_KEY%secret}"
printf '%s\n' "secret end"
read go < "$0"
echo "after the release"`

// TestFollowSeesTheAgentsLinesBeforeTheRunEnds: a real process prints lines
// and waits; the engine's Follow shows them, redacted, while the run goes,
// the status comment links to the run's page meanwhile, and the output ends
// with the run's outcome once the process is released.
func TestFollowSeesTheAgentsLinesBeforeTheRunEnds(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fa, err := fake.New(fake.Options{Reply: analysisReply, Exec: []string{"/bin/sh", "-c", agentScript, fifo}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(s *setup) {
		s.runner = "host"
		s.adapter = &scripted{Adapter: fa}
		s.wrap = func(a agents.Adapter) agents.Adapter { return onHost{a} }
	})
	const iid = 12
	h.openIssue(iid, "Say hello", "type::task")
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(iid), Labels: []string{"type::task"}})

	var runID string
	var out *live.Output
	waitUntil(t, func() bool {
		runID = h.mailbox(iid).ActiveRunID
		var ok bool
		out, ok = h.engine.Follow(runID)
		return ok
	})
	lines, next, end := readUntil(t, out, 0, func(lines []string) bool { return slices.Contains(lines, "split [redacted] end") || len(lines) > 3 })
	want := []string{"reading the issue", "key [redacted] and token [redacted]", "split [redacted] end"}
	if !slices.Equal(lines, want) || end != nil {
		t.Errorf("before the release: lines %q end %+v, want %q and no end", lines, end, want)
	}
	if body := h.statusComment(iid); !strings.Contains(body, "http://alfred.test/runs/"+runID) || !strings.Contains(body, "in progress") {
		t.Errorf("status comment while the run goes:\n%s", body)
	}

	release(t, fifo)
	more, _, end := readUntil(t, out, next, func([]string) bool { return false })
	if len(more) < 2 || more[0] != "after the release" || !strings.Contains(more[1], `"result":"## Functional analysis`) {
		t.Errorf("after the release: %q", more)
	}
	if end == nil || end.Status != "succeeded" {
		t.Errorf("end %+v", end)
	}
	for _, l := range append(lines, more...) {
		if strings.Contains(l, "sk-very-secret") || strings.Contains(l, "tok-s3cret") {
			t.Errorf("a line shows a secret: %q", l)
		}
	}
	h.waitStatus(iid, lifecycle.StatusWaitingValidation)
	if _, ok := h.engine.Follow(runID); ok {
		t.Error("an ended run is still followed")
	}
}

// readUntil follows out from next until enough says so or the output ends.
func readUntil(t *testing.T, out *live.Output, next int, enough func([]string) bool) ([]string, int, *live.End) {
	t.Helper()
	var lines []string
	deadline := time.After(20 * time.Second)
	for {
		snap := out.Read(next)
		for _, l := range snap.Lines {
			lines = append(lines, l.Text)
		}
		next = snap.Next
		if snap.End != nil || enough(lines) {
			return lines, next, snap.End
		}
		select {
		case <-snap.Changed:
		case <-deadline:
			t.Fatalf("the output stopped at %q", lines)
		}
	}
}

// release lets the agent's script go on past its read of the fifo.
func release(t *testing.T, fifo string) {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
}
