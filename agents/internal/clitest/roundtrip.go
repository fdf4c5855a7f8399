package clitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
)

// RoundTrip drives a real CLI through the shared flow against a mock model:
// a fresh session records its native id, the next run resumes it and the
// mock sees the earlier messages, and a run after the state folder was
// emptied falls back to a fresh session silently.
type RoundTrip struct {
	Mocked
	// Phase of every run; PhaseAnswer when empty.
	Phase agents.Phase
	// ValidID checks the native id format (e.g. a UUID), when set.
	ValidID func(string) error
}

// UUID is a RoundTrip.ValidID: the id must be a UUID.
func UUID(id string) error {
	_, err := uuid.Parse(id)
	return err
}

// Check runs the three steps and fails t on any deviation.
func (rt RoundTrip) Check(t *testing.T) {
	t.Helper()
	if rt.Phase == "" {
		rt.Phase = agents.PhaseAnswer
	}
	if rt.Timeout == 0 {
		rt.Timeout = 2 * time.Minute
	}
	state := t.TempDir()
	workdir := t.TempDir()
	const name = "agent/issue-7-add-a-name-on-ai-client"

	run := func(step, prompt, resumeID string) (*agents.Result, int) {
		t.Helper()
		before := len(rt.Mock.Requests())
		ref := &agents.SessionRef{Name: name, ResumeID: resumeID, HostStateDir: state}
		if resumeID == "" {
			ref.FreshReason = agents.FallbackNoPriorSession
		}
		ctx, cancel := context.WithTimeout(context.Background(), rt.Timeout+time.Minute)
		defer cancel()
		base := agents.Request{Prompt: prompt, Phase: rt.Phase, Timeout: rt.Timeout, Runner: rt.Runner, Session: ref}
		base.Sandbox.Workdir = workdir
		base.Sandbox.Env = rt.Env
		res, err := rt.Adapter.Run(ctx, base)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		msgs, sawPrompt := 0, false
		for _, r := range rt.Mock.Requests()[before:] {
			msgs = max(msgs, r.Messages)
			sawPrompt = sawPrompt || strings.Contains(r.LastUserText, prompt)
		}
		t.Logf("%s: outcome=%s id=%s resumed=%v fallback=%q attempts=%d mock messages=%d text=%q",
			step, res.Outcome, res.NativeSessionID, res.Resumed, res.ResumeFallback, len(res.Attempts), msgs, res.Text)
		if res.Outcome != agents.OutcomeSucceeded {
			t.Fatalf("%s: outcome %s, want succeeded\nstdout: %s\nstderr: %s\nmock unhandled: %v",
				step, res.Outcome, res.Stdout, res.Stderr, rt.Mock.Unhandled())
		}
		if msgs == 0 {
			t.Fatalf("%s: the mock model got no request", step)
		}
		if !sawPrompt {
			t.Fatalf("%s: no request to the mock carried the prompt %q", step, prompt)
		}
		return res, msgs
	}

	first, firstMsgs := run("fresh", "first question", "")
	if first.NativeSessionID == "" || first.Resumed || first.ResumeFallback != agents.FallbackNoPriorSession {
		t.Fatalf("fresh: id=%q resumed=%v fallback=%q, want an id, not resumed, no_prior_session",
			first.NativeSessionID, first.Resumed, first.ResumeFallback)
	}
	if rt.ValidID != nil {
		if err := rt.ValidID(first.NativeSessionID); err != nil {
			t.Fatalf("fresh: native id %q: %v", first.NativeSessionID, err)
		}
	}
	if entries, _ := os.ReadDir(state); len(entries) == 0 {
		t.Fatalf("fresh: nothing written into the session state folder %s", state)
	}

	second, secondMsgs := run("resume", "second question", first.NativeSessionID)
	if !second.Resumed || second.NativeSessionID != first.NativeSessionID || second.ResumeFallback != "" {
		t.Fatalf("resume: id=%q resumed=%v fallback=%q, want %q resumed", second.NativeSessionID, second.Resumed, second.ResumeFallback, first.NativeSessionID)
	}
	if secondMsgs <= firstMsgs {
		t.Fatalf("resume: the mock saw %d messages, want more than the first run's %d (history not loaded)", secondMsgs, firstMsgs)
	}

	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(state, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	third, thirdMsgs := run("after state deleted", "third question", first.NativeSessionID)
	if third.Resumed || third.ResumeFallback != agents.FallbackStateMissing || third.NativeSessionID == "" ||
		third.NativeSessionID == first.NativeSessionID {
		t.Fatalf("after state deleted: id=%q resumed=%v fallback=%q, want a new id, not resumed, state_missing",
			third.NativeSessionID, third.Resumed, third.ResumeFallback)
	}
	if len(third.Attempts) != 2 || third.Attempts[0].Fallback != agents.FallbackStateMissing {
		t.Fatalf("after state deleted: attempts %+v, want a classified resume then a fresh run", third.Attempts)
	}
	if thirdMsgs != firstMsgs {
		t.Fatalf("after state deleted: the mock saw %d messages, want %d as in a fresh session", thirdMsgs, firstMsgs)
	}
}
