package views

import (
	"context"
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
