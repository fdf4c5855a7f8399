package views

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// TestMailboxPageBudget: the mailbox page shows the budget, the steps
// granted, where it paused, and the spend as the budget counts it: the
// gateway's tokens for a sealed run, the CLI's for another, the dollars the
// CLIs reported, and the runs without a price.
func TestMailboxPageBudget(t *testing.T) {
	f := newFixture(t)
	before := spendOn(t, serve(t, f.deps()).URL, f.mb.ID) // the fixture's own runs
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	err := f.store.Update(context.Background(), func(tx *state.Tx) error {
		mb := f.mb
		mb.Status = "paused"
		mb.Budget = &state.Budget{Tokens: 2000, Steps: 1, Paused: &state.PausedStep{Step: "ci_red", From: "in_ci", Phase: "ci_fix", At: t0}}
		if err := tx.PutMailbox(mb); err != nil {
			return err
		}
		runs := []state.Run{
			{ID: "77777770-aaaa", Gateway: &state.RunGateway{Requests: 2, InputTokens: 1200, OutputTokens: 50}},
			{ID: "77777771-bbbb"},
		}
		for i, r := range runs {
			r.MailboxID, r.Phase, r.AdapterID, r.Runner, r.Status = f.mb.ID, "development", "claude-code", "image", state.RunSucceeded
			r.CreatedAt, r.StartedAt, r.FinishedAt = t0.Add(time.Duration(i)*time.Minute), t0, t0.Add(time.Minute)
			if err := tx.PutRun(r); err != nil {
				return err
			}
		}
		// The sealed run's CLI counted less than the gateway and no cost;
		// the other reported its cost.
		if err := tx.PutLLMSession(state.LLMSession{ID: "b1", RunID: runs[0].ID, MailboxID: f.mb.ID, AdapterID: "claude-code", InputTokens: 900, OutputTokens: 40}); err != nil {
			return err
		}
		return tx.PutLLMSession(state.LLMSession{ID: "b2", RunID: runs[1].ID, MailboxID: f.mb.ID, AdapterID: "claude-code", InputTokens: 700, CostUSD: 0.5})
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, f.deps())
	want := before.Add(state.Spend{Tokens: 1950, USD: 0.5, Unpriced: 1})
	_, body := get(t, srv.URL+"/mailboxes/"+f.mb.ID)
	for _, w := range []string{
		fmt.Sprintf(`data-test="spend">%d tokens · $%.4f · %d unpriced run(s)`, want.Tokens, want.USD, want.Unpriced),
		`data-test="budget">2000 tokens (1 step(s) granted) · <strong>paused</strong> before the ci_fix run`,
	} {
		if !strings.Contains(body, w) {
			t.Errorf("mailbox page lacks %q", w)
		}
	}
	if got := spendOn(t, srv.URL, f.mb.ID); got.Tokens != want.Tokens || got.Unpriced != want.Unpriced || math.Abs(got.USD-want.USD) > 1e-9 {
		t.Errorf("mailbox JSON spend %+v, want %+v", got, want)
	}
}

// spendOn reads the spend of a mailbox from its JSON.
func spendOn(t *testing.T, base, id string) state.Spend {
	t.Helper()
	var v struct {
		Spend state.Spend `json:"spend"`
	}
	_, raw := get(t, base+"/api/mailboxes/"+id)
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("mailbox JSON: %v", err)
	}
	return v.Spend
}
