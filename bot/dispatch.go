package bot

import (
	"context"
	"fmt"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// The engine's dispatch: what an intent does is the row of the lifecycle's
// dispatch table (lifecycle.Dispatch) that applies to it; the engine only
// performs the row's effect, with the method effects names for it.

// handling is one intent the engine acts on: its mailbox (nil before it
// exists), its event (nil when the engine asks of itself: a poll, the end of
// a run), the row of the dispatch table that applies, and what the step's
// run answers (a delivery, a run, "poll").
type handling struct {
	mb      *state.Mailbox
	ev      *forges.Event
	in      lifecycle.Intent
	row     lifecycle.Row
	trigger string
}

// effects are the engine's methods that perform each effect of the dispatch
// table (TestEveryEffectHasAMethod).
var effects map[lifecycle.Effect]func(*Engine, context.Context, handling) error

func init() {
	// Filled here rather than where it is declared: the methods lead back
	// to dispatch, which reads it.
	effects = map[lifecycle.Effect]func(*Engine, context.Context, handling) error{
		lifecycle.EffectStart:              (*Engine).start,
		lifecycle.EffectAnswerMergeRequest: (*Engine).answerMergeRequest,
		lifecycle.EffectCommand:            (*Engine).command,
		lifecycle.EffectRestoreStatus:      (*Engine).restoreStatus,
		lifecycle.EffectStep:               (*Engine).takeStep,
		lifecycle.EffectReview:             (*Engine).review,
		lifecycle.EffectCheckMergeRequest:  (*Engine).checkMergeRequest,
		lifecycle.EffectMerged:             (*Engine).merged,
		lifecycle.EffectClosed:             (*Engine).closed,
		lifecycle.EffectForgetBranch:       (*Engine).forgetBranch,
	}
}

// act performs what the dispatch table says of intent in, from event ev.
func (e *Engine) act(ctx context.Context, mb *state.Mailbox, ev *forges.Event, in lifecycle.Intent) error {
	return e.dispatch(ctx, handling{mb: mb, ev: ev, in: in, trigger: ev.DeliveryID})
}

// dispatch looks up the row of the dispatch table for h and performs its
// effect. No row applies (a comment while a run works, CI of a mailbox that
// does not wait on it): nothing to do, and the log says why.
func (e *Engine) dispatch(ctx context.Context, h handling) error {
	forge := ""
	switch {
	case h.ev != nil:
		forge = h.ev.Target.Project.Forge
	case h.mb != nil:
		forge = h.mb.Forge
	}
	row, why, ok := lifecycle.Dispatch(lifecycle.Facts{Intent: h.in, Event: h.ev, Mailbox: h.mb, Me: e.meOn(forge)})
	if !ok {
		log := e.log.Info
		if h.ev == nil {
			log = e.log.Debug
		}
		log("noted, nothing to do", "mailbox", mailboxID(h.mb), "intent", h.in.Kind, "why", why)
		return nil
	}
	perform, ok := effects[row.Effect]
	if !ok {
		return fmt.Errorf("lifecycle: no engine method performs effect %s", row.Effect)
	}
	h.row = row
	return perform(e, ctx, h)
}

func mailboxID(mb *state.Mailbox) string {
	if mb == nil {
		return ""
	}
	return mb.ID
}

// start opens the mailbox of an issue assigned to the bot, acknowledges it
// and takes the row's step: the analysis, or the answer of a type::question.
func (e *Engine) start(ctx context.Context, h handling) error {
	ev, in := h.ev, h.in
	p := ev.Target.Project
	mb := &state.Mailbox{Forge: p.Forge, Owner: p.Owner, Project: p.Name, Kind: state.KindIssue, IID: ev.Target.Number, Labels: in.Labels}
	is := ev.Issue
	if is == nil {
		var err error
		if is, err = e.on(mb.Forge).Issue(ctx, p, ev.Target.Number); err != nil {
			return err
		}
	}
	mb.Title, mb.IssueURL, mb.Author = is.Title, is.URL, is.Author
	mb.ID = mb.Key().ID()
	mb.Flow = string(lifecycle.FlowOf(in.Labels))
	if err := e.assignTrial(mb); err != nil {
		return err
	}
	if err := e.comment(ctx, mb, lifecycle.KindAcknowledgement, "", lifecycle.TextAcknowledgement(ev.Actor)); err != nil {
		return err
	}
	return e.step(ctx, mb, h.row.Step, "", ev.DeliveryID, "")
}

// answerMergeRequest opens the mailbox of a merge request the bot did not
// open and is asked about, and starts the answer.
func (e *Engine) answerMergeRequest(ctx context.Context, h handling) error {
	ev := h.ev
	p := ev.Target.Project
	mb := &state.Mailbox{Forge: p.Forge, Owner: p.Owner, Project: p.Name, Kind: state.KindIssue, IID: ev.Target.Number, Labels: h.in.Labels}
	mr, err := e.on(mb.Forge).MergeRequest(ctx, p, ev.Target.Number)
	if err != nil {
		return err
	}
	mb.Kind, mb.Title, mb.IssueURL, mb.Author = state.KindMR, mr.Title, mr.URL, mr.Author
	mb.MergeRequestIID, mb.MergeRequestURL = mr.Number, mr.URL
	mb.ID = mb.Key().ID()
	return e.startRun(ctx, mb, agents.PhaseAnswer, ev.DeliveryID, h.in.Text)
}

// command carries out what a command label decides (lifecycle.DecideCommand).
func (e *Engine) command(ctx context.Context, h handling) error {
	mb, ev := h.mb, h.ev
	mb.Labels = labelsOrMailbox(ev, mb)
	next, a := lifecycle.DecideCommand(*mb, h.in.Command, ev.Actor, ev.DeliveryID, e.rulesOf(mb))
	return e.apply(ctx, mb, next, a)
}

func labelsOrMailbox(ev *forges.Event, mb *state.Mailbox) []string {
	if l := lifecycle.LabelsOf(ev); l != nil {
		return l
	}
	return mb.Labels
}

// restoreStatus puts the bot's status label back after a person changed it.
func (e *Engine) restoreStatus(ctx context.Context, h handling) error {
	mb := h.mb
	mb.Labels = labelsOrMailbox(h.ev, mb)
	if err := e.setStatusLabel(ctx, mb, lifecycle.Status(mb.Status)); err != nil {
		return err
	}
	// One comment per status: Gitea and Forgejo send a person's change of
	// labels as one event per label added or removed.
	if err := e.comment(ctx, mb, lifecycle.KindStatusLabelRestored, "status/"+mb.Status, lifecycle.TextStatusRestored(e.statusLabel(mb.Forge, lifecycle.Status(mb.Status)))); err != nil {
		return err
	}
	return e.save(ctx, mb)
}

// takeStep takes the row's step: the analysis again after people answered
// its questions (the thread has the answers) or asked for another plan (the
// feedback is the intent's text), or the answer to a question. A comment
// that comes while a run works finds no row: it waits in the thread for the
// next run.
func (e *Engine) takeStep(ctx context.Context, h handling) error {
	input := ""
	if h.row.Input {
		input = h.in.Text
	}
	return e.step(ctx, h.mb, h.row.Step, "", h.trigger, input)
}

// review takes the row's step, a review_fix run, for feedback on the bot's
// merge request.
func (e *Engine) review(ctx context.Context, h handling) error {
	text, err := e.reviewFeedback(ctx, h.mb, h.in.Text)
	if err != nil {
		return err
	}
	return e.step(ctx, h.mb, h.row.Step, "", h.trigger, text)
}

// merged and closed finish the mailbox (finish) with the row's step, and
// the event's actor as who merged or closed it.
func (e *Engine) merged(ctx context.Context, h handling) error {
	return e.finish(ctx, h.mb, errMerged, h.row.Step, actorOf(h.ev))
}

// closed: an issue closed by the merge of its merge request ("Closes #7")
// may be told before the merge is: the merge request, read back, says
// which it was; when it cannot be read, the close is recorded as told.
func (e *Engine) closed(ctx context.Context, h handling) error {
	why, by := errClosed, actorOf(h.ev)
	if mb := h.mb; mb.Kind == state.KindIssue && mb.MergeRequestIID != 0 {
		mr, err := e.on(mb.Forge).MergeRequest(ctx, projectOf(mb), mb.MergeRequestIID)
		switch {
		case err != nil:
			e.log.Warn("read the merge request of a closed issue", "mailbox", mb.ID, "err", err)
		case mr.State == forges.MergeRequestMerged:
			why, by = errMerged, mr.MergedBy // the issue's closer is not who merged
		}
	}
	return e.finish(ctx, h.mb, why, h.row.Step, by)
}

func actorOf(ev *forges.Event) string {
	if ev == nil {
		return ""
	}
	return ev.Actor
}

// forgetBranch forgets the name of the issue branch, which is gone.
func (e *Engine) forgetBranch(ctx context.Context, h handling) error {
	h.mb.BranchName = ""
	return e.save(ctx, h.mb)
}
