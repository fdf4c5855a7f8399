package e2e

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/state"
)

// The issues of the handoff test: one analysed by Claude Code and developed
// by Codex, one the other way round.
const (
	handoffToCodexTitle  = "Greet the users in French"
	handoffToClaudeTitle = "Greet the users in German"
)

// TestE2EHandoff (issue 30, item 5): the built bot on the real Gitea, the
// shipped agent image, every run sealed behind the bot's gateway with the
// mock model as Anthropic and OpenAI. An issue analysed by Claude Code,
// then AGENT_ADAPTER set to Codex for the project, then validated: the
// development run is Codex's, fresh with adapter_changed, its prompt
// carrying the handoff built from Claude Code's transcript, which the model
// sees in Codex's first request; its change is pushed. The other way round
// too: analysed by Codex, developed by Claude Code. The project's model is
// gpt-5 (Claude Code takes any name of the mock's): Codex's default model
// calls its tools through JavaScript (code mode), which the mock does not
// play.
func TestE2EHandoff(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Gitea)
	w := newGiteaWorld(t, in)
	dockerHost, image, instance := shippedImage(t)
	s := startOn(t, w, dockerHost, image, instance,
		withModel(mockllm.Options{Reply: agentReply, ReadOnlyPhrase: "Do not change any file", ShellFor: map[string]string{
			handoffToCodexTitle:  "echo 'Bonjour' > /workspace/FRENCH.md && echo wrote FRENCH.md",
			handoffToClaudeTitle: "echo 'Hallo' > /workspace/GERMAN.md && echo wrote GERMAN.md",
		}}),
		withOpenAI(), withSetting(w, "AGENT_ADAPTER", "claude-code"), withSetting(w, "AGENT_MODEL", "gpt-5"))
	s.waitDetected("codex", image, true)

	// Claude Code analyses; Codex develops.
	s.redTeamIssue(handoffToCodexTitle, "The demo should greet its users in French.")
	toCodex := s.key
	s.checkPhase("analysis", "claude-code")
	s.restartWith(w, "codex")
	w.label(s.n, []string{"ai::validate_plan"}, nil)
	s.waitStatus("in_ci")
	s.checkHandoff("claude-code", "codex", "FRENCH.md")

	// Codex analyses (same project, now on Codex); Claude Code develops.
	s.redTeamIssue(handoffToClaudeTitle, "The demo should greet its users in German.")
	s.checkPhase("analysis", "codex")
	s.restartWith(w, "claude-code")
	w.label(s.n, []string{"ai::validate_plan"}, nil)
	s.waitStatus("in_ci")
	s.checkHandoff("codex", "claude-code", "GERMAN.md")
	s.sealed()
	if toCodex == s.key {
		t.Fatal("both directions ran on one issue")
	}
	s.mergedOutcome(in)
}

// mergedOutcome (issue 33, item 1, on the real Gitea): the issue's pull
// request merged by the admin on the forge, the mailbox is done, and the
// outcome derived from what the bot recorded says merged, by whom, when
// the plan, the pull request and the merge came, which agent worked each
// phase, and that the gateway counted the tokens.
func (s *scenario) mergedOutcome(in *giteatest.Instance) {
	t := s.t
	t.Helper()
	repo := s.w.(*giteaWorld).repo
	repo.WaitMergeable(t, s.mb.MergeRequestIID, forges.MergeableClean)
	repo.Merge(t, s.mb.MergeRequestIID)
	s.waitStatus("done")
	o := outcomes.Derive(s.mb, s.runs, s.sessions, time.Now(), 0)
	if o.End != outcomes.EndMerged || o.By != in.Admin.Login {
		t.Fatalf("the outcome's end %q by %q; want merged by %s (problems %q)", o.End, o.By, in.Admin.Login, o.Problems)
	}
	for name, m := range map[string]outcomes.Milestone{"plan": o.Plan, "pull request": o.PullRequest, "merge": o.Finished} {
		if m.After == nil || m.Derived {
			t.Errorf("the outcome's %s: %+v", name, m)
		}
	}
	if *o.Plan.After > *o.PullRequest.After || *o.PullRequest.After > *o.Finished.After {
		t.Errorf("the milestones out of order: plan %s, pull request %s, merge %s", *o.Plan.After, *o.PullRequest.After, *o.Finished.After)
	}
	agent := map[string]string{}
	for _, p := range o.Phases {
		if len(p.Agents) == 1 {
			agent[p.Phase] = p.Agents[0].Adapter
		}
	}
	if agent["analysis"] != "codex" || agent["development"] != "claude-code" || o.Spend.Source() != outcomes.SourceGateway || o.Spend.InputTokens == 0 {
		t.Errorf("the outcome's agents %v, spend %+v (%s)", agent, o.Spend, o.Spend.Source())
	}
	t.Logf("the outcome: %s by %s, plan after %s, pull request after %s, merged after %s, %d runs, %d tokens in",
		o.End, o.By, *o.Plan.After, *o.PullRequest.After, *o.Finished.After, o.Runs, o.Spend.InputTokens)
	s.outcomesSeen(o)
}

// withOpenAI offers the mock model as OpenAI too (Codex's provider), with
// the same key: the gateway serves both.
func withOpenAI() startOption {
	return func(_ testing.TB, b *bot, _, _ string) []string {
		return []string{"ALFRED_AGENT_ENV=ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,OPENAI_BASE_URL,OPENAI_API_KEY",
			"OPENAI_BASE_URL=" + b.model.URL + "/v1", "OPENAI_API_KEY=" + apiKey}
	}
}

// withSetting sets a setting of w's project before the bot starts.
func withSetting(w world, key, value string) startOption {
	return func(t testing.TB, b *bot, _, _ string) []string {
		if out := b.run("settings", "set", key, value, "-project", w.project()); !strings.Contains(out, key) {
			t.Fatalf("settings set: %s", out)
		}
		return nil
	}
}

// restartWith stops the bot, sets the project's AGENT_ADAPTER to id (the
// settings are written while the server is stopped) and starts it again.
func (s *scenario) restartWith(w world, id string) {
	s.t.Helper()
	s.b.cmd.Process.Signal(syscall.SIGTERM)
	<-s.b.exited
	withSetting(w, "AGENT_ADAPTER", id)(s.t, s.b, "", "")
	s.b.serve()
}

// waitDetected waits until the bot detected adapter starting in image,
// resumable as said.
func (s *scenario) waitDetected(adapter, image string, resumable bool) {
	s.t.Helper()
	waitFor(s.t, time.Minute, fmt.Sprintf("%s detected (resumable: %v)", adapter, resumable), func() (ok bool) {
		s.b.look(func(st *state.Store) {
			all, _ := st.Installations()
			ok = slices.ContainsFunc(all, func(in state.AgentInstallation) bool {
				return in.AdapterID == adapter && in.Image == image && in.Version != "" && in.ResumableSessions == resumable
			})
		})
		return ok
	})
}

// checkPhase fails unless the issue's last run is a succeeded run of phase
// by adapter.
func (s *scenario) checkPhase(phase, adapter string) {
	s.t.Helper()
	r := s.lastRun()
	if r.Phase != phase || r.AdapterID != adapter || r.Status != state.RunSucceeded {
		s.t.Fatalf("the last run: %s by %s, %s (%s); want a succeeded %s by %s", r.Phase, r.AdapterID, r.Status, r.Outcome, phase, adapter)
	}
}

// checkHandoff: the issue's development run is to's, started fresh
// because the adapter changed, with a handoff from from's session; the
// model saw the handoff in to's first request of that run, and the file the
// run wrote was pushed.
func (s *scenario) checkHandoff(from, to, file string) {
	t := s.t
	t.Helper()
	s.checkPhase("development", to)
	dev, ls := s.lastRun(), s.lastSession()
	if dev.HandoffFrom == nil || dev.HandoffFrom.Adapter != from || dev.HandoffFrom.NativeSessionID == "" {
		t.Fatalf("the development run's handoff: %+v", dev.HandoffFrom)
	}
	if ls.AdapterID != to || ls.ResumeFallback == nil || *ls.ResumeFallback != "adapter_changed" {
		t.Fatalf("the development session: adapter %s, fallback %v", ls.AdapterID, ls.ResumeFallback)
	}
	title := handoffToCodexTitle
	if to == "claude-code" {
		title = handoffToClaudeTitle
	}
	reqs := s.b.model.Requests()
	said := func(r mockllm.Request) string { return strings.Join(r.UserTexts, "\n") } // the prompt, in every API
	i := slices.IndexFunc(reqs, func(r mockllm.Request) bool {
		return strings.Contains(said(r), "Implement the plan") && strings.Contains(said(r), title)
	})
	if i < 0 {
		t.Fatalf("no development prompt of %q reached the model", title)
	}
	first := reqs[i]
	want := []string{"# Handoff from an earlier session", "made by " + from + " in session " + dev.HandoffFrom.NativeSessionID}
	for _, w := range want {
		if !strings.Contains(said(first), w) {
			t.Fatalf("%s's first development request (%s) lacks %q:\n%s", to, first.API, w, said(first))
		}
	}
	if !slices.Contains(s.w.files(s.mb.HeadSHA), file) {
		t.Fatalf("%s's change did not land: %q", to, s.w.files(s.mb.HeadSHA))
	}
	t.Logf("%s handed over to %s: %s, fallback %s, %d model requests so far", from, to, dev.ID, *ls.ResumeFallback, len(reqs))
}
