package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
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
// the gateway (meterBudget), ends "budget reached", and the next run is held
// back; an unsealed run finishes. While paused, the steps that would start a run are dropped
// (logged), so the one kept is the one that was held back first.

// limits are a budget: the setting's amounts and the steps granted.
type limits struct {
	tokens int64   // per step; 0: no token limit
	usd    float64 // per step; 0: no dollar limit
	steps  int     // steps granted on top of the first
}

// budgetOf reads the budget of mb's project and the steps granted to mb.
func (e *Engine) budgetOf(mb *state.Mailbox) limits {
	sc := scopeOf(mb)
	l := limits{
		tokens: parseTokens(AgentBudgetTokens.Get(e.settings, sc)),
		usd:    parseUSD(AgentBudgetUSD.Get(e.settings, sc)),
	}
	if mb.Budget != nil {
		l.steps = mb.Budget.Steps
	}
	return l
}

func (l limits) none() bool { return l.tokens == 0 && l.usd == 0 }

// total is the budget with the granted steps.
func (l limits) total() (int64, float64) {
	n := int64(1 + l.steps)
	return l.tokens * n, l.usd * float64(n)
}

// reached tells whether sp is at or over the budget.
func (l limits) reached(sp state.Spend) bool {
	tokens, usd := l.total()
	return tokens > 0 && sp.Tokens >= tokens || usd > 0 && sp.USD >= usd
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

// holdBack is asked by step before it takes a row that starts a run of
// phase: it tells whether the budget holds the run back, in which case the
// mailbox is paused now (or was already) and the step is kept on it.
func (e *Engine) holdBack(ctx context.Context, mb *state.Mailbox, s Step, phase agents.Phase, trigger, input string) (bool, error) {
	if Status(mb.Status) == StatusPaused {
		e.log.Info("run held back: the issue is paused at its budget", "mailbox", mb.ID, "step", s, "phase", phase)
		return true, e.save(ctx, mb)
	}
	l := e.budgetOf(mb)
	if l.none() {
		return false, nil
	}
	sp, err := e.spent(mb.ID)
	if err != nil {
		return false, fmt.Errorf("budget: %w", err)
	}
	b := state.Budget{Steps: l.steps}
	b.Tokens, b.USD = l.total()
	mb.Budget = &b
	if !l.reached(sp) {
		return false, nil
	}
	b.Paused = &state.PausedStep{Step: string(s), From: mb.Status, Phase: string(phase), Trigger: trigger, Input: input, At: e.now()}
	e.log.Info("budget reached: paused", "mailbox", mb.ID, "phase", phase, "tokens", sp.Tokens, "usd", sp.USD, "budget_tokens", b.Tokens, "budget_usd", b.USD)
	if err := e.comment(ctx, mb, KindBudgetPaused, strconv.Itoa(l.steps), textBudgetPaused(phase, sp, l)); err != nil {
		return false, err
	}
	return true, e.step(ctx, mb, StepBudgetPaused, "", "", "")
}

// resume takes the step the budget held back, from the status it was held
// in, after ai::budget_step granted one more step (decideCommand).
func (e *Engine) resume(ctx context.Context, mb *state.Mailbox, p state.PausedStep) error {
	if e.stepped != nil {
		e.stepped(StepBudgetStep)
	}
	if p.From != "" {
		if err := e.setStatusLabel(ctx, mb, Status(p.From)); err != nil {
			return err
		}
	}
	mb.Status = p.From
	return e.step(ctx, mb, Step(p.Step), agents.Phase(p.Phase), p.Trigger, p.Input)
}

// decideBudgetStep grants one more budget step to a paused mailbox and asks
// for the step it held back.
func decideBudgetStep(mb state.Mailbox, actor, delivery string, a actions) (state.Mailbox, actions) {
	if Status(mb.Status) != StatusPaused || mb.Budget == nil || mb.Budget.Paused == nil {
		a.note = "budget_step ignored: the issue is not paused at its budget"
		return mb, a
	}
	b := *mb.Budget
	p := *b.Paused
	b.Steps++
	b.Paused = nil
	mb.Budget = &b
	a.say = &said{KindBudgetStep, delivery, textBudgetStep(actor, b.Steps)}
	a.resume = &p
	return mb, a
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

// textBudgetPaused says what was spent, the budget, and how to go on.
func textBudgetPaused(phase agents.Phase, sp state.Spend, l limits) string {
	tokens, usd := l.total()
	var budget, step []string
	if tokens > 0 {
		budget = append(budget, fmt.Sprintf("%d tokens (`AGENT_BUDGET_TOKENS`)", tokens))
		step = append(step, fmt.Sprintf("%d tokens", l.tokens))
	}
	if usd > 0 {
		budget = append(budget, fmt.Sprintf("$%.2f (`AGENT_BUDGET_USD`)", usd))
		step = append(step, fmt.Sprintf("$%.2f", l.usd))
	}
	spent := fmt.Sprintf("%d tokens", sp.Tokens)
	if usd > 0 || sp.USD > 0 {
		spent += fmt.Sprintf(" and $%.2f", sp.USD)
	}
	if usd > 0 && sp.Unpriced > 0 {
		spent += fmt.Sprintf(" (%d run(s) whose CLI reports no cost count no dollars)", sp.Unpriced)
	}
	granted := ""
	if l.steps > 0 {
		granted = fmt.Sprintf(", with %d step(s) granted", l.steps)
	}
	return fmt.Sprintf("I paused before the `%s` run: this issue has spent %s, and its budget is %s%s.\n\nA person with write access can add `%s` to grant one more step (%s) and let me go on.",
		phase, spent, strings.Join(budget, " and "), granted, CommandBudgetStep.Label(), strings.Join(step, " and "))
}

func textBudgetStep(by string, steps int) string {
	return fmt.Sprintf("Budget step %d granted by %s. Going on.", steps, mention(by))
}

// meterBudget hands the token budget to the run's gateway session,
// so the budget holds while the run goes: a model request past it is
// refused with an answer the CLI shows, and the run ends "budget reached"
// (the next step then pauses the issue, as before a run).
func (e *Engine) meterBudget(mb *state.Mailbox, gw *gateway.Session) error {
	l := e.budgetOf(mb)
	tokens, _ := l.total()
	if tokens == 0 {
		return nil
	}
	sp, err := e.spent(mb.ID)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	gw.SetBudget(gateway.Budget{Limit: tokens, Spent: sp.Tokens})
	return nil
}
