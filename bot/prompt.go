package bot

import (
	"cmp"
	"context"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// phaseInput gathers the full phase context from the forge, before any
// work of the run: a phase that writes follows the validated plan, and when
// the plan or the description changed since the validation run.PlanChanged
// says what, and the run does not start.
func (e *Engine) phaseInput(ctx context.Context, mb *state.Mailbox, run *state.Run, phase agents.Phase) (botrun.PromptInput, error) {
	p := projectOf(mb)
	in := botrun.PromptInput{Phase: phase, Project: p, Branch: mb.BranchName}
	is, err := e.subject(ctx, mb)
	if err != nil {
		return in, err
	}
	in.Issue = *is
	comments, err := e.on(mb.Forge).Comments(ctx, issueTarget(mb))
	if err != nil {
		return in, err
	}
	if err := e.thread(ctx, mb, comments, &in); err != nil {
		return in, err
	}
	if mb.Validated != nil && !phase.TextOnly() {
		if in.Plan, run.PlanChanged = validatedPlan(*mb.Validated, comments, is.Body); run.PlanChanged != "" {
			return in, nil
		}
	}
	switch phase {
	case agents.PhaseAnalysis:
		in.Feedback = run.Input
	case agents.PhaseAnswer:
		in.Question = cmp.Or(run.Input, is.Body)
	case agents.PhaseReviewFix:
		in.Review = run.Input
	case agents.PhaseCIFix:
		in.CI, err = e.failingChecks(ctx, mb)
	}
	return in, err
}

// failingChecks are the failing CI checks of the mailbox's head.
func (e *Engine) failingChecks(ctx context.Context, mb *state.Mailbox) ([]forges.Check, error) {
	if mb.HeadSHA == "" {
		return nil, nil
	}
	ci, err := e.on(mb.Forge).CIStatus(ctx, projectOf(mb), mb.HeadSHA)
	if err != nil {
		return nil, err
	}
	var failing []forges.Check
	for _, c := range ci.Checks {
		if c.State == forges.CIFailure {
			failing = append(failing, c)
		}
	}
	return failing, nil
}

// thread sorts the comments of the thread into in: the bot's own markers
// (its plan, its questions) only from its own account, trusted people's
// comments as the discussion, anyone else's as untrusted material.
func (e *Engine) thread(ctx context.Context, mb *state.Mailbox, comments []forges.Comment, in *botrun.PromptInput) error {
	me := e.meOn(mb.Forge)
	trust := e.trustOf(mb)
	if c, ok := botPlan(comments, me); ok {
		in.Plan = stripMarker(c.Body)
	}
	for _, c := range comments {
		if strings.EqualFold(c.Author, me) {
			if _, kind, ok := forges.ParseMarker(c.Body); ok && kind == lifecycle.KindQuestions {
				in.Asked = stripMarker(c.Body)
			}
			continue
		}
		ok, err := trust.trusted(ctx, c.Author)
		if err != nil {
			return err
		}
		if ok {
			in.Thread = append(in.Thread, c)
		} else {
			in.Untrusted = append(in.Untrusted, c)
		}
	}
	return nil
}

// subject reads what the mailbox is about: its issue, or its merge request
// (title and description) for a merge request mailbox.
func (e *Engine) subject(ctx context.Context, mb *state.Mailbox) (*forges.Issue, error) {
	if mb.Kind == state.KindIssue {
		return e.on(mb.Forge).Issue(ctx, projectOf(mb), mb.IID)
	}
	mr, err := e.on(mb.Forge).MergeRequest(ctx, projectOf(mb), mb.IID)
	if err != nil {
		return nil, err
	}
	return &forges.Issue{Number: mr.Number, Title: mr.Title, Body: mr.Body, Author: mr.Author, URL: mr.URL, State: mr.State}, nil
}
