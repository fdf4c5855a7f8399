package bot

import (
	"strings"
	"testing"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/state"
)

// TestHandoffAcrossAdapters: the analysis runs with adapter fake, which
// keeps a transcript; AGENT_ADAPTER then switches to fake-b, whose fresh
// session (adapter_changed) gets the handoff in its prompt, unless
// AGENT_SESSION_HANDOFF is off.
func TestHandoffAcrossAdapters(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[on]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fb, _ := fake.New(fake.Options{ResumableSessions: true, Reply: "I added hello.go."})
			h := newHarness(t, func(s *setup) {
				s.secrets = append(s.secrets, transcriptSecret)
				s.wrap = func(a agents.Adapter) agents.Adapter { return &transcribing{Adapter: a} }
				s.adapters["fake-b"] = renamed{&scripted{Adapter: fb}, "fake-b"}
				if !on {
					s.settings = append(s.settings, projectSetting("AGENT_SESSION_HANDOFF", "false"))
				}
			})
			mb, ls := h.twoRuns(func() { h.setSetting(projectSetting("AGENT_ADAPTER", "fake-b")) })
			if len(ls) != 2 || ls[1].ResumeFallback == nil || *ls[1].ResumeFallback != "adapter_changed" {
				t.Fatalf("sessions %+v, want the second fresh, adapter_changed", ls)
			}
			checkHandoff(t, h, mb, fb.Requests()[0].Prompt, *ls[0].NativeSessionID, on)
		})
	}
}

func checkHandoff(t *testing.T, h *harness, mb state.Mailbox, prompt, native string, on bool) {
	t.Helper()
	runs := mustRuns(t, h.store, mb.ID)
	if !on {
		if strings.Contains(prompt, botrun.HandoffHeading) || runs[1].HandoffFrom != nil {
			t.Fatalf("handoff with AGENT_SESSION_HANDOFF off: %+v\n%s", runs[1].HandoffFrom, prompt)
		}
		return
	}
	for _, w := range []string{botrun.HandoffHeading, "made by fake in session " + native,
		"> You are Alfred, a teammate working on issue #7", "> 1. Add hello.go.", "> - hello.go"} {
		if !strings.Contains(prompt, w) {
			t.Errorf("fake-b's prompt lacks %q:\n%s", w, prompt)
		}
	}
	if strings.Contains(prompt, transcriptSecret) {
		t.Errorf("the prompt has the secret:\n%s", prompt)
	}
	if got := runs[1].HandoffFrom; got == nil || *got != (state.RunHandoff{Adapter: "fake", NativeSessionID: native}) {
		t.Errorf("handoff_from %+v, want fake %s", got, native)
	}
	want := "fresh (adapter changed), with a handoff from fake session " + native
	waitUntil(t, func() bool { return strings.Contains(h.statusComment(7), want) })
}
