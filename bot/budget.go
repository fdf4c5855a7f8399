package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/state"
)

// The cost budget of an issue (AGENT_BUDGET_TOKENS, AGENT_BUDGET_USD).
// Before every run the engine compares the mailbox's spend so far
// (state.SpendOf over its runs) with the budget and the steps people
// granted. At or over it, the run is not started: the step of the lifecycle
// that would have started it is kept on the mailbox (state.Budget.Paused),
// the mailbox is paused with one comment that says what was spent and how to
// go on, and ai::budget_step (write access, as every command) grants the
// setting's amount once more and takes the kept step. A sealed run that
// crosses the budget while it runs has its next model requests refused by
// the gateway (bot/run's MeterBudget), ends "budget reached", and the next run is held
// back; an unsealed run finishes. While paused, the steps that would start a run are dropped
// (logged), so the one kept is the one that was held back first.

// budgetOf reads the budget of mb's project and the steps granted to mb.
func (e *Engine) budgetOf(mb *state.Mailbox) lifecycle.Limits {
	sc := scopeOf(mb)
	l := lifecycle.Limits{
		Tokens: parseTokens(AgentBudgetTokens.Get(e.settings, sc)),
		USD:    parseUSD(AgentBudgetUSD.Get(e.settings, sc)),
	}
	if mb.Budget != nil {
		l.Steps = mb.Budget.Steps
	}
	return l
}

// spent sums what the mailbox's runs cost so far.
func (e *Engine) spent(mailboxID string) (state.Spend, error) {
	runs, err := e.store.Runs(mailboxID)
	if err != nil {
		return state.Spend{}, fmt.Errorf("runs of %s: %w", mailboxID, err)
	}
	var total state.Spend
	for _, r := range runs {
		run, sessions, err := e.store.RunWithSessions(r.ID)
		if err != nil {
			return state.Spend{}, fmt.Errorf("run %s: %w", r.ID, err)
		}
		total = total.Add(state.SpendOf(run, sessions))
	}
	return total, nil
}

// budgetHold is what the budget says of a run a step would start: nothing
// (the zero value), dropped (the mailbox is paused already), or pause (the
// step to take instead, StepBudgetPaused), with the spend and the limits the
// comment tells.
type budgetHold struct {
	dropped bool
	pause   lifecycle.Step
	spent   state.Spend
	limits  lifecycle.Limits
}

// holdBack is asked by step before it takes row s, which starts a run of
// phase: it reports whether the budget holds the run back. It records the
// budget on mb and, when it is reached, the step kept for ai::budget_step
// (mb.Budget.Paused); it takes no step and posts nothing: step does.
func (e *Engine) holdBack(mb *state.Mailbox, s lifecycle.Step, phase agents.Phase, trigger, input string) (budgetHold, error) {
	if lifecycle.Status(mb.Status).HoldsRuns() {
		return budgetHold{dropped: true}, nil
	}
	l := e.budgetOf(mb)
	if l.None() {
		return budgetHold{}, nil
	}
	sp, err := e.spent(mb.ID)
	if err != nil {
		return budgetHold{}, fmt.Errorf("budget: %w", err)
	}
	b := state.Budget{Steps: l.Steps}
	b.Tokens, b.USD = l.Total()
	mb.Budget = &b
	pause := l.PauseStep(sp)
	if pause == "" {
		return budgetHold{}, nil
	}
	b.Paused = &state.PausedStep{Step: string(s), From: mb.Status, Phase: string(phase), Trigger: trigger, Input: input, At: e.now()}
	e.log.Info("budget reached: paused", "mailbox", mb.ID, "phase", phase, "tokens", sp.Tokens, "usd", sp.USD, "budget_tokens", b.Tokens, "budget_usd", b.USD)
	return budgetHold{pause: pause, spent: sp, limits: l}, nil
}

// resume takes the step the budget held back, from the status it was held
// in, after ai::budget_step granted one more step (lifecycle.DecideCommand).
func (e *Engine) resume(ctx context.Context, mb *state.Mailbox, p state.PausedStep) error {
	if e.stepped != nil {
		e.stepped(lifecycle.StepBudgetStep)
	}
	if p.From != "" {
		if err := e.setStatusLabel(ctx, mb, lifecycle.Status(p.From)); err != nil {
			return err
		}
	}
	if mb.Status != p.From {
		mb.StatusSince = e.now()
	}
	mb.Status = p.From
	return e.step(ctx, mb, lifecycle.Step(p.Step), agents.Phase(p.Phase), p.Trigger, p.Input)
}

// checkBudget refuses a budget that is not empty or a positive number
// (whole for tokens).
func checkBudget(dollars bool) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil
		}
		if dollars {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f <= 0 {
				return fmt.Errorf("%q is not a positive amount in dollars such as 2.50", v)
			}
			return nil
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive whole number of tokens", v)
		}
		return nil
	}
}

// parseTokens and parseUSD read checked settings; empty is 0 (no limit).
func parseTokens(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return max(n, 0)
}

func parseUSD(v string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return max(f, 0)
}
