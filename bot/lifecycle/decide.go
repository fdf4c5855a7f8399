package lifecycle

import (
	"cmp"
	"errors"
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

// Rules are the settings of a mailbox's project that its decisions read.
type Rules struct {
	LLMRetries     int    // LLM_MAX_RETRIES
	CIFix          int    // CI_FIX_MAX_ATTEMPTS
	CIHardCap      int    // CI_FIX_HARD_CAP, for retry_until_green
	ConflictFix    int    // CONFLICT_FIX_MAX_ATTEMPTS
	NeedValidation bool   // REQUIRE_PLAN_VALIDATION
	PublicURL      string // ALFRED_PUBLIC_URL, for links to run pages; "" for none
}

// runURL is the page of run id, "" without a public URL.
func (r Rules) runURL(id string) string { return RunPage(r.PublicURL, id) }

// Actions are what a decision asks of the engine, carried out in this order
// by bot's Engine.apply: record a validation, write the description section,
// open the merge request, post a comment, remove a command label, release
// quarantined events, take a step of the table (or only save the mailbox),
// then check the merge request.
type Actions struct {
	RecordBy string       // record the validation of the plan comment by this person, first
	Section  string       // the functional analysis, for the description section
	EnsureMR bool         // find or open the merge request of the issue branch
	Say      *Said        // the managed comment to post
	Unlabel  Command      // the command label to remove from the issue
	Release  bool         // hand the quarantined events to the mailbox again
	Step     Step         // the transition to take; "" saves the mailbox
	Phase    agents.Phase // the phase a PhaseFailed row runs
	Trigger  string       // what the step's run answers (a delivery, a run)
	Extra    string       // the run's input: the question, the feedback
	CheckMR  string       // after the step: check the merge request, for this trigger
	BindPlan bool         // the plan comment posted is the validated one (a validation given while it was revised)
	Note     string       // why the decision moves nothing, for the log
	MRResult string       // the run's result, for the body of a merge request it opens
	// Resume is the step the budget held back, taken again (from its status)
	// instead of Step, after ai::budget_step.
	Resume *state.PausedStep
}

// Said is a managed comment: its kind, its cause (one comment per kind and
// cause) and its text.
type Said struct{ Kind, Cause, Text string }

// blocked stops mb with one comment saying why and which label unblocks it.
func blocked(mb state.Mailbox, phase, text, cause string) (state.Mailbox, Actions) {
	mb.Phase = phase
	return mb, Actions{Say: &Said{KindBlocked, cause, text}, Step: StepBlocked}
}

// DecideCommand is what a command label does to mb, whose Labels are the
// labels the event reports: the decision its row of the table names
// (CommandDef). A command is removed once handled, whatever the mailbox's
// state; one that does not apply says so in the log.
func DecideCommand(mb state.Mailbox, c Command, actor, delivery string, r Rules) (state.Mailbox, Actions) {
	status := Status(mb.Status)
	if c == CommandValidatePlan && status == StatusTechnicalAnalysis {
		// The plan is being revised: the validation is for the new plan, so
		// the label stays until the analysis ends (decideAnalysis).
		return mb, Actions{Note: "validate_plan kept for the revised plan"}
	}
	mb.Labels = withoutLabel(mb.Labels, c.Label())
	a := Actions{Unlabel: c}
	if i := slices.IndexFunc(commandDefs, func(d CommandDef) bool { return d.Command == c }); i >= 0 {
		return commandDefs[i].decide(mb, c, actor, delivery, r, a)
	}
	return mb, a
}

// decideValidate is ai::validate_plan: the validation recorded and the
// development started from the plan that waits, when one waits.
func decideValidate(mb state.Mailbox, _ Command, actor, delivery string, _ Rules, a Actions) (state.Mailbox, Actions) {
	if Status(mb.Status) != StatusWaitingValidation {
		a.Note = "validate_plan ignored: no plan waits"
		return mb, a
	}
	a.RecordBy = actor
	a.Say = &Said{KindPlanValidated, delivery, textPlanValidated(actor)}
	a.Step, a.Trigger = StepValidatePlan, delivery
	return mb, a
}

// decideRetry is a retry command: the quarantined events again when there
// are some and the mailbox is not blocked, else the last phase again, with
// its loops' counters set by the command.
func decideRetry(mb state.Mailbox, c Command, _, delivery string, r Rules, a Actions) (state.Mailbox, Actions) {
	a.Release = len(mb.Quarantined) > 0
	if a.Release && Status(mb.Status) != StatusBlocked {
		// What to try again is the events set aside, not a phase.
		a.Say = &Said{KindRetryResumed, delivery, textRetryEvents(len(mb.Quarantined))}
		return mb, a
	}
	if mb.ActiveRunID != "" {
		a.Note = "retry ignored: a run is in progress"
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
	a.Say = &Said{KindRetryResumed, delivery, textRetry(string(phase))}
	a.Step, a.Phase, a.Trigger = retryStep(phase), phase, delivery
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

// DecideRunEnd is what a finished run does to its mailbox: nothing more when
// it was stopped on purpose, a block when its CLI stalled, a retry or a
// block when it failed otherwise, else the effects of its phase.
func DecideRunEnd(mb state.Mailbox, run state.Run, r Rules) (state.Mailbox, Actions) {
	mb.ActiveRunID = ""
	switch {
	case run.PlanChanged != "":
		// Not started: what it would work from is no longer what a person
		// validated. A person validates again.
		mb.Validated = nil
		return mb, Actions{Say: &Said{KindPlanChanged, run.ID, textPlanChanged(run.PlanChanged)}, Step: StepPlanChanged}
	case run.Status == state.RunCanceled:
		// Stopped on purpose (finish), never retried. A run a shutdown
		// interrupted stays running in the records, and recoverRuns starts
		// it again.
		return mb, Actions{}
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
		a := Actions{Say: &Said{KindAnswer, run.ID, run.Result}}
		if Flow(mb.Flow) == FlowQuestion && Status(mb.Status) == StatusFunctionalAnalysis {
			a.Step = StepAnswered
		}
		return mb, a
	}
	return decideWritten(mb, run, r)
}

// decideWritten ends a run of a phase that writes: what it changed is pushed
// by now (or it found nothing to do), the merge request is opened when the
// issue has none, and its CI is looked at.
func decideWritten(mb state.Mailbox, run state.Run, r Rules) (state.Mailbox, Actions) {
	a := Actions{Step: StepPushed, CheckMR: run.ID}
	switch {
	case run.NothingToDo:
		a.Say = &Said{KindNothingToDo, run.ID, run.Result}
	case !run.Pushed:
		return retryOrBlock(mb, run, errNothingPushed.Error(), r)
	default:
		mb.HeadSHA = run.HeadSHA
		a.EnsureMR = agents.Phase(run.Phase) == agents.PhaseDevelopment || mb.MergeRequestIID == 0
		a.MRResult = run.Result
	}
	mb.LLMRetries = 0
	return mb, a
}

// decideAnalysis ends an analysis: the functional analysis goes into the
// description section, then the agent's questions are asked (waiting for
// information), or the plan is posted and waits for validation, or goes on,
// or ends the flow for type::analysis.
func decideAnalysis(mb state.Mailbox, run state.Run, r Rules) (state.Mailbox, Actions) {
	an := ParseAnalysis(run.Result)
	mb.LLMRetries = 0
	a := Actions{Section: an.Functional}
	mb.Validated = nil // a new plan: any earlier validation was of another
	plan := func(text string, s Step) (state.Mailbox, Actions) {
		a.Say, a.Step = &Said{KindPlan, run.ID, text}, s
		if s == StepPlanGoesOn {
			a.Trigger = run.ID
		}
		return mb, a
	}
	switch {
	case an.Questions != "":
		a.Say, a.Step = &Said{KindQuestions, run.ID, textQuestions(an.Questions)}, StepQuestionsAsked
		return mb, a
	case Flow(mb.Flow) == FlowAnalysis:
		return plan(textPlanOnly(an.Plan), StepPlanOnly)
	case r.NeedValidation && slices.Contains(mb.Labels, CommandValidatePlan.Label()):
		// Validated while it was being revised (DecideCommand kept the label).
		mb.Labels = withoutLabel(mb.Labels, CommandValidatePlan.Label())
		a.Unlabel, a.BindPlan = CommandValidatePlan, true
		return plan(textPlan(an.Plan, false), StepPlanGoesOn)
	case r.NeedValidation:
		return plan(textPlan(an.Plan, true), StepPlanPosted)
	}
	return plan(textPlan(an.Plan, false), StepPlanGoesOn)
}

// retryOrBlock runs a failed phase again while LLM_MAX_RETRIES allows, then
// blocks the mailbox with one comment that says which label unblocks it.
func retryOrBlock(mb state.Mailbox, run state.Run, why string, r Rules) (state.Mailbox, Actions) {
	if mb.LLMRetries < r.LLMRetries {
		mb.LLMRetries++
		return mb, Actions{Step: StepRunFailed, Phase: agents.Phase(run.Phase), Trigger: run.ID + "/retry", Extra: run.Input, Note: "retrying failed run"}
	}
	return blocked(mb, run.Phase, textBlocked(run.Phase, why, mb.LLMRetries+1), run.ID)
}

// DecideMergeRequest is what the bot's merge request asks of its mailbox,
// from whether git confirms a conflict and the CI state of its head: a fix
// run while the loop's limit allows, a block when it is reached, in_review
// when CI is green.
func DecideMergeRequest(mb state.Mailbox, mr forges.MergeRequest, conflict bool, ci forges.CIState, r Rules, trigger string) (state.Mailbox, Actions) {
	switch v := judgeMergeRequest(mb, conflict, ci, r); {
	case v.block == agents.PhaseConflictResolution:
		return blocked(mb, string(v.block), textConflictBlocked(mb.ConflictFixAttempts, mr.TargetBranch), "conflict/"+mr.HeadSHA)
	case v.block == agents.PhaseCIFix:
		return blocked(mb, string(v.block), textCIBlocked(mb.CIFixAttempts), "ci/"+mr.HeadSHA)
	case v.step == StepConflict:
		mb.ConflictFixAttempts++
		return mb, Actions{Step: StepConflict, Trigger: trigger + "/conflict/" + mr.HeadSHA}
	case v.step == StepCIRed:
		mb.CIFixAttempts++
		return mb, Actions{Step: StepCIRed, Trigger: trigger + "/ci/" + mr.HeadSHA}
	case v.step == StepCIGreen:
		mb.UntilGreen = false
		return mb, Actions{Step: StepCIGreen, Trigger: trigger}
	}
	return mb, Actions{}
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
func judgeMergeRequest(mb state.Mailbox, conflict bool, ci forges.CIState, r Rules) mrVerdict {
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

// errNothingPushed is why a run of a phase that writes that pushed nothing
// is retried or blocked.
var errNothingPushed = errors.New("the agent changed nothing")

// withoutLabel is labels without l, as a new slice.
func withoutLabel(labels []string, l string) []string {
	return slices.DeleteFunc(slices.Clone(labels), func(x string) bool { return x == l })
}
