package lifecycle

import (
	"slices"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// What each intent does, declared: the dispatch table. A row names its
// trigger (the intent and the statuses it applies from), the guards it needs
// besides, the effect the engine performs for it and the step of the
// lifecycle table that effect takes (bounded by that row's Limit). The
// engine's dispatch is Dispatch, a lookup in this table; each effect is one
// method of the engine (bot's effects map), and bot's tests fail when an
// effect has none. Adding a status or a command label is a row here or in
// table.go, plus its effect.

// Effect names what the engine performs for a row of the dispatch table.
type Effect string

// The effects.
const (
	EffectStart              Effect = "start"                // open the mailbox, acknowledge it, take the row's step
	EffectAnswerMergeRequest Effect = "answer_merge_request" // open the mailbox of a merge request the bot is asked about, start the answer
	EffectCommand            Effect = "command"              // carry out what DecideCommand decides of the command label
	EffectRestoreStatus      Effect = "restore_status"       // put the bot's status label back, say which labels steer
	EffectStep               Effect = "step"                 // take the row's step
	EffectReview             Effect = "review"               // gather the review feedback not handed to a run yet, take the row's step
	EffectCheckMergeRequest  Effect = "check_merge_request"  // read the merge request and carry out what DecideMergeRequest decides
	EffectMerged             Effect = "merged"               // stop the run in progress, remove the session state, take the row's step
	EffectClosed             Effect = "closed"               // the same, for an issue or merge request closed without merge
	EffectForgetBranch       Effect = "forget_branch"        // the issue branch is gone: forget its name
)

// Effects lists every effect, in the order above.
func Effects() []Effect {
	return []Effect{EffectStart, EffectAnswerMergeRequest, EffectCommand, EffectRestoreStatus, EffectStep,
		EffectReview, EffectCheckMergeRequest, EffectMerged, EffectClosed, EffectForgetBranch}
}

// Facts are what a row's guards read.
type Facts struct {
	Intent  Intent
	Event   *forges.Event  // nil when the engine asks of itself (a poll, after a run)
	Mailbox *state.Mailbox // nil before the mailbox exists
	Me      string         // the bot's login on the forge
}

// status is the mailbox's status, statusNew without a mailbox.
func (f Facts) status() Status {
	if f.Mailbox == nil {
		return statusNew
	}
	return Status(f.Mailbox.Status)
}

// Guard is a condition a row needs besides its statuses, with its name for
// the diagram and the log.
type Guard struct {
	Name  string
	holds func(Facts) bool
}

// The guards.
var (
	guardOnMergeRequest = Guard{"on a merge request", func(f Facts) bool {
		return f.Event != nil && f.Event.Target.Kind == forges.TargetMergeRequest
	}}
	guardTypeQuestion = Guard{"type::question", func(f Facts) bool { return FlowOf(f.Intent.Labels) == FlowQuestion }}
	guardIdle         = Guard{"no run in progress", func(f Facts) bool { return f.Mailbox != nil && f.Mailbox.ActiveRunID == "" }}
	guardAsked        = Guard{"type::question, or the comment names the bot", func(f Facts) bool {
		return f.Mailbox != nil && Flow(f.Mailbox.Flow) == FlowQuestion || f.Event != nil && Mentions(f.Event.Comment, f.Me)
	}}
	guardMergeRequest = Guard{"the bot's merge request is known", func(f Facts) bool { return f.Mailbox != nil && f.Mailbox.MergeRequestIID != 0 }}
)

// Row is one row of the dispatch table: when an intent of kind On comes for
// a mailbox in a status of From (any status when From is empty) and every
// guard holds, the engine performs Effect. Step is the transition the effect
// takes ("" when it takes none or its decision picks one); Input hands the
// intent's text (the question, the feedback) to the step's run.
type Row struct {
	On     IntentKind
	From   []Status
	Guards []Guard
	Effect Effect
	Step   Step
	Input  bool
}

// dispatch is the dispatch table; the first row that applies is taken.
var dispatch = []Row{
	{IntentStart, []Status{statusNew}, []Guard{guardOnMergeRequest}, EffectAnswerMergeRequest, "", false},
	{IntentStart, []Status{statusNew}, []Guard{guardTypeQuestion}, EffectStart, StepStartQuestion, false},
	{IntentStart, []Status{statusNew}, nil, EffectStart, StepStart, false},
	{IntentCommand, nil, nil, EffectCommand, "", false},
	{IntentRestoreStatus, nil, nil, EffectRestoreStatus, "", false},
	{IntentInfo, []Status{StatusWaitingInfo}, []Guard{guardIdle}, EffectStep, StepInfoGiven, false},
	{IntentPlanFeedback, []Status{StatusWaitingValidation}, []Guard{guardIdle}, EffectStep, StepPlanFeedback, true},
	{IntentQuestion, nil, []Guard{guardAsked, guardIdle}, EffectStep, StepAnswer, true},
	{IntentReview, WatchingMergeRequest, []Guard{guardMergeRequest, guardIdle}, EffectReview, StepReview, false},
	{IntentCI, WatchingMergeRequest, []Guard{guardMergeRequest, guardIdle}, EffectCheckMergeRequest, "", false},
	{IntentMerged, nil, nil, EffectMerged, StepFinished, false},
	{IntentClosed, nil, nil, EffectClosed, StepFinished, false},
	{IntentBranchDeleted, nil, nil, EffectForgetBranch, "", false},
}

// DispatchRows lists the rows of the dispatch table, in their order.
func DispatchRows() []Row { return slices.Clone(dispatch) }

// Dispatch finds the row for f: the first whose On is the intent's kind,
// whose From allows the mailbox's status and whose guards all hold. Without
// one, why says what was missing, for the log.
func Dispatch(f Facts) (row Row, why string, ok bool) {
	why = "no row for " + string(f.Intent.Kind) + " from status " + string(f.status())
	for _, r := range dispatch {
		if r.On != f.Intent.Kind || len(r.From) > 0 && !slices.Contains(r.From, f.status()) {
			continue
		}
		if g := r.failing(f); g != "" {
			why = "needs " + g
			continue
		}
		return r, "", true
	}
	return Row{}, why, false
}

// failing is the name of the first of r's guards that does not hold, "" when
// all do.
func (r Row) failing(f Facts) string {
	for _, g := range r.Guards {
		if !g.holds(f) {
			return g.Name
		}
	}
	return ""
}
