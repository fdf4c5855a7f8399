package views

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// TestRunPageGateway: a sealed run's page has a small model gateway
// section (usage and refusals, redacted); a run that was not sealed has none.
func TestRunPageGateway(t *testing.T) {
	f := newFixture(t)
	sealed := "44444444-dddd"
	err := f.store.Update(context.Background(), func(tx *state.Tx) error {
		t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		return tx.PutRun(state.Run{ID: sealed, MailboxID: f.mb.ID, Phase: "analysis", AdapterID: "claude-code", Runner: "image",
			Status: state.RunSucceeded, CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Minute),
			Gateway: &state.RunGateway{Requests: 3, InputTokens: 120, OutputTokens: 45, RefusedTotal: 2, Refused: []string{
				"the agent tried to reach evil.example:443 (CONNECT): refused",
				"the agent tried to reach leak.example/sk-live-0123456789 (GET): refused",
			}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, f.deps())
	_, body := get(t, srv.URL+"/runs/"+sealed)
	for _, want := range []string{"<h3>Model gateway</h3>", "3 requests · 120 in · 45 out",
		"<li>the agent tried to reach evil.example:443 (CONNECT): refused</li>", "leak.example/[redacted] (GET): refused"} {
		if !strings.Contains(body, want) {
			t.Errorf("sealed run page lacks %q", want)
		}
	}
	if strings.Contains(body, "sk-live-0123456789") {
		t.Error("the sealed run page shows a secret")
	}
	_, body = get(t, srv.URL+"/runs/"+f.fresh)
	if strings.Contains(body, "Model gateway") {
		t.Error("a run that was not sealed shows a gateway section")
	}
}

// TestMailboxPageGateway: the mailbox page sums what the gateway counted
// over its sealed runs, next to the CLIs' own figures, and a run that was not
// sealed shows none.
func TestMailboxPageGateway(t *testing.T) {
	f := newFixture(t)
	err := f.store.Update(context.Background(), func(tx *state.Tx) error {
		t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for i, g := range []state.RunGateway{{Requests: 3, InputTokens: 120, OutputTokens: 45}, {Requests: 2, InputTokens: 80, OutputTokens: 5, RefusedTotal: 1}} {
			err := tx.PutRun(state.Run{ID: fmt.Sprintf("5555555%d-eeee", i), MailboxID: f.mb.ID, Phase: "development", AdapterID: "claude-code", Runner: "image",
				Status: state.RunSucceeded, CreatedAt: t0.Add(time.Duration(i) * time.Hour), StartedAt: t0, FinishedAt: t0.Add(time.Minute), Gateway: &g})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, f.deps())
	_, body := get(t, srv.URL+"/mailboxes/"+f.mb.ID)
	for _, want := range []string{"3 requests · 120 in · 45 out", "2 requests · 80 in · 5 out",
		`data-test="total-gateway">5 requests · 200 in · 50 out · 1 refused`, `data-test="run-gateway">—`} {
		if !strings.Contains(body, want) {
			t.Errorf("mailbox page lacks %q", want)
		}
	}
	var v struct {
		Gateway state.RunGateway `json:"gateway"`
	}
	_, raw := get(t, srv.URL+"/api/mailboxes/"+f.mb.ID)
	if err := json.Unmarshal([]byte(raw), &v); err != nil || v.Gateway.InputTokens != 200 || v.Gateway.Requests != 5 {
		t.Errorf("mailbox JSON gateway %+v, %v", v.Gateway, err)
	}
}

// TestRunPageSaysTheHandoff: a run that started fresh with a handoff from
// another CLI's session says so where the page words the session's start.
func TestRunPageSaysTheHandoff(t *testing.T) {
	f := newFixture(t)
	id := "66666666-ffff"
	err := f.store.Update(context.Background(), func(tx *state.Tx) error {
		t0 := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
		if err := tx.PutRun(state.Run{ID: id, MailboxID: f.mb.ID, Phase: "development", AdapterID: "codex", Runner: "image",
			Status: state.RunSucceeded, CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Minute),
			HandoffFrom: &state.RunHandoff{Adapter: "claude-code", NativeSessionID: "5f2c-native-1"}}); err != nil {
			return err
		}
		name, why := f.mb.BranchName, "adapter_changed"
		return tx.PutLLMSession(state.LLMSession{ID: "s9", RunID: id, MailboxID: f.mb.ID, AdapterID: "codex", SessionName: &name, ResumeFallback: &why})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, serve(t, f.deps()).URL+"/runs/"+id)
	if want := `<span data-test="session-mode">fresh (adapter changed), with a handoff from claude-code session 5f2c-native-1</span>`; !strings.Contains(body, want) {
		t.Errorf("the run page lacks %q", want)
	}
}
