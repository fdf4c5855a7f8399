package bot

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/state"
)

// startRun records a queued run of phase, freezes the branch name (at the
// first run of any phase, analysis included, without creating the branch)
// and starts executing it in the background.
func (e *Engine) startRun(ctx context.Context, mb *state.Mailbox, phase agents.Phase, trigger, input string) error {
	sc := scopeOf(mb)
	if mb.BranchName == "" && mb.Kind == state.KindIssue {
		mb.BranchName = BranchName(BranchPrefix.Get(e.settings, sc), mb.IID, mb.Title)
	}
	adapter, provider, model := e.agentOf(mb)
	run := state.Run{
		ID:        uuid.NewString(),
		MailboxID: mb.ID,
		Phase:     string(phase),
		Trigger:   trigger,
		Runner:    e.cfg.Runner.Name(),
		AdapterID: adapter,
		Provider:  provider,
		Model:     model,
		Status:    state.RunQueued,
		Input:     input,
		CreatedAt: e.now(),
	}
	mb.Phase = string(phase)
	mb.ActiveRunID = run.ID
	err := e.store.Update(ctx, func(tx *state.Tx) error {
		if err := tx.PutMailbox(*mb); err != nil {
			return err
		}
		return tx.PutRun(run)
	})
	if err != nil {
		return fmt.Errorf("record run: %w", err)
	}
	e.log.Info("run queued", "mailbox", mb.ID, "run", run.ID, "phase", phase, "adapter", run.AdapterID)
	e.launch(mb.ID, run.ID)
	// The status comment links to the run's page at once: it follows the
	// run's output while it goes.
	if err := e.updateStatusComment(ctx, mb); err != nil {
		e.log.Warn("status comment", "mailbox", mb.ID, "err", err)
	}
	return nil
}

// liveRun is a launched run: how to cancel it, when it has ended, and what
// it prints while it goes (live.go).
type liveRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	out    *live.Output
}

// launch executes a recorded run in the background and posts its end to the
// mailbox's inbox.
func (e *Engine) launch(mailboxID, runID string) {
	ctx, cancel := context.WithCancelCause(e.ctx)
	live := &liveRun{cancel: cancel, done: make(chan struct{}), out: e.newLiveOutput()}
	e.runs.mu.Lock()
	e.runs.running[runID] = live
	e.runs.mu.Unlock()
	e.runs.wg.Add(1)
	go func() {
		defer e.runs.wg.Done()
		defer func() {
			e.endLive(runID, live.out)
			e.runs.mu.Lock()
			delete(e.runs.running, runID)
			e.runs.mu.Unlock()
			cancel(nil)
			close(live.done)
		}()
		select {
		case e.runs.slots <- struct{}{}:
		case <-ctx.Done():
			if e.ctx.Err() == nil {
				e.recordCanceled(mailboxID, runID, context.Cause(ctx))
				e.inbox.post(mailboxID, message{runDone: runID})
			}
			return
		}
		defer func() { <-e.runs.slots }()
		if err := e.execute(ctx, mailboxID, runID); err != nil {
			e.log.Error("run", "mailbox", mailboxID, "run", runID, "err", err)
		}
		if e.ctx.Err() != nil {
			return // shutting down: the run is picked up again at the next start
		}
		e.inbox.post(mailboxID, message{runDone: runID})
	}()
}

// stopRun cancels a launched run with cause (its container is stopped and
// removed) and waits until it has ended and recorded so, or until ctx ends.
// A run that is not running here is left as it is.
func (e *Engine) stopRun(ctx context.Context, runID string, cause error) error {
	e.runs.mu.Lock()
	live := e.runs.running[runID]
	e.runs.mu.Unlock()
	if live == nil {
		return nil
	}
	live.cancel(cause)
	select {
	case <-live.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop run %s: %w", runID, ctx.Err())
	}
}

// canceledOutcome is the recorded outcome of a run stopped on purpose.
func canceledOutcome(cause error) string { return "canceled: " + cause.Error() }

// recordCanceled records the end of a run canceled before it started.
func (e *Engine) recordCanceled(mailboxID, runID string, cause error) {
	err := e.store.Update(e.ctx, func(tx *state.Tx) error {
		run, err := tx.Run(mailboxID, runID)
		if err != nil {
			return err
		}
		run.Status, run.Outcome, run.FinishedAt = state.RunCanceled, canceledOutcome(cause), e.now()
		return tx.PutRun(run)
	})
	if err != nil {
		e.log.Error("record a canceled run", "run", runID, "err", err)
	}
}

// execute runs one recorded run: working copy, sandbox spec, session,
// invocation, recording, commit and push. It records the run's end in every
// case it can, failures included.
func (e *Engine) execute(ctx context.Context, mailboxID, runID string) error {
	k, err := state.ParseMailboxID(mailboxID)
	if err != nil {
		return err
	}
	mb, err := e.store.Mailbox(k)
	if err != nil {
		return fmt.Errorf("read mailbox: %w", err)
	}
	run, _, err := e.store.RunWithSessions(runID)
	if err != nil {
		return fmt.Errorf("read run: %w", err)
	}
	run.Status, run.StartedAt = state.RunRunning, e.now()
	if err := e.store.Update(context.WithoutCancel(ctx), func(tx *state.Tx) error { return tx.PutRun(run) }); err != nil {
		return fmt.Errorf("mark run running: %w", err)
	}
	log := e.log.With("mailbox", mb.ID, "run", run.ID, "phase", run.Phase)
	log.Info("run started")

	var res *agents.Result
	var ls *state.LLMSession
	err = e.safely("run", func() (err error) {
		res, ls, err = e.invoke(ctx, &mb, &run)
		return err
	}, "mailbox", mb.ID, "run", run.ID)
	run.FinishedAt = e.now()
	if !e.ended(ctx, &run, res, err, log) {
		return nil // shutting down: leave it running; recoverRuns starts it again
	}
	e.cfg.Metrics.RunEnded(run.Phase, run.AdapterID, string(run.Status), run.FinishedAt.Sub(run.StartedAt))
	if ls != nil {
		e.cfg.Metrics.SessionStarted(sessionStart(ls))
	}
	return e.store.Update(context.WithoutCancel(ctx), func(tx *state.Tx) error {
		if ls != nil {
			if err := tx.PutLLMSession(*ls); err != nil {
				return err
			}
		}
		return tx.PutRun(run)
	})
}

// ended sets the run's status and outcome from how the invocation ended:
// canceled (stopRun), failed, or the adapter's outcome. False: the engine is
// shutting down and the run stays running in the records.
func (e *Engine) ended(ctx context.Context, run *state.Run, res *agents.Result, err error, log *slog.Logger) bool {
	canceled := err != nil || res.Outcome == agents.OutcomeCanceled
	switch {
	case e.ctx.Err() != nil && canceled:
		return false
	case ctx.Err() != nil && canceled: // stopped by stopRun
		run.Status, run.Outcome = state.RunCanceled, canceledOutcome(context.Cause(ctx))
		log.Info("run canceled", "cause", context.Cause(ctx))
	case err != nil:
		run.Status, run.Outcome = state.RunFailed, e.redact(err.Error())
		log.Warn("run failed", "err", run.Outcome)
	case run.PlanChanged != "":
		run.Status, run.Outcome = state.RunCanceled, "not started: "+run.PlanChanged+" since the plan was validated"
		log.Warn("run not started", "outcome", run.Outcome)
	case run.Held != nil:
		run.Status, run.Outcome = state.RunFailed, fmt.Sprintf("held for a person: %d file(s) of the change broke a rule (%s)", len(run.Held.Files), run.Held.Files[0].Reason)
		log.Warn("run held", "outcome", run.Outcome)
	default:
		run.Status, run.Outcome = runStatus(res.Outcome), string(res.Outcome)
		if res.Outcome != agents.OutcomeSucceeded && res.Text != "" {
			run.Outcome += ": " + firstLine(res.Text)
		}
		log.Info("run finished", "outcome", res.Outcome, "resumed", res.Resumed, "fallback", res.ResumeFallback)
	}
	return true
}

// sessionStart names how a run's session started, for the metrics: as the
// status comment says it (state.LLMSession.Start), or "none" without a named
// session.
func sessionStart(ls *state.LLMSession) string {
	if ls.SessionName == nil {
		return "none"
	}
	return ls.Start()
}

// invoke does the work of a run and fills run (log, result, push) and the
// llm_session record. An error means the run could not be carried out.
// The phase's context is gathered first (a changed plan starts nothing),
// and the rest is the runner's (bot/run).
func (e *Engine) invoke(ctx context.Context, mb *state.Mailbox, rec *state.Run) (*agents.Result, *state.LLMSession, error) {
	adapter, ok := e.cfg.Adapters[rec.AdapterID]
	if !ok {
		return nil, nil, fmt.Errorf("no adapter %q (AGENT_ADAPTER or the issue's AGENT_TRIAL arm); known: %s", rec.AdapterID, strings.Join(e.adapterIDs(), ", "))
	}
	in, err := e.phaseInput(ctx, mb, rec, agents.Phase(rec.Phase)) // before any work: a changed plan starts nothing
	if err != nil {
		return nil, nil, err
	}
	if rec.PlanChanged != "" {
		return &agents.Result{Outcome: agents.OutcomeSucceeded}, nil, nil
	}
	req := botrun.Request{Mailbox: *mb, Run: rec, Forge: e.on(mb.Forge), Adapter: adapter, Input: in, Settings: e.runSettings(mb)}
	if out, ok := e.Follow(rec.ID); ok {
		req.Live = out
	}
	report, err := e.runner.Run(ctx, req)
	return report.Result, report.Session, err
}

// runSettings are the settings of mb's project a run reads.
func (e *Engine) runSettings(mb *state.Mailbox) botrun.Settings {
	sc := scopeOf(mb)
	_, provider, model := e.agentOf(mb)
	tokens, _ := e.budgetOf(mb).Total()
	return botrun.Settings{
		Network:          AgentNetwork.Get(e.settings, sc),
		CredentialMounts: AgentCredentialMounts.Get(e.settings, sc),
		SessionResume:    AgentSessionResume.Get(e.settings, sc),
		SessionHandoff:   AgentSessionHandoff.Get(e.settings, sc),
		AllowCIChanges:   AgentAllowCIChanges.Get(e.settings, sc),
		EgressAllow:      splitHosts(AgentEgressAllow.Get(e.settings, sc)),
		Provider:         provider,
		Model:            model,
		Timeout:          RunTimeout.Get(e.settings, sc),
		StallTimeout:     AgentStallTimeout.Get(e.settings, sc),
		TokenBudget:      tokens,
		Spent: func() (int64, error) {
			sp, err := e.spent(mb.ID)
			return sp.Tokens, err
		},
	}
}

// awaitDetection holds a run until the first detection of the agent CLIs
// has ended, at most until DetectionWait after Start. Past that the run goes
// on, and the text returned says why it may have no session.
func (e *Engine) awaitDetection(ctx context.Context) (string, error) {
	if e.cfg.Detected == nil {
		return "", nil
	}
	t := time.NewTimer(time.Until(e.detectBy))
	defer t.Stop()
	select {
	case <-e.cfg.Detected:
		return "", nil
	case <-t.C:
		return fmt.Sprintf("the agent CLIs were still being detected %s after the start", e.cfg.DetectionWait), nil
	case <-ctx.Done():
		return "", fmt.Errorf("wait for agent detection: %w", context.Cause(ctx))
	}
}

func (e *Engine) adapterIDs() []string {
	ids := make([]string, 0, len(e.cfg.Adapters))
	for id := range e.cfg.Adapters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// redact removes every secret the bot knows from text bound for a record,
// a comment or a page: the forge token and the values of offered variables
// whose names say they are secret.
func (e *Engine) redact(text string) string { return redact.Secrets(text, e.secrets()) }

// secrets are the values redact hides.
func (e *Engine) secrets() []string {
	secrets := slices.Clone(e.cfg.Secrets)
	for _, f := range e.cfg.Forges {
		if _, pass, err := f.GitCredentials(context.Background(), forges.Project{}); err == nil && pass != "" {
			secrets = append(secrets, pass)
		}
	}
	for k, v := range e.cfg.Sandbox.Env {
		if SecretName(k) {
			secrets = append(secrets, v)
		}
	}
	return secrets
}

// SecretName tells whether a variable's name says its value is a secret.
func SecretName(k string) bool {
	k = strings.ToUpper(k)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

func runStatus(o agents.Outcome) state.RunStatus {
	switch o {
	case agents.OutcomeSucceeded:
		return state.RunSucceeded
	case agents.OutcomeTimeout:
		return state.RunTimeout
	case agents.OutcomeCanceled:
		return state.RunCanceled
	}
	return state.RunFailed
}

func firstLine(s string) string { return lifecycle.Clip(s, 200) }

func stripMarker(body string) string {
	if i := strings.LastIndex(body, "<!-- agent:key="); i >= 0 {
		body = body[:i]
	}
	return strings.TrimSpace(body)
}
