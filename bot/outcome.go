package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// handleRunDone applies a finished run to its mailbox, in the mailbox's
// worker: the status comment, then the phase's effects on success, or a
// retry or a block on failure. A session fallback never reaches here as a
// failure: it lives inside the adapter.
func (e *Engine) handleRunDone(ctx context.Context, key, runID string) error {
	mb, err := e.mailbox(key)
	if err != nil || mb == nil {
		return fmt.Errorf("mailbox of run %s: %w", runID, errors.Join(err, errNoMailbox))
	}
	if mb.ActiveRunID != runID {
		return nil // already applied (a restart posted it again)
	}
	run, _, err := e.store.RunWithSessions(runID)
	if err != nil {
		return err
	}
	mb.ActiveRunID = ""
	if err := e.updateStatusComment(ctx, mb); err != nil {
		e.log.Warn("status comment", "mailbox", mb.ID, "err", err)
	}
	phase := agents.Phase(run.Phase)
	if run.Status == state.RunCanceled {
		// Stopped on purpose (finish), never retried. A run a shutdown
		// interrupted stays running in the records, and recoverRuns starts
		// it again.
		return e.save(ctx, mb)
	}
	if run.Status != state.RunSucceeded {
		return e.retryOrBlock(ctx, mb, run, run.Outcome)
	}
	switch phase {
	case agents.PhaseAnalysis:
		return e.afterAnalysis(ctx, mb, run)
	case agents.PhaseAnswer:
		if err := e.comment(ctx, mb, KindAnswer, run.ID, run.Result); err != nil {
			return err
		}
		mb.LLMRetries = 0
		if Flow(mb.Flow) == FlowQuestion && Status(mb.Status) == StatusFunctionalAnalysis {
			return e.step(ctx, mb, StepAnswered, "", "", "")
		}
		return e.save(ctx, mb)
	}
	if run.NothingToDo {
		if err := e.comment(ctx, mb, KindNothingToDo, run.ID, run.Result); err != nil {
			return err
		}
		mb.LLMRetries = 0
		if err := e.step(ctx, mb, StepPushed, "", "", ""); err != nil {
			return err
		}
		return e.checkMergeRequest(ctx, mb, run.ID)
	}
	// Phases that write: what they changed is pushed by now.
	if !run.Pushed {
		return e.retryOrBlock(ctx, mb, run, errNothingPushed.Error())
	}
	mb.LLMRetries = 0
	mb.HeadSHA = run.HeadSHA
	if phase == agents.PhaseDevelopment || mb.MergeRequestIID == 0 {
		if err := e.ensureMergeRequest(ctx, mb, run); err != nil {
			return err
		}
	}
	if err := e.step(ctx, mb, StepPushed, "", "", ""); err != nil {
		return err
	}
	return e.checkMergeRequest(ctx, mb, run.ID)
}

// afterAnalysis writes the functional analysis into the description section,
// then either asks the agent's questions and waits for information, or posts
// the plan and waits for validation (or goes on, or stops for type::analysis).
func (e *Engine) afterAnalysis(ctx context.Context, mb *state.Mailbox, run state.Run) error {
	a := ParseAnalysis(run.Result)
	if a.Functional != "" {
		if _, err := forges.EnsureSection(ctx, e.forge, projectOf(mb), mb.IID, a.Functional); err != nil {
			return err
		}
	}
	mb.LLMRetries = 0
	need := RequirePlanValidation.Get(e.settings, scopeOf(mb))
	switch {
	case a.Questions != "":
		if err := e.comment(ctx, mb, KindQuestions, run.ID, textQuestions(a.Questions)); err != nil {
			return err
		}
		return e.step(ctx, mb, StepQuestionsAsked, "", "", "")
	case Flow(mb.Flow) == FlowAnalysis:
		if err := e.comment(ctx, mb, KindPlan, run.ID, textPlanOnly(a.Plan)); err != nil {
			return err
		}
		return e.step(ctx, mb, StepPlanOnly, "", "", "")
	case need && slices.Contains(mb.Labels, CommandValidatePlan.Label()):
		// Validated while it was being revised (command keeps the label).
		if err := e.comment(ctx, mb, KindPlan, run.ID, textPlan(a.Plan, false)); err != nil {
			return err
		}
		if err := e.forge.RemoveLabel(ctx, issueTarget(mb), CommandValidatePlan.Label()); err != nil {
			return fmt.Errorf("remove %s: %w", CommandValidatePlan.Label(), err)
		}
		mb.Labels = slices.DeleteFunc(slices.Clone(mb.Labels), func(l string) bool { return l == CommandValidatePlan.Label() })
		return e.step(ctx, mb, StepPlanGoesOn, "", run.ID, "")
	case need:
		if err := e.comment(ctx, mb, KindPlan, run.ID, textPlan(a.Plan, true)); err != nil {
			return err
		}
		return e.step(ctx, mb, StepPlanPosted, "", "", "")
	default:
		if err := e.comment(ctx, mb, KindPlan, run.ID, textPlan(a.Plan, false)); err != nil {
			return err
		}
		return e.step(ctx, mb, StepPlanGoesOn, "", run.ID, "")
	}
}

// ensureMergeRequest finds or opens the merge request of the issue branch.
func (e *Engine) ensureMergeRequest(ctx context.Context, mb *state.Mailbox, run state.Run) error {
	p := projectOf(mb)
	mr, err := e.forge.MergeRequestForBranch(ctx, p, mb.BranchName)
	if errors.Is(err, forges.ErrNotFound) {
		base, berr := e.forge.DefaultBranch(ctx, p)
		if berr != nil {
			return berr
		}
		mr, err = e.forge.CreateMergeRequest(ctx, p, forges.NewMergeRequest{
			Title: mb.Title, Body: textMergeRequest(mb.IID, run.Result),
			SourceBranch: mb.BranchName, TargetBranch: base,
		})
	}
	if err != nil {
		return fmt.Errorf("merge request of %s: %w", mb.BranchName, err)
	}
	mb.MergeRequestIID, mb.MergeRequestURL = mr.Number, mr.URL
	return nil
}

// retryOrBlock runs a failed phase again while LLM_MAX_RETRIES allows, then
// blocks the mailbox with one comment that says which label unblocks it.
func (e *Engine) retryOrBlock(ctx context.Context, mb *state.Mailbox, run state.Run, why string) error {
	limit := LLMMaxRetries.Get(e.settings, scopeOf(mb))
	phase := agents.Phase(run.Phase)
	if mb.LLMRetries < limit {
		mb.LLMRetries++
		e.log.Info("retrying failed run", "mailbox", mb.ID, "run", run.ID, "phase", phase, "llm_retries", mb.LLMRetries)
		return e.step(ctx, mb, StepRunFailed, phase, run.ID+"/retry", run.Input)
	}
	return e.block(ctx, mb, run.Phase, textBlocked(run.Phase, why, mb.LLMRetries+1), run.ID)
}

// updateStatusComment edits in place the mailbox's managed status comment
// (kind session) with its latest runs.
func (e *Engine) updateStatusComment(ctx context.Context, mb *state.Mailbox) error {
	if mb.Kind != state.KindIssue {
		return nil
	}
	runs, err := e.store.Runs(mb.ID)
	if err != nil && len(runs) == 0 {
		return err
	}
	const latest = 10
	var rows []SessionRow
	for i := len(runs) - 1; i >= 0 && len(rows) < latest; i-- {
		r := runs[i]
		_, sessions, _ := e.store.RunWithSessions(r.ID)
		row := SessionRow{Run: r, URL: e.runURL(r.ID)}
		if len(sessions) > 0 {
			row.Session = &sessions[len(sessions)-1]
		}
		rows = append(rows, row)
	}
	return e.comment(ctx, mb, KindSession, "", textSession(rows, mb.Quarantined))
}

func (e *Engine) runURL(id string) string {
	if e.cfg.PublicURL == "" {
		return ""
	}
	return e.cfg.PublicURL + "/runs/" + id
}

// recoverRuns picks up the runs a previous process left: a finished run whose
// effects were not applied is applied, an interrupted one is started again.
func (e *Engine) recoverRuns(ctx context.Context) error {
	mbs, err := e.store.Mailboxes()
	if err != nil {
		e.log.Warn("some mailboxes are unreadable", "err", err)
	}
	for i := range mbs {
		mb := &mbs[i]
		if mb.ActiveRunID == "" {
			continue
		}
		run, _, err := e.store.RunWithSessions(mb.ActiveRunID)
		if err != nil {
			e.log.Error("interrupted run unreadable", "mailbox", mb.ID, "run", mb.ActiveRunID, "err", err)
			continue
		}
		switch run.Status {
		case state.RunQueued, state.RunRunning:
			e.log.Info("restarting interrupted run", "mailbox", mb.ID, "run", run.ID, "phase", run.Phase)
			run.Status, run.Outcome, run.FinishedAt = state.RunCanceled, "interrupted: the bot stopped", e.now()
			if err := e.store.Update(ctx, func(tx *state.Tx) error { return tx.PutRun(run) }); err != nil {
				return err
			}
			if err := e.startRun(ctx, mb, agents.Phase(run.Phase), run.Trigger, run.Input); err != nil {
				return err
			}
		default:
			e.inbox.post(mb.ID, message{runDone: run.ID})
		}
	}
	return nil
}

// pollLoop asks, at every interval, about the merge requests the bot waits on
// (forges that send no webhook for CI or mergeability).
func (e *Engine) pollLoop() {
	defer e.runs.wg.Done()
	t := time.NewTicker(e.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
			e.safely("poll", func() error { e.pollDue(); return nil })
		}
	}
}

// pollDue queues a poll for each mailbox waiting on its merge request.
func (e *Engine) pollDue() {
	mbs, _ := e.store.Mailboxes()
	for _, mb := range mbs {
		s := Status(mb.Status)
		if mb.MergeRequestIID != 0 && mb.ActiveRunID == "" && (s == StatusInCI || s == StatusInReview) {
			e.inbox.post(mb.ID, message{poll: true})
		}
	}
}

// handlePoll is the poller's turn for one mailbox: the same handling as a CI webhook.
func (e *Engine) handlePoll(ctx context.Context, key string) error {
	mb, err := e.mailbox(key)
	if err != nil || mb == nil {
		return err
	}
	return e.checkMergeRequest(ctx, mb, "poll")
}
