package lifecycle

import (
	"slices"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// The lifecycle of an issue mailbox, declared: its statuses, the labels
// people steer it with, and every transition. This file is the one place to
// change it, with dispatch.go, which says what each intent does (a command
// label's row here names its decision, decide.go). What reads it: the label
// catalogue `alfred labels sync` creates (Labels), the engine, which moves a
// mailbox only along a declared transition (bot's Engine.step), the comments
// that name labels, and the diagram docs/lifecycle.md (TestLifecycleDiagram
// regenerates it; see docs/design.md).

// Status is where an issue mailbox stands. Its label, status::<status>, is
// owned by the bot: exactly one is on the issue at a time.
type Status string

// The statuses, in the order an issue usually meets them.
const (
	StatusFunctionalAnalysis Status = "functional_analysis"
	StatusTechnicalAnalysis  Status = "technical_analysis"
	StatusWaitingValidation  Status = "waiting_validation"
	StatusWaitingInfo        Status = "waiting_info"
	StatusInDevelopment      Status = "in_development"
	StatusInCI               Status = "in_ci"
	StatusInReview           Status = "in_review"
	StatusDone               Status = "done"
	StatusBlocked            Status = "blocked"
	StatusPaused             Status = "paused"
)

// statusNew stands for a mailbox that does not exist yet, as a From.
const statusNew Status = ""

// WatchingMergeRequest are the statuses in which the bot follows its merge
// request: its CI, its mergeability, its reviews.
var WatchingMergeRequest = []Status{StatusInCI, StatusInReview}

// WatchesMergeRequest tells whether s is one of WatchingMergeRequest.
func (s Status) WatchesMergeRequest() bool { return slices.Contains(WatchingMergeRequest, s) }

// HoldsRuns tells whether a mailbox in status s starts no run: paused at its
// budget, it drops the steps that would start one (bot's Engine.step).
func (s Status) HoldsRuns() bool { return s == StatusPaused }

// Command is a command label people add to steer the bot; the bot removes it
// once handled.
type Command string

// The command labels.
const (
	CommandValidatePlan    Command = "validate_plan"
	CommandRetry           Command = "retry"
	CommandRetryOnce       Command = "retry_once"
	CommandRetryUntilGreen Command = "retry_until_green"
	CommandBudgetStep      Command = "budget_step"
)

// Flow is what the type label asks of an issue.
type Flow string

// Flows. Task is the default when no type label is set.
const (
	FlowTask     Flow = "task"     // type::task and type::bug: the whole flow
	FlowAnalysis Flow = "analysis" // type::analysis: stop after the plan
	FlowQuestion Flow = "question" // type::question: an answer run
)

// StatusDef is a status with who it waits for, and its label's colour and
// description.
type StatusDef struct {
	Status      Status
	Waits       Waits
	Color       string
	Description string
}

// Waits says who a mailbox in a status waits for: the overview lists those
// that wait for a person first.
type Waits string

// Who a status waits for.
const (
	WaitsPerson Waits = "person" // a person must act: validate, answer, unblock
	WaitsWork   Waits = "work"   // Alfred works, or CI and reviews run
	WaitsNobody Waits = "nobody" // done
)

// CommandDef is a command label: what it does, and who may add it (people
// with write access on the project; the bot ignores the others), and the
// decision it takes once its label is removed (DecideCommand).
type CommandDef struct {
	Command     Command
	Color       string
	Description string
	decide      func(mb state.Mailbox, c Command, actor, delivery string, r Rules, a Actions) (state.Mailbox, Actions)
}

// TypeDef is a type label and the flow it chooses.
type TypeDef struct {
	Name        string // after type::
	Flow        Flow
	Color       string
	Description string
}

// Statuses, commands and types: the labels of the lifecycle.
var (
	statuses = []StatusDef{
		{StatusFunctionalAnalysis, WaitsWork, "1d76db", "Alfred is writing the functional analysis (set by the bot)"},
		{StatusTechnicalAnalysis, WaitsWork, "0e8a16", "Alfred is writing the implementation plan (set by the bot)"},
		{StatusWaitingValidation, WaitsPerson, "fbca04", "The plan waits for ai::validate_plan (set by the bot)"},
		{StatusWaitingInfo, WaitsPerson, "fef2c0", "Alfred needs an answer in the thread (set by the bot)"},
		{StatusInDevelopment, WaitsWork, "5319e7", "Alfred is developing on the issue branch (set by the bot)"},
		{StatusInCI, WaitsWork, "c5def5", "The pull request waits for CI (set by the bot)"},
		{StatusInReview, WaitsWork, "bfd4f2", "CI is green; the pull request waits for review (set by the bot)"},
		{StatusDone, WaitsNobody, "0e8a16", "Merged or closed (set by the bot)"},
		{StatusBlocked, WaitsPerson, "b60205", "Alfred gave up; the blocking comment says which label unblocks it (set by the bot)"},
		{StatusPaused, WaitsPerson, "d4c5f9", "The issue reached its cost budget; ai::budget_step lets Alfred go on (set by the bot)"},
	}
	commandDefs = []CommandDef{
		{CommandValidatePlan, "d93f0b", "Start development from the posted plan", decideValidate},
		{CommandRetry, "e99695", "Retry the failed phase with counters reset", decideRetry},
		{CommandRetryOnce, "f9d0c4", "Allow exactly one more attempt of the failed phase", decideRetry},
		{CommandRetryUntilGreen, "c2e0c6", "Keep fixing CI until it is green, up to a hard cap", decideRetry},
		{CommandBudgetStep, "bfdadc", "Grant the issue one more step of its cost budget and go on", decideBudgetStep},
	}
	types = []TypeDef{
		{"task", FlowTask, "0052cc", "Alfred runs the whole flow: analysis, plan, development"},
		{"bug", FlowTask, "d73a4a", "Alfred runs the whole flow for a bug fix"},
		{"analysis", FlowAnalysis, "006b75", "Alfred stops after the plan"},
		{"question", FlowQuestion, "cc317c", "Alfred answers the question in the thread"},
	}
)

// Step names one transition of the table.
type Step string

// Transition is one row of the lifecycle: in a status of From (any status
// when From is empty), when On happens, the engine runs Run (none when
// empty; PhaseFailed: the phase that failed) and the mailbox moves to To
// (it keeps its status when To is empty). Limit is the setting that bounds
// the loop the row belongs to ("" for none).
type Transition struct {
	Step  Step
	From  []Status
	On    string
	Run   agents.Phase
	To    Status
	Limit Setting
}

// Setting is the key of a project setting the lifecycle reads: bot's
// settings catalogue declares each under this key (bot.LookupSetting).
type Setting string

// The settings that bound the lifecycle's loops or choose its way.
const (
	SettingRequirePlanValidation  Setting = "REQUIRE_PLAN_VALIDATION"
	SettingLLMMaxRetries          Setting = "LLM_MAX_RETRIES"
	SettingCIFixMaxAttempts       Setting = "CI_FIX_MAX_ATTEMPTS"
	SettingCIFixHardCap           Setting = "CI_FIX_HARD_CAP"
	SettingConflictFixMaxAttempts Setting = "CONFLICT_FIX_MAX_ATTEMPTS"
	SettingAgentBudgetTokens      Setting = "AGENT_BUDGET_TOKENS"
	SettingAgentBudgetUSD         Setting = "AGENT_BUDGET_USD"
)

// PhaseFailed stands for the phase of the run that failed, as a Run.
const PhaseFailed agents.Phase = "(the failed phase)"

// phaseHeld stands for the run the budget held back (budget.go), as a Run.
const phaseHeld agents.Phase = "(the run held back)"

// The steps.
const (
	StepStart            Step = "start"
	StepStartQuestion    Step = "start_question"
	StepInfoGiven        Step = "info_given"
	StepPlanFeedback     Step = "plan_feedback"
	StepQuestionsAsked   Step = "questions_asked"
	StepPlanPosted       Step = "plan_posted"
	StepPlanOnly         Step = "plan_only"
	StepPlanGoesOn       Step = "plan_goes_on"
	StepValidatePlan     Step = "validate_plan"
	StepAnswer           Step = "answer"
	StepAnswered         Step = "answered"
	StepPushed           Step = "pushed"
	StepCIRed            Step = "ci_red"
	StepCIGreen          Step = "ci_green"
	StepConflict         Step = "conflict"
	StepReview           Step = "review"
	StepRunFailed        Step = "run_failed"
	StepBlocked          Step = "blocked"
	StepRetryAnalysis    Step = "retry_analysis"
	StepRetryDevelopment Step = "retry_development"
	StepFinished         Step = "finished"
	StepBudgetPaused     Step = "budget_paused"
	StepBudgetStep       Step = "budget_step"
	StepPlanChanged      Step = "plan_changed"
)

// PostsPlan tells whether step s follows the posting of a plan (the
// mailbox keeps when the first was posted: state.Mailbox.PlannedAt).
func (s Step) PostsPlan() bool {
	return s == StepPlanPosted || s == StepPlanOnly || s == StepPlanGoesOn
}

// transitions is the lifecycle table.
var transitions = []Transition{
	{StepStart, []Status{statusNew}, "assigned to the bot (acknowledged)", agents.PhaseAnalysis, StatusFunctionalAnalysis, ""},
	{StepStartQuestion, []Status{statusNew}, "assigned, type::question", agents.PhaseAnswer, StatusFunctionalAnalysis, ""},
	{StepQuestionsAsked, []Status{StatusFunctionalAnalysis, StatusTechnicalAnalysis}, "the analysis asks questions", "", StatusWaitingInfo, ""},
	{StepInfoGiven, []Status{StatusWaitingInfo}, "a person answers in the thread", agents.PhaseAnalysis, StatusFunctionalAnalysis, ""},
	{StepPlanPosted, []Status{StatusFunctionalAnalysis, StatusTechnicalAnalysis}, "the plan is posted", "", StatusWaitingValidation, ""},
	{StepPlanFeedback, []Status{StatusWaitingValidation}, "a person asks @bot for another plan", agents.PhaseAnalysis, StatusTechnicalAnalysis, ""},
	{StepPlanOnly, []Status{StatusFunctionalAnalysis, StatusTechnicalAnalysis}, "the plan is posted, type::analysis", "", StatusDone, ""},
	{StepPlanGoesOn, []Status{StatusFunctionalAnalysis, StatusTechnicalAnalysis}, "the plan is posted, validation off or already given", agents.PhaseDevelopment, StatusInDevelopment, SettingRequirePlanValidation},
	{StepValidatePlan, []Status{StatusWaitingValidation}, "ai::validate_plan", agents.PhaseDevelopment, StatusInDevelopment, ""},
	{StepAnswer, nil, "a person asks @bot a question", agents.PhaseAnswer, "", ""},
	{StepAnswered, []Status{StatusFunctionalAnalysis}, "the answer is posted, type::question", "", StatusDone, ""},
	{StepPushed, []Status{StatusInDevelopment}, "the run pushed (or found nothing to do)", "", StatusInCI, ""},
	{StepCIRed, WatchingMergeRequest, "CI failed", agents.PhaseCIFix, StatusInDevelopment, SettingCIFixMaxAttempts},
	{StepCIGreen, []Status{StatusInCI}, "CI passed", "", StatusInReview, ""},
	{StepConflict, WatchingMergeRequest, "the merge request conflicts (git agrees)", agents.PhaseConflictResolution, StatusInDevelopment, SettingConflictFixMaxAttempts},
	{StepReview, WatchingMergeRequest, "review feedback", agents.PhaseReviewFix, StatusInDevelopment, ""},
	{StepRunFailed, nil, "a run failed, tries left", PhaseFailed, "", SettingLLMMaxRetries},
	{StepBlocked, nil, "a run failed with no try left, or a loop reached its limit", "", StatusBlocked, ""},
	{StepRetryAnalysis, nil, "ai::retry, ai::retry_once, ai::retry_until_green after analysis or answer", PhaseFailed, StatusFunctionalAnalysis, ""},
	{StepRetryDevelopment, nil, "ai::retry, ai::retry_once, ai::retry_until_green after a writing phase", PhaseFailed, StatusInDevelopment, ""},
	{StepFinished, nil, "merged or closed", "", StatusDone, ""},
	{StepBudgetPaused, nil, "a run would start with the issue's spend at or over its budget", "", StatusPaused, SettingAgentBudgetTokens},
	{StepPlanChanged, []Status{StatusInDevelopment}, "the validated plan or the description changed before a run that writes", "", StatusWaitingValidation, ""},
	{StepBudgetStep, []Status{StatusPaused}, "ai::budget_step: back to the status the run was held in", phaseHeld, "", ""},
}

// Transitions lists the rows of the table, in their order.
func Transitions() []Transition { return slices.Clone(transitions) }

// TransitionOf returns the row of step s.
func TransitionOf(s Step) (Transition, bool) {
	i := slices.IndexFunc(transitions, func(t Transition) bool { return t.Step == s })
	if i < 0 {
		return Transition{}, false
	}
	return transitions[i], true
}

// Allows tells whether the row applies in status s.
func (t Transition) Allows(s Status) bool { return len(t.From) == 0 || slices.Contains(t.From, s) }

// Label is the status label in its default form, "status::x".
func (s Status) Label() string { return forges.StatusPrefix + string(s) }

// LabelWith is the status label with prefix: "status::" or, where the forge
// scopes it, "status/" (forges.StatusPrefixOf).
func (s Status) LabelWith(prefix string) string { return prefix + string(s) }

// Label is the command label.
func (c Command) Label() string { return forges.CommandPrefix + string(c) }

// Statuses lists the statuses in their order.
func Statuses() []Status {
	out := make([]Status, len(statuses))
	for i, d := range statuses {
		out[i] = d.Status
	}
	return out
}

// StatusesWaiting lists the statuses that wait for w, in their order.
func StatusesWaiting(w Waits) []string {
	var out []string
	for _, d := range statuses {
		if d.Waits == w {
			out = append(out, string(d.Status))
		}
	}
	return out
}

// Commands lists the command labels in their order of precedence.
func Commands() []Command {
	out := make([]Command, len(commandDefs))
	for i, d := range commandDefs {
		out[i] = d.Command
	}
	return out
}

// Labels is the label catalogue of the lifecycle with the status labels in
// their default form.
func Labels() []forges.Label { return LabelsWith(forges.StatusPrefix) }

// LabelsWith is the label catalogue of the lifecycle, which `alfred labels
// sync` makes a project's labels match (forges.SyncLabels), with the status
// labels under statusPrefix (forges.StatusPrefixOf): exclusive, and named
// in the other form formerly, so that a sync renames them.
func LabelsWith(statusPrefix string) []forges.Label {
	other := forges.ScopedStatusPrefix
	if statusPrefix == forges.ScopedStatusPrefix {
		other = forges.StatusPrefix
	}
	var out []forges.Label
	for _, d := range statuses {
		out = append(out, forges.Label{Name: d.Status.LabelWith(statusPrefix), Color: d.Color, Description: d.Description,
			Exclusive: true, Formerly: []string{d.Status.LabelWith(other)}})
	}
	for _, d := range commandDefs {
		out = append(out, forges.Label{Name: d.Command.Label(), Color: d.Color, Description: d.Description})
	}
	for _, d := range types {
		out = append(out, forges.Label{Name: forges.TypePrefix + d.Name, Color: d.Color, Description: d.Description})
	}
	return out
}

// FlowOf reads the type label: the first type of the table found on the
// issue, by precedence question, analysis, then task.
func FlowOf(labels []string) Flow {
	for _, f := range []Flow{FlowQuestion, FlowAnalysis} {
		for _, d := range types {
			if d.Flow == f && slices.Contains(labels, forges.TypePrefix+d.Name) {
				return f
			}
		}
	}
	return FlowTask
}
