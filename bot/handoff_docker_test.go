package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// TestHandoffClaudeToCodexInDocker (issue 19, item 1): a sealed Claude Code
// run in the agent image starts a named session and writes a file; the
// runner's steps of its transcript (botrun.ReadTranscript, botrun.KeptSteps) make the
// handoff; a sealed Codex run then starts fresh (adapter_changed) with the
// handoff after its prompt, and the model requests of Codex carry Claude
// Code's goal and the file it wrote. Both real CLIs, the mock model.
func TestHandoffClaudeToCodexInDocker(t *testing.T) {
	t.Parallel()
	runner, image := agentImageRunner(t)
	fwd := buildForwarder(t)
	claudeCLI, codexCLI := sealedCLIs[0], sealedCLIs[1]
	claude, err := claudeCLI.new()
	if err != nil {
		t.Fatal(err)
	}
	codex, err := codexCLI.new()
	if err != nil {
		t.Fatal(err)
	}

	mock := mockllm.Start(mockllm.Options{Reply: sealedReply, WriteDir: "/workspace"})
	t.Cleanup(mock.Close)
	e, _ := sealingEngine(t, runner, fwd, claudeCLI.provider, mock.URL)
	ref := sessionRef(t, e, claude.ID())
	first := writingTurn(t, e, claude, claudeCLI, sealedSpec(t, image, claude.Descriptor(), claudeCLI.env), ref)
	steps, err := botrun.ReadTranscript(claude, ref.HostStateDir, first.NativeSessionID)
	if err != nil {
		t.Fatalf("read Claude Code's transcript: %v", err)
	}
	from := state.RunHandoff{Adapter: claude.ID(), NativeSessionID: first.NativeSessionID}
	handoff := botrun.Handoff(from, []state.Run{{Phase: "development", Status: state.RunSucceeded, Steps: botrun.KeptSteps(steps, func(s string) string { return s })}})
	edited := editedPath(steps)
	t.Logf("handoff from Claude Code:\n%s", handoff)
	if edited == "" || !strings.Contains(handoff, "> - "+edited) || !strings.Contains(handoff, firstTurnPrompt) {
		t.Fatalf("the handoff lacks the goal %q or the file %q:\n%s\nsteps %+v", firstTurnPrompt, edited, handoff, steps)
	}

	mock2 := mockllm.Start(mockllm.Options{Reply: sealedReply})
	t.Cleanup(mock2.Close)
	e2, _ := sealingEngine(t, runner, fwd, codexCLI.provider, mock2.URL)
	ref2 := sessionRef(t, e2, codex.ID())
	ref2.FreshReason = agents.FallbackAdapterChanged
	second := runSealedTurn(t, e2, runner, codex, codexCLI, sealedSpec(t, image, codex.Descriptor(), codexCLI.env), mock2, "run-codex",
		secondTurnPrompt+"\n"+handoff, ref2)
	if second.res.ResumeFallback != agents.FallbackAdapterChanged || second.res.Resumed {
		t.Errorf("Codex: fallback %q resumed %v, want fresh, adapter_changed", second.res.ResumeFallback, second.res.Resumed)
	}
	for _, q := range second.reqs {
		if texts := q.UserTexts; len(texts) > 0 && containsAll(strings.Join(texts, "\n"), botrun.HandoffHeading, firstTurnPrompt, edited, from.NativeSessionID) {
			return
		}
	}
	t.Errorf("no model request of Codex carried the handoff: %v", userTexts(second.reqs))
}

// writingTurn is a sealed run of a in which the model writes a file (so
// runSealedTurn's count of output tokens, one a request, does not hold).
func writingTurn(t *testing.T, e *Engine, a *agents.Local, c sealedCLI, spec sandbox.Spec, ref *agents.SessionRef) *agents.Result {
	t.Helper()
	s, err := e.seal("run-"+a.ID(), Scope{}, a, &spec)
	if err != nil || s == nil {
		t.Fatalf("seal: %v, %v", s, err)
	}
	res, err := a.Run(context.Background(), agents.Request{Prompt: firstTurnPrompt, Phase: agents.PhaseDevelopment, Session: ref,
		Provider: c.provider, Model: c.model, Timeout: 4 * time.Minute, Sandbox: spec, Runner: e.cfg.Runner})
	e.unseal(s, &state.Run{ID: "run-" + a.ID()})
	if err != nil || res.Outcome != agents.OutcomeSucceeded || res.NativeSessionID == "" {
		t.Fatalf("%s: %v %+v", a.ID(), err, res)
	}
	return res
}

// editedPath is the first file an edit step of steps wrote.
func editedPath(steps []agents.Step) string {
	for _, s := range steps {
		if s.Kind == agents.StepEdit && s.Path != "" {
			return s.Path
		}
	}
	return ""
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
