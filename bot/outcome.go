package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// handleRunDone applies a finished run to its mailbox, in the mailbox's
// worker: the status comment, then what the run's end decides
// (lifecycle.DecideRunEnd). A session fallback never reaches here as a failure: it
// lives inside the adapter.
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
	next, a := lifecycle.DecideRunEnd(*mb, run, e.rulesOf(mb))
	return e.apply(ctx, mb, next, a)
}

// ensureMergeRequest finds or opens the merge request of the issue branch.
func (e *Engine) ensureMergeRequest(ctx context.Context, mb *state.Mailbox, result string) error {
	p := projectOf(mb)
	mr, err := e.on(mb.Forge).MergeRequestForBranch(ctx, p, mb.BranchName)
	if errors.Is(err, forges.ErrNotFound) {
		base, berr := e.on(mb.Forge).DefaultBranch(ctx, p)
		if berr != nil {
			return berr
		}
		mr, err = e.on(mb.Forge).CreateMergeRequest(ctx, p, forges.NewMergeRequest{
			Title: mb.Title, Body: lifecycle.TextMergeRequest(mb.IID, result),
			SourceBranch: mb.BranchName, TargetBranch: base,
		})
	}
	if err != nil {
		return fmt.Errorf("merge request of %s: %w", mb.BranchName, err)
	}
	mb.MergeRequestIID, mb.MergeRequestURL = mr.Number, mr.URL
	if mb.MergeRequestAt.IsZero() {
		mb.MergeRequestAt = e.now()
	}
	return nil
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
	var rows []lifecycle.SessionRow
	for i := len(runs) - 1; i >= 0 && len(rows) < latest; i-- {
		r := runs[i]
		_, sessions, _ := e.store.RunWithSessions(r.ID)
		row := lifecycle.SessionRow{Run: r, URL: e.runURL(r.ID)}
		if len(sessions) > 0 {
			row.Session = &sessions[len(sessions)-1]
		}
		rows = append(rows, row)
	}
	return e.comment(ctx, mb, lifecycle.KindSession, "", lifecycle.TextSession(rows, mb.Quarantined))
}

func (e *Engine) runURL(id string) string { return lifecycle.RunPage(e.cfg.PublicURL, id) }

// recoverRuns picks up the runs a previous process left on the forges named:
// a finished run whose effects were not applied is applied, an interrupted
// one is started again.
func (e *Engine) recoverRuns(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	mbs, err := e.store.OpenMailboxes() // a finished mailbox has no run in progress
	if err != nil {
		e.log.Warn("some mailboxes are unreadable", "err", err)
	}
	for i := range mbs {
		mb := &mbs[i]
		if mb.ActiveRunID == "" || !slices.Contains(names, mb.Forge) {
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

// pollDue queues a poll for each mailbox waiting on its merge request (one
// for which a CI intent has a row of the dispatch table), on the forges that
// answer. It reads the open mailboxes only: no CI row leaves a finished one
// (StatusDone), and the finished are most of them.
func (e *Engine) pollDue() {
	mbs, _ := e.store.OpenMailboxes()
	for _, mb := range mbs {
		if e.meOn(mb.Forge) == "" {
			continue
		}
		if _, _, ok := lifecycle.Dispatch(lifecycle.Facts{Intent: ciIntent, Mailbox: &mb}); ok {
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
	return e.dispatch(ctx, handling{mb: mb, in: ciIntent, trigger: "poll"})
}

// ciIntent is what the poller and the end of a run ask of the dispatch
// table: the same handling as a CI webhook.
var ciIntent = lifecycle.Intent{Kind: lifecycle.IntentCI}
