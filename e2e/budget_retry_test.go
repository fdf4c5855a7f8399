package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2EQuarantineAndBudgetForgejo: on the real Forgejo, through the built
// binary and the real Claude Code, the two ways an issue stops for a
// person and goes on when told.
//
// A poison event: the status label the start needs was deleted on the
// forge after the labels were synced, so the assignment fails for good on
// the forge's refusal and is quarantined, said in the issue's status
// comment; once the operator syncs the labels again, ai::retry handles it
// again and the analysis runs.
//
// The budget: the project's AGENT_BUDGET_TOKENS is what one analysis
// spends (11 tokens of the mock model, as the gateway counts them), so the
// development the validated plan would start is held back: the issue is
// paused with one budget comment; ai::budget_step grants one more budget
// (22 tokens in all) and the development starts; its first model request
// spends the step, the gateway refuses the next one in the run, and the
// issue is paused again, with a second budget comment.
func TestE2EQuarantineAndBudgetForgejo(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Forgejo)
	w := newGiteaWorld(t, in)
	s := start(t, w, func(t testing.TB, b *bot, _, _ string) []string {
		if out := b.run("settings", "set", "AGENT_BUDGET_TOKENS", "11", "-project", w.project()); !strings.Contains(out, "AGENT_BUDGET_TOKENS") {
			t.Fatalf("settings set: %s", out)
		}
		return nil
	})
	deleteLabel(t, w, "status/functional_analysis")

	s.n = w.openIssue("Greet the users", "The demo should greet its users.", "type::task")
	s.key = state.MailboxKey{Forge: "forgejo", Owner: s.owner, Project: s.name, Kind: state.KindIssue, IID: s.n}
	w.assign(s.n)
	var quarantined string
	waitFor(t, 2*time.Minute, "the assignment quarantined", func() bool {
		s.b.look(func(st *state.Store) {
			for _, p := range st.List("events") {
				var rec struct {
					Done    bool   `json:"done"`
					Outcome string `json:"outcome"`
				}
				raw, err := st.Get(p)
				if err == nil && json.Unmarshal(raw, &rec) == nil && rec.Done && strings.HasPrefix(rec.Outcome, "quarantined: ") {
					quarantined = rec.Outcome
				}
			}
		})
		return quarantined != ""
	})
	if !strings.Contains(quarantined, "status/functional_analysis") {
		t.Errorf("the quarantine does not name the missing label: %s", quarantined)
	}
	waitFor(t, time.Minute, "the quarantine said in the thread", func() bool {
		_, _, comments := w.issue(s.n)
		for _, c := range comments {
			if c.Author == in.Bot.Login && strings.Contains(c.Body, "could not process the event") && strings.Contains(c.Body, "ai::retry") {
				return true
			}
		}
		return false
	})

	// The operator syncs the labels; the person asks to try again.
	if out := s.b.run("labels", "sync", "-project", w.project()); !strings.Contains(out, "1 labels created") {
		t.Fatalf("labels sync after the deletion: %s", out)
	}
	w.label(s.n, []string{"ai::retry"}, nil)
	s.waitStatus("waiting_validation")
	if len(s.runs) != 1 || s.runs[0].Phase != "analysis" || s.runs[0].Status != state.RunSucceeded {
		t.Fatalf("runs after ai::retry: %+v", s.runs)
	}

	// The budget: the analysis spent it all; the validated plan is held back.
	w.label(s.n, []string{"ai::validate_plan"}, nil)
	s.waitStatus("paused")
	if b := s.mb.Budget; b == nil || b.Tokens < 11 || b.Paused == nil || b.Paused.Phase != "development" {
		t.Fatalf("the budget when paused: %+v", s.mb.Budget)
	}
	if n := s.kinds()["budget_paused"]; n != 1 {
		t.Errorf("%d budget comments, want 1", n)
	}
	if _, labels, _ := w.issue(s.n); !contains(labels, "status/paused") {
		t.Errorf("labels when paused: %q", labels)
	}
	if len(s.runs) != 1 {
		t.Fatalf("%d runs while paused, want the analysis alone", len(s.runs))
	}

	// One more step: the development starts, and crosses it.
	w.label(s.n, []string{"ai::budget_step"}, nil)
	waitFor(t, 3*time.Minute, "the development run after ai::budget_step", func() bool {
		s.b.look(func(st *state.Store) {
			if m, err := st.Mailbox(s.key); err == nil {
				s.mb = m
				s.runs, _ = st.Runs(m.ID)
			}
		})
		return len(s.runs) == 2 && s.runs[1].Phase == "development" && s.mb.ActiveRunID == "" && s.mb.Status == "paused"
	})
	if b := s.mb.Budget; b == nil || b.Steps != 1 || b.Tokens < 22 {
		t.Errorf("the budget after the step: %+v", s.mb.Budget)
	}
	if r := s.runs[1]; r.Status == state.RunSucceeded || !strings.Contains(r.Outcome, "budget reached") {
		t.Errorf("the development run: %s (%s), want stopped by the gateway at the budget", r.Status, r.Outcome)
	}
	if n := s.kinds()["budget_paused"]; n != 2 {
		t.Errorf("%d budget comments, want 2", n)
	}
	if n := s.kinds()["budget_step"]; n != 1 {
		t.Errorf("%d budget step comments, want 1", n)
	}
	if _, labels, _ := w.issue(s.n); contains(labels, "ai::budget_step") {
		t.Errorf("ai::budget_step left on the issue: %q", labels)
	}
}

// deleteLabel deletes the label name of w's repository on the forge.
func deleteLabel(t *testing.T, w *giteaWorld, name string) {
	t.Helper()
	c := w.in.Client(t, "")
	list, _, err := c.ListRepoLabels(w.repo.Owner, w.repo.Name, gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{PageSize: 50}})
	w.check(err, "list the labels")
	for _, l := range list {
		if l.Name == name {
			resp, err := c.DeleteLabel(w.repo.Owner, w.repo.Name, l.ID)
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("delete label %s: %v", name, err)
			}
			return
		}
	}
	t.Fatalf("no label %s on %s", name, w.project())
}
