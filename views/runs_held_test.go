package views

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// TestRunPageHeld: a run whose change was held shows which files and why,
// and the patch, for a person to inspect; a run not started on a changed
// plan says what changed.
func TestRunPageHeld(t *testing.T) {
	f := newFixture(t)
	const held, changed = "66666666-ffff", "77777777-ffff"
	err := f.store.Update(context.Background(), func(tx *state.Tx) error {
		t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
		err := tx.PutRun(state.Run{ID: held, MailboxID: f.mb.ID, Phase: "development", AdapterID: "claude-code", Runner: "image",
			Status: state.RunFailed, Outcome: "held for a person", CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Minute),
			Held: &state.RunHeld{Files: []state.HeldFile{{Path: ".forgejo/workflows/x.yml", Reason: "is a CI definition"}},
				Patch: "diff --git a/.forgejo/workflows/x.yml b/.forgejo/workflows/x.yml\n+on: push\n"}})
		if err != nil {
			return err
		}
		return tx.PutRun(state.Run{ID: changed, MailboxID: f.mb.ID, Phase: "ci_fix", AdapterID: "claude-code", Runner: "image",
			Status: state.RunCanceled, CreatedAt: t0.Add(time.Hour), PlanChanged: "the issue's description was edited"})
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, f.deps())
	_, body := get(t, srv.URL+"/runs/"+held)
	for _, want := range []string{"<h3>Held for a person</h3>", `<code data-test="held-path">.forgejo/workflows/x.yml</code> is a CI definition`, "on: push"} {
		if !strings.Contains(body, want) {
			t.Errorf("the held run's page lacks %q", want)
		}
	}
	_, body = get(t, srv.URL+"/runs/"+changed)
	if !strings.Contains(body, "Not started: the issue&#39;s description was edited since the plan was validated.") || strings.Contains(body, "Held for a person") {
		t.Errorf("the page of a run not started on a changed plan:\n%s", body)
	}
}
