package state

import "testing"

// TestSpendOf: a sealed run's tokens are the gateway's, whatever its CLI
// says (Codex reports a resumed session's total); dollars are the CLI's; a
// run with tokens and no dollars is unpriced.
func TestSpendOf(t *testing.T) {
	cli := []LLMSession{{InputTokens: 20, OutputTokens: 2, CostUSD: 0}}
	for _, tc := range []struct {
		name     string
		run      Run
		sessions []LLMSession
		want     Spend
	}{
		{"nothing", Run{}, nil, Spend{}},
		{"the CLI's figures", Run{}, []LLMSession{{InputTokens: 100, OutputTokens: 20, CostUSD: 0.5}, {InputTokens: 1, CostUSD: 0.25}}, Spend{Tokens: 121, USD: 0.75}},
		{"the gateway's, when sealed", Run{Gateway: &RunGateway{Requests: 1, InputTokens: 10, OutputTokens: 1}}, cli, Spend{Tokens: 11, Unpriced: 1}},
		{"a gateway that counted nothing", Run{Gateway: &RunGateway{}}, cli, Spend{Tokens: 22, Unpriced: 1}},
		{"unpriced", Run{}, cli, Spend{Tokens: 22, Unpriced: 1}},
	} {
		if got := SpendOf(tc.run, tc.sessions); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := (Spend{Tokens: 1, USD: 1, Unpriced: 1}).Add(Spend{Tokens: 2, USD: 0.5}); got != (Spend{Tokens: 3, USD: 1.5, Unpriced: 1}) {
		t.Errorf("Add: %+v", got)
	}
}
