package lifecycle

import (
	"fmt"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/state"
)

// The cost budget of an issue, as the lifecycle reads it: the budget's
// amounts and the steps granted (bot's budget.go reads the settings and the
// spend, and holds a run back before it starts).

// Limits are a budget: the setting's amounts and the steps granted.
type Limits struct {
	Tokens int64   // per step; 0: no token limit
	USD    float64 // per step; 0: no dollar limit
	Steps  int     // steps granted on top of the first
}

// None tells a budget without limits.
func (l Limits) None() bool { return l.Tokens == 0 && l.USD == 0 }

// Total is the budget with the granted steps.
func (l Limits) Total() (int64, float64) {
	n := int64(1 + l.Steps)
	return l.Tokens * n, l.USD * float64(n)
}

// Reached tells whether sp is at or over the budget.
func (l Limits) Reached(sp state.Spend) bool {
	tokens, usd := l.Total()
	return tokens > 0 && sp.Tokens >= tokens || usd > 0 && sp.USD >= usd
}

// PauseStep is the step a run that would start with the spend sp takes
// instead: StepBudgetPaused when sp reached the budget, "" when the run may
// start.
func (l Limits) PauseStep(sp state.Spend) Step {
	if l.Reached(sp) {
		return StepBudgetPaused
	}
	return ""
}

// decideBudgetStep grants one more budget step to a paused mailbox and asks
// for the step it held back.
func decideBudgetStep(mb state.Mailbox, _ Command, actor, delivery string, _ Rules, a Actions) (state.Mailbox, Actions) {
	if Status(mb.Status) != StatusPaused || mb.Budget == nil || mb.Budget.Paused == nil {
		a.Note = "budget_step ignored: the issue is not paused at its budget"
		return mb, a
	}
	b := *mb.Budget
	p := *b.Paused
	b.Steps++
	b.Paused = nil
	mb.Budget = &b
	a.Say = &Said{KindBudgetStep, delivery, textBudgetStep(actor, b.Steps)}
	a.Resume = &p
	return mb, a
}

// TextBudgetPaused says what was spent, the budget, and how to go on.
func TextBudgetPaused(phase agents.Phase, sp state.Spend, l Limits) string {
	tokens, usd := l.Total()
	var budget, step []string
	if tokens > 0 {
		budget = append(budget, fmt.Sprintf("%d tokens (`AGENT_BUDGET_TOKENS`)", tokens))
		step = append(step, fmt.Sprintf("%d tokens", l.Tokens))
	}
	if usd > 0 {
		budget = append(budget, fmt.Sprintf("$%.2f (`AGENT_BUDGET_USD`)", usd))
		step = append(step, fmt.Sprintf("$%.2f", l.USD))
	}
	spent := fmt.Sprintf("%d tokens", sp.Tokens)
	if usd > 0 || sp.USD > 0 {
		spent += fmt.Sprintf(" and $%.2f", sp.USD)
	}
	if usd > 0 && sp.Unpriced > 0 {
		spent += fmt.Sprintf(" (%d run(s) whose CLI reports no cost count no dollars)", sp.Unpriced)
	}
	granted := ""
	if l.Steps > 0 {
		granted = fmt.Sprintf(", with %d step(s) granted", l.Steps)
	}
	return fmt.Sprintf("I paused before the `%s` run: this issue has spent %s, and its budget is %s%s.\n\nA person with write access can add `%s` to grant one more step (%s) and let me go on.",
		phase, spent, strings.Join(budget, " and "), granted, CommandBudgetStep.Label(), strings.Join(step, " and "))
}

func textBudgetStep(by string, steps int) string {
	return fmt.Sprintf("Budget step %d granted by %s. Going on.", steps, mention(by))
}
