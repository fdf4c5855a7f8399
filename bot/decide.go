package bot

import (
	"cmp"
	"slices"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// The lifecycle's decisions, without I/O: from a mailbox, what happened to it
// (a command label, a run that ended, the state of its merge request) and the
// rules of its project, each decide function returns the mailbox as it should
// be and the actions that bring the forge and the records there. The engine
// gathers the facts, calls one of them and carries the actions out (apply);
// the decisions are tested as plain tables (decide_test.go), and every step
// they take is a row of table.go.

// rules are the settings of a mailbox's project that its decisions read.
type rules struct {
	LLMRetries     int    // LLM_MAX_RETRIES
	CIFix          int    // CI_FIX_MAX_ATTEMPTS
	CIHardCap      int    // CI_FIX_HARD_CAP, for retry_until_green
	ConflictFix    int    // CONFLICT_FIX_MAX_ATTEMPTS
	NeedValidation bool   // REQUIRE_PLAN_VALIDATION
	PublicURL      string // ALFRED_PUBLIC_URL, for links to run pages; "" for none
}

// runURL is the page of run id, "" without a public URL.
func (r rules) runURL(id string) string { return runPage(r.PublicURL, id) }

// rulesOf reads the rules of mb's project.
func (e *Engine) rulesOf(mb *state.Mailbox) rules {
	sc := scopeOf(mb)
	return rules{
		LLMRetries: LLMMaxRetries.Get(e.settings, sc), CIFix: CIFixMaxAttempts.Get(e.settings, sc),
		CIHardCap: CIFixHardCap.Get(e.settings, sc), ConflictFix: ConflictFixMaxAttempts.Get(e.settings, sc),
		NeedValidation: RequirePlanValidation.Get(e.settings, sc), PublicURL: e.cfg.PublicURL,
	}
}

// actions are what a decision asks of the engine, carried out in this order
// by apply: write the description section, open the merge request, post a
// comment, remove a command label, release quarantined events, take a step
// of the table (or only save the mailbox), then check the merge request.
type actions struct {
	section  string       // the functional analysis, for the description section
	ensureMR bool         // find or open the merge request of the issue branch
	say      *said        // the managed comment to post
	unlabel  Command      // the command label to remove from the issue
	release  bool         // hand the quarantined events to the mailbox again
	step     Step         // the transition to take; "" saves the mailbox
	phase    agents.Phase // the phase a phaseFailed row runs
	trigger  string       // what the step's run answers (a delivery, a run)
	extra    string       // the run's input: the question, the feedback
	checkMR  string       // after the step: check the merge request, for this trigger
	bindPlan bool         // the plan comment posted is the validated one (a validation given while it was revised)
	note     string       // why the decision moves nothing, for the log
	mrResult string       // the run's result, for the body of a merge request it opens
	// resume is the step the budget held back, taken again (from its status)
	// instead of step, after ai::budget_step.
	resume *state.PausedStep
}

// said is a managed comment: its kind, its cause (one comment per kind and
// cause) and its text.
type said struct{ kind, cause, text string }

// blocked stops mb with one comment saying why and which label unblocks it.
func blocked(mb state.Mailbox, phase, text, cause string) (state.Mailbox, actions) {
	mb.Phase = phase
	return mb, actions{say: &said{KindBlocked, cause, text}, step: StepBlocked}
}

// decideCommand is what a command label does to mb, whose Labels are the
// labels the event reports. A command is removed once handled, whatever the
// mailbox's state; one that does not apply says so in the log.
func decideCommand(mb state.Mailbox, c Command, actor, delivery string, r rules) (state.Mailbox, actions) {
	status := Status(mb.Status)
	if c == CommandValidatePlan && status == StatusTechnicalAnalysis {
		// The plan is being revised: the validation is for the new plan, so
		// the label stays until the analysis ends (decideAnalysis).
		return mb, actions{note: "validate_plan kept for the revised plan"}
	}
	mb.Labels = withoutLabel(mb.Labels, c.Label())
	a := actions{unlabel: c}
	switch c {
	case CommandValidatePlan:
		if status != StatusWaitingValidation {
			a.note = "validate_plan ignored: no plan waits"
			return mb, a
		}
		a.say = &said{KindPlanValidated, delivery, textPlanValidated(actor)}
		a.step, a.trigger = StepValidatePlan, delivery
		return mb, a
	case CommandRetry, CommandRetryOnce, CommandRetryUntilGreen:
		return decideRetry(mb, c, delivery, r, a)
	case CommandBudgetStep:
		return decideBudgetStep(mb, actor, delivery, a)
	}
	return mb, a
}

// decideRetry is a retry command: the quarantined events again when there
// are some and the mailbox is not blocked, else the last phase again, with
// its loops' counters set by the command.
func decideRetry(mb state.Mailbox, c Command, delivery string, r rules, a actions) (state.Mailbox, actions) {
	a.release = len(mb.Quarantined) > 0
	if a.release && Status(mb.Status) != StatusBlocked {
		// What to try again is the events set aside, not a phase.
		a.say = &said{KindRetryResumed, delivery, textRetryEvents(len(mb.Quarantined))}
		return mb, a
	}
	if mb.ActiveRunID != "" {
		a.note = "retry ignored: a run is in progress"
		return mb, a
	}
	phase := cmp.Or(agents.Phase(mb.Phase), agents.PhaseAnalysis)
	switch c {
	case CommandRetry:
		mb.LLMRetries, mb.CIFixAttempts, mb.ConflictFixAttempts, mb.UntilGreen = 0, 0, 0, false
	case CommandRetryOnce:
		// Exactly one more attempt: the next failure blocks again.
		mb.LLMRetries = r.LLMRetries
		mb.CIFixAttempts = max(0, r.CIFix-1)
		mb.ConflictFixAttempts = max(0, r.ConflictFix-1)
	case CommandRetryUntilGreen:
		mb.UntilGreen, mb.LLMRetries = true, 0
	}
	a.say = &said{KindRetryResumed, delivery, textRetry(string(phase))}
	a.step, a.phase, a.trigger = retryStep(phase), phase, delivery
	return mb, a
}

// retryStep is the step that runs phase p again on a retry command.
func retryStep(p agents.Phase) Step {
	switch p {
	case agents.PhaseAnalysis, agents.PhaseAnswer:
		return StepRetryAnalysis
	default:
		return StepRetryDevelopment
	}
}

// decideRunEnd is what a finished run does to its mailbox: nothing more when
// it was stopped on purpose, a block when its CLI stalled, a retry or a
// block when it failed otherwise, else the effects of its phase.
func decideRunEnd(mb state.Mailbox, run state.Run, r rules) (state.Mailbox, actions) {
	mb.ActiveRunID = ""
	switch {
	case run.PlanChanged != "":
		// Not started: what it would work from is no longer what a person
		// validated. A person validates again.
		mb.Validated = nil
		return mb, actions{say: &said{KindPlanChanged, run.ID, textPlanChanged(run.PlanChanged)}, step: StepPlanChanged}
	case run.Status == state.RunCanceled:
		// Stopped on purpose (finish), never retried. A run a shutdown
		// interrupted stays running in the records, and recoverRuns starts
		// it again.
		return mb, actions{}
	case run.Held != nil:
		// The change broke a rule of what may leave the sandbox: a person
		// decides, whatever LLM_MAX_RETRIES allows.
		return blocked(mb, run.Phase, textHeld(run.Phase, run.Held, r.runURL(run.ID)), run.ID)
	case run.Stalled:
		// Its CLI stalled (stall.go): set up wrong, it would stall again,
		// so it blocks at once, whatever LLM_MAX_RETRIES allows.
		return blocked(mb, run.Phase, textBlocked(run.Phase, run.Outcome, mb.LLMRetries+1), run.ID)
	case run.Status != state.RunSucceeded:
		return retryOrBlock(mb, run, run.Outcome, r)
	}
	switch agents.Phase(run.Phase) {
	case agents.PhaseAnalysis:
		return decideAnalysis(mb, run, r)
	case agents.PhaseAnswer:
		mb.LLMRetries = 0
		a := actions{say: &said{KindAnswer, run.ID, run.Result}}
		if Flow(mb.Flow) == FlowQuestion && Status(mb.Status) == StatusFunctionalAnalysis {
			a.step = StepAnswered
		}
		return mb, a
	}
	return decideWritten(mb, run, r)
}

// decideWritten ends a run of a phase that writes: what it changed is pushed
// by now (or it found nothing to do), the merge request is opened when the
// issue has none, and its CI is looked at.
func decideWritten(mb state.Mailbox, run state.Run, r rules) (state.Mailbox, actions) {
	a := actions{step: StepPushed, checkMR: run.ID}
	switch {
	case run.NothingToDo:
		a.say = &said{KindNothingToDo, run.ID, run.Result}
	case !run.Pushed:
		return retryOrBlock(mb, run, errNothingPushed.Error(), r)
	default:
		mb.HeadSHA = run.HeadSHA
		a.ensureMR = agents.Phase(run.Phase) == agents.PhaseDevelopment || mb.MergeRequestIID == 0
		a.mrResult = run.Result
	}
	mb.LLMRetries = 0
	return mb, a
}

// decideAnalysis ends an analysis: the functional analysis goes into the
// description section, then the agent's questions are asked (waiting for
// information), or the plan is posted and waits for validation, or goes on,
// or ends the flow for type::analysis.
func decideAnalysis(mb state.Mailbox, run state.Run, r rules) (state.Mailbox, actions) {
	an := ParseAnalysis(run.Result)
	mb.LLMRetries = 0
	a := actions{section: an.Functional}
	mb.Validated = nil // a new plan: any earlier validation was of another
	plan := func(text string, s Step) (state.Mailbox, actions) {
		a.say, a.step = &said{KindPlan, run.ID, text}, s
		if s == StepPlanGoesOn {
			a.trigger = run.ID
		}
		return mb, a
	}
	switch {
	case an.Questions != "":
		a.say, a.step = &said{KindQuestions, run.ID, textQuestions(an.Questions)}, StepQuestionsAsked
		return mb, a
	case Flow(mb.Flow) == FlowAnalysis:
		return plan(textPlanOnly(an.Plan), StepPlanOnly)
	case r.NeedValidation && slices.Contains(mb.Labels, CommandValidatePlan.Label()):
		// Validated while it was being revised (decideCommand kept the label).
		mb.Labels = withoutLabel(mb.Labels, CommandValidatePlan.Label())
		a.unlabel, a.bindPlan = CommandValidatePlan, true
		return plan(textPlan(an.Plan, false), StepPlanGoesOn)
	case r.NeedValidation:
		return plan(textPlan(an.Plan, true), StepPlanPosted)
	}
	return plan(textPlan(an.Plan, false), StepPlanGoesOn)
}

// retryOrBlock runs a failed phase again while LLM_MAX_RETRIES allows, then
// blocks the mailbox with one comment that says which label unblocks it.
func retryOrBlock(mb state.Mailbox, run state.Run, why string, r rules) (state.Mailbox, actions) {
	if mb.LLMRetries < r.LLMRetries {
		mb.LLMRetries++
		return mb, actions{step: StepRunFailed, phase: agents.Phase(run.Phase), trigger: run.ID + "/retry", extra: run.Input, note: "retrying failed run"}
	}
	return blocked(mb, run.Phase, textBlocked(run.Phase, why, mb.LLMRetries+1), run.ID)
}

// decideMergeRequest is what the bot's merge request asks of its mailbox,
// from whether git confirms a conflict and the CI state of its head: a fix
// run while the loop's limit allows, a block when it is reached, in_review
// when CI is green.
func decideMergeRequest(mb state.Mailbox, mr forges.MergeRequest, conflict bool, ci forges.CIState, r rules, trigger string) (state.Mailbox, actions) {
	switch v := judgeMergeRequest(mb, conflict, ci, r); {
	case v.block == agents.PhaseConflictResolution:
		return blocked(mb, string(v.block), textConflictBlocked(mb.ConflictFixAttempts, mr.TargetBranch), "conflict/"+mr.HeadSHA)
	case v.block == agents.PhaseCIFix:
		return blocked(mb, string(v.block), textCIBlocked(mb.CIFixAttempts), "ci/"+mr.HeadSHA)
	case v.step == StepConflict:
		mb.ConflictFixAttempts++
		return mb, actions{step: StepConflict, trigger: trigger + "/conflict/" + mr.HeadSHA}
	case v.step == StepCIRed:
		mb.CIFixAttempts++
		return mb, actions{step: StepCIRed, trigger: trigger + "/ci/" + mr.HeadSHA}
	case v.step == StepCIGreen:
		mb.UntilGreen = false
		return mb, actions{step: StepCIGreen, trigger: trigger}
	}
	return mb, actions{}
}

// mrVerdict is what the bot's merge request asks of its mailbox: a step of
// the table, a block because the loop of a phase reached its limit, or
// nothing (both zero).
type mrVerdict struct {
	step  Step
	block agents.Phase
}

// judgeMergeRequest is the verdict on the bot's merge request: from the
// mailbox, whether git confirms a conflict, the CI state of the head and the
// loops' limits.
func judgeMergeRequest(mb state.Mailbox, conflict bool, ci forges.CIState, r rules) mrVerdict {
	if conflict {
		if mb.ConflictFixAttempts >= r.ConflictFix {
			return mrVerdict{block: agents.PhaseConflictResolution}
		}
		return mrVerdict{step: StepConflict}
	}
	switch ci {
	case forges.CIFailure:
		limit := r.CIFix
		if mb.UntilGreen {
			limit = r.CIHardCap
		}
		if mb.CIFixAttempts >= limit {
			return mrVerdict{block: agents.PhaseCIFix}
		}
		return mrVerdict{step: StepCIRed}
	case forges.CISuccess:
		if Status(mb.Status) != StatusInReview {
			return mrVerdict{step: StepCIGreen}
		}
	}
	return mrVerdict{}
}

// withoutLabel is labels without l, as a new slice.
func withoutLabel(labels []string, l string) []string {
	return slices.DeleteFunc(slices.Clone(labels), func(x string) bool { return x == l })
}
