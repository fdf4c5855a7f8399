package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/state"
)

const transcriptSecret = "tok-in-the-transcript"

// transcribing is the fake adapter plus a transcript, as a resumable CLI
// keeps one: each run appends its steps to <native id>.jsonl in the
// session folder, and ReadTranscript reads them back.
type transcribing struct {
	agents.Adapter
	mu sync.Mutex
}

func (a *transcribing) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	res, err := a.Adapter.Run(ctx, req)
	if err != nil || req.Session == nil || res.NativeSessionID == "" {
		return res, err
	}
	prompt, _, _ := strings.Cut(req.Prompt, "\n")
	steps := []agents.Step{
		{Kind: agents.StepPrompt, Text: prompt},
		{Kind: agents.StepToolCall, Tool: "Bash", CallID: "c1", Args: `{"command":"echo ` + transcriptSecret + `"}`},
		{Kind: agents.StepToolResult, Tool: "Bash", CallID: "c1", Text: transcriptSecret},
		{Kind: agents.StepEdit, Tool: "Write", CallID: "c2", Path: "hello.go"},
		{Kind: agents.StepAssistant, Text: "done " + string(req.Phase)},
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ferr := os.OpenFile(filepath.Join(req.Session.HostStateDir, res.NativeSessionID+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if ferr != nil {
		return nil, ferr
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, s := range steps {
		if err := enc.Encode(s); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (a *transcribing) ReadTranscript(dir, id string) ([]agents.Step, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", id, agents.ErrNoTranscript)
	}
	if err != nil {
		return nil, err
	}
	var steps []agents.Step
	for _, line := range agents.TranscriptLines(data) {
		var s agents.Step
		if err := json.Unmarshal(line, &s); err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// TestTranscriptSteps: an analysis run starts the session, the development
// run resumes it (or, when the resume misses, starts a fresh one): each run
// keeps its own steps of the transcript, redacted, and where they start.
func TestTranscriptSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		miss     bool // the development run's resume misses: fresh under the same name
		wantFrom int
	}{
		{"resumed", false, 5},
		{"fallback", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(s *setup) {
				s.secrets = append(s.secrets, transcriptSecret)
				s.wrap = func(a agents.Adapter) agents.Adapter { return &transcribing{Adapter: a} }
			})
			h.assign(7)
			h.waitStatus(7, lifecycle.StatusWaitingValidation)
			if tt.miss {
				h.adapter.MissNextResume()
			}
			h.command(7, lifecycle.CommandValidatePlan)
			mb := h.waitStatus(7, lifecycle.StatusInCI)
			runs := mustRuns(t, h.store, mb.ID)
			if len(runs) != 2 {
				t.Fatalf("%d runs, want 2", len(runs))
			}
			checkSteps(t, runs[0], "analysis", state.RunTranscript{From: 0, Total: 5})
			checkSteps(t, runs[1], "development", state.RunTranscript{From: tt.wantFrom, Total: tt.wantFrom + 5})
		})
	}
}

func checkSteps(t *testing.T, r state.Run, phase string, want state.RunTranscript) {
	t.Helper()
	if r.Transcript == nil || *r.Transcript != want {
		t.Fatalf("%s run: transcript %+v, want %+v", phase, r.Transcript, want)
	}
	if len(r.Steps) != 5 || r.Steps[0].Kind != "prompt" || r.Steps[4].Text != "done "+phase {
		t.Fatalf("%s run: steps %+v, want its own five", phase, r.Steps)
	}
	raw, _ := json.Marshal(r.Steps)
	if strings.Contains(string(raw), transcriptSecret) || !strings.Contains(string(raw), redact.Mark) {
		t.Errorf("%s run: the secret is not redacted in %s", phase, raw)
	}
}

// TestTranscriptStepsNoReader: an adapter that reads no transcripts leaves
// the run without steps or note.
func TestTranscriptStepsNoReader(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 || runs[0].Steps != nil || runs[0].Transcript != nil {
		t.Fatalf("runs %+v, want one without steps", runs)
	}
}

// TestTranscriptStepsUnreadable: a transcript that cannot be read is a
// note on the run, which succeeds anyway.
func TestTranscriptStepsUnreadable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) {
		s.wrap = func(a agents.Adapter) agents.Adapter { return &unreadable{a} }
	})
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 || runs[0].Status != state.RunSucceeded || runs[0].Transcript == nil ||
		!strings.Contains(runs[0].Transcript.Note, "no transcript") || runs[0].Steps != nil {
		t.Fatalf("run %+v, want a success with a note", runs)
	}
}

type unreadable struct{ agents.Adapter }

func (unreadable) ReadTranscript(string, string) ([]agents.Step, error) {
	return nil, fmt.Errorf("read: %w", agents.ErrNoTranscript)
}
