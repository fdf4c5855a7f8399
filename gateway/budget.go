package gateway

import (
	"fmt"
	"net/http"
)

// Budget is the token budget a session holds its provider requests to:
// the budget, and what the issue spent before the session.
type Budget struct {
	// Limit is the tokens the issue may spend in all (input and output, as
	// Usage counts them); 0 or less: no limit.
	Limit int64
	// Spent is what the issue spent before this session (its earlier
	// runs); the session's own usage adds to it.
	Spent int64
}

// SetBudget holds the session's provider requests to b from now on: once
// b.Spent plus the tokens the session has metered is at or over b.Limit,
// every provider request is refused before it is forwarded, with an error
// in the provider's shape that the CLI shows, and recorded (Refused). A
// request already forwarded is never cut, so the last one may cross the
// limit; tokens count when an answer ends. A zero Budget (the default)
// means no limit. A remaining budget of n tokens is Budget{Limit: n}.
func (s *Session) SetBudget(b Budget) {
	s.mu.Lock()
	s.budget = b
	s.mu.Unlock()
}

// BudgetReached tells whether the session refused a request because its
// budget was reached: the run was stopped by the budget, not by its agent.
func (s *Session) BudgetReached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgetHit
}

// overBudget tells whether the budget is reached, with the tokens
// so far and its limit.
func (s *Session) overBudget() (used, limit int64, over bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.budget.Limit <= 0 {
		return 0, 0, false
	}
	used = s.budget.Spent + s.usage.InputTokens + s.usage.OutputTokens
	if used < s.budget.Limit {
		return used, s.budget.Limit, false
	}
	s.budgetHit = true
	return used, s.budget.Limit, true
}

// holdToBudget refuses the provider request (path: where it would have
// gone) when the budget is reached, and says whether it did.
func (s *Session) holdToBudget(w http.ResponseWriter, r *http.Request, p *provider, path string) bool {
	used, limit, over := s.overBudget()
	if !over {
		return false
	}
	reached := fmt.Sprintf("the issue's token budget is reached (%d of %d tokens)", used, limit)
	s.record(r, p.shown, path, reached)
	p.writeAPIError(w, errBudget, "Alfred: "+reached+"; a person can add the ai::budget_step label to grant one more step")
	return true
}
