package replay

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// script is a Records whose mailbox goes through a list of states, one per
// read (the last one stays).
type script struct {
	mu    sync.Mutex
	steps []state.Mailbox
	reads int
}

func (s *script) Mailbox(state.MailboxKey) (state.Mailbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if len(s.steps) == 0 {
		return state.Mailbox{}, errors.New("not found")
	}
	m := s.steps[0]
	if len(s.steps) > 1 {
		s.steps = s.steps[1:]
	}
	return m, nil
}

func (s *script) Runs(string) ([]state.Run, error) { return nil, nil }

func (s *script) RunWithSessions(string) (state.Run, []state.LLMSession, error) {
	return state.Run{}, nil, nil
}

// TestWait: the replay waits for a pull request with no run going, or a
// stop status, within the case's time limit.
func TestWait(t *testing.T) {
	stops := []string{"waiting_validation", "blocked", "done"}
	dev := state.Mailbox{ID: "m", Status: "in_development", ActiveRunID: "r1"}
	for _, tc := range []struct {
		name   string
		steps  []state.Mailbox
		status string
		mr     int64
		err    string
	}{
		{"pull request", []state.Mailbox{dev, {ID: "m", Status: "in_ci", MergeRequestIID: 4, ActiveRunID: "r1"}, {ID: "m", Status: "in_ci", MergeRequestIID: 4}}, "in_ci", 4, ""},
		{"blocked", []state.Mailbox{dev, {ID: "m", Status: "blocked"}}, "blocked", 0, ""},
		{"a stop with a run going", []state.Mailbox{{ID: "m", Status: "blocked", ActiveRunID: "r2"}}, "blocked", 0, "time limit"},
		{"never made", nil, "", 0, "the bot never took the issue; does the forge reach the webhook at http://hook?"},
		{"still developing", []state.Mailbox{dev}, "in_development", 0, `the mailbox is "in_development"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Records: &script{steps: tc.steps}, Stops: stops, Poll: time.Millisecond, Hook: Hook{URL: "http://hook"}}
			m, err := wait(context.Background(), cfg, state.MailboxKey{}, 200*time.Millisecond)
			if m.Status != tc.status || m.MergeRequestIID != tc.mr {
				t.Errorf("mailbox %+v", m)
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
}

// TestWaitCanceled: a replay stopped ends the wait at once.
func TestWaitCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := wait(ctx, Config{Records: &script{}, Poll: time.Millisecond}, state.MailboxKey{}, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "replay stopped") {
		t.Fatalf("err %v", err)
	}
}

type hostRunner struct{}

func (hostRunner) Name() string { return "host" }
func (hostRunner) Run(context.Context, sandbox.Spec) (*sandbox.Result, error) {
	return nil, errors.New("never")
}

// TestRunRefuses: no adapter, or a runner that would run the checks on the
// host, stops the replay before anything is made.
func TestRunRefuses(t *testing.T) {
	cases := []Case{{Name: "a"}}
	if _, err := Run(context.Background(), Config{Runner: hostRunner{}}, cases); err == nil || !strings.Contains(err.Error(), "no adapter") {
		t.Errorf("no adapter: %v", err)
	}
	if _, err := Run(context.Background(), Config{Adapters: []string{"x"}, Runner: hostRunner{}}, cases); err == nil || !strings.Contains(err.Error(), "never the host") {
		t.Errorf("host runner: %v", err)
	}
}

// TestRepoName: one repository per case, adapter and replay.
func TestRepoName(t *testing.T) {
	if got := repoName("fix-add", "Claude_Code", "a1b2c3"); got != "replay-fix-add-claude-code-a1b2c3" {
		t.Errorf("%s", got)
	}
}
