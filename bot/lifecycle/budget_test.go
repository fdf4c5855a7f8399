package lifecycle

import (
	"testing"

	"github.com/alchemic-studio/alfred/state"
)

// TestBudgetLimits: the boundary of a budget, in tokens and dollars, with
// the steps granted; unpriced runs count no dollars.
func TestBudgetLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		l     Limits
		spend state.Spend
		want  bool
	}{
		{"no budget", Limits{}, state.Spend{Tokens: 1 << 40, USD: 1e6}, false},
		{"under the tokens", Limits{Tokens: 1000}, state.Spend{Tokens: 999}, false},
		{"exactly at the tokens", Limits{Tokens: 1000}, state.Spend{Tokens: 1000}, true},
		{"over the tokens", Limits{Tokens: 1000}, state.Spend{Tokens: 1001}, true},
		{"a step granted", Limits{Tokens: 1000, Steps: 1}, state.Spend{Tokens: 1999}, false},
		{"at the step's end", Limits{Tokens: 1000, Steps: 1}, state.Spend{Tokens: 2000}, true},
		{"under the dollars", Limits{USD: 0.5}, state.Spend{USD: 0.4999}, false},
		{"exactly at the dollars", Limits{USD: 0.5}, state.Spend{USD: 0.5}, true},
		{"no price known: no dollars", Limits{USD: 0.5}, state.Spend{Tokens: 1 << 30, Unpriced: 3}, false},
		{"either limit", Limits{Tokens: 1000, USD: 5}, state.Spend{Tokens: 10, USD: 5}, true},
	} {
		if got := tc.l.Reached(tc.spend); got != tc.want {
			t.Errorf("%s: Reached(%+v) = %v, want %v", tc.name, tc.spend, got, tc.want)
		}
	}
}
