package bot

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/sandbox"
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
	run := state.Run{
		ID:        uuid.NewString(),
		MailboxID: mb.ID,
		Phase:     string(phase),
		Trigger:   trigger,
		Runner:    e.cfg.Runner.Name(),
		AdapterID: AgentAdapter.Get(e.settings, sc),
		Provider:  AgentProvider.Get(e.settings, sc),
		Model:     AgentModel.Get(e.settings, sc),
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
func (e *Engine) invoke(ctx context.Context, mb *state.Mailbox, run *state.Run) (*agents.Result, *state.LLMSession, error) {
	adapter, ok := e.cfg.Adapters[run.AdapterID]
	if !ok {
		return nil, nil, fmt.Errorf("no adapter %q (AGENT_ADAPTER); known: %s", run.AdapterID, strings.Join(e.adapterIDs(), ", "))
	}
	phase := agents.Phase(run.Phase)
	in, err := e.phaseInput(ctx, mb, run, phase) // before any work: a changed plan starts nothing
	if err != nil {
		return nil, nil, err
	}
	if run.PlanChanged != "" {
		return &agents.Result{Outcome: agents.OutcomeSucceeded}, nil, nil
	}
	wt, err := e.checkout(ctx, mb, run, phase)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err := wt.Remove(); err != nil {
			e.log.Warn("remove working copy", "run", run.ID, "err", err)
		}
	}()
	wt.Excludes = adapter.Capabilities().WorktreeFiles                   // out of the change (stage.go)
	if err := agents.ExcludeWorktreeFiles(wt.Dir, adapter); err != nil { // and out of the agent's own git status
		return nil, nil, err
	}
	if in.Conflict, err = e.conflicts(ctx, mb, run, wt, phase); err != nil || run.NothingToDo {
		return &agents.Result{Outcome: agents.OutcomeSucceeded, Text: run.Result}, nil, err
	}
	prompt := Prompt(in)
	spec, creds, err := e.runSpec(mb, run, wt, adapter)
	if err != nil {
		return nil, nil, err
	}
	ref, ls, err := e.session(ctx, mb, run, adapter, spec, creds)
	if err != nil {
		return nil, ls, err
	}
	if h := e.handoff(mb, run, ref); h != "" { // a fresh session picks up where another left off
		prompt += "\n" + h
	}
	res, err := e.callAgent(ctx, mb, run, adapter, agents.Request{Prompt: prompt, Phase: phase, Sandbox: spec, Session: ref}, ls)
	if err != nil || res.Outcome != agents.OutcomeSucceeded || !wt.Pushable {
		return res, ls, err
	}
	return res, ls, e.publish(ctx, mb, run, wt)
}

// conflicts merges the default branch into a conflict_resolution run's
// working copy and returns the files in conflict; none means nothing to
// resolve (run.NothingToDo: no agent, no push). Other phases have none.
func (e *Engine) conflicts(ctx context.Context, mb *state.Mailbox, run *state.Run, wt *botrun.Worktree, phase agents.Phase) ([]string, error) {
	if phase != agents.PhaseConflictResolution {
		return nil, nil
	}
	target, err := e.on(mb.Forge).DefaultBranch(ctx, projectOf(mb))
	if err != nil {
		return nil, err
	}
	conflicts, err := wt.Merge(ctx, target)
	if err == nil && len(conflicts) == 0 { // resolved meanwhile, or never there
		run.NothingToDo, run.Result = true, lifecycle.TextNothingToResolve(target)
	}
	return conflicts, err
}

// runSpec is the sandbox of a run: the service's base spec with the run's
// labels, live output, working copy (read-only for text phases), network
// and the adapter's credential mounts.
func (e *Engine) runSpec(mb *state.Mailbox, run *state.Run, wt *botrun.Worktree, adapter agents.Adapter) (sandbox.Spec, sandbox.CredentialMounts, error) {
	sc := scopeOf(mb)
	spec := e.cfg.Sandbox
	spec.Env = cloneMap(spec.Env)
	spec.Labels = map[string]string{"alfred.run": run.ID, "alfred.mailbox": mb.ID}
	spec.Stdout, spec.Stderr = e.liveWriters(run.ID)
	// The working copy is always at the same place, so CLIs that bind their
	// sessions to the cwd find them again.
	spec.Workdir = sandbox.WorkspacePath
	spec.Worktree = &sandbox.Mount{Host: wt.Dir, Container: sandbox.WorkspacePath, ReadOnly: agents.Phase(run.Phase).TextOnly()}
	spec.Network = AgentNetwork.Get(e.settings, sc)
	creds, err := sandbox.ParseCredentialMounts(AgentCredentialMounts.Get(e.settings, sc))
	if err != nil {
		return spec, nil, fmt.Errorf("AGENT_CREDENTIAL_MOUNTS: %w", err)
	}
	spec.Credentials = creds[adapter.ID()]
	return spec, creds, handOver(wt.Dir, spec.UID, spec.GID)
}

// session decides the run's named session (resume, fresh, or none and
// why) and records its llm_session before the invocation.
func (e *Engine) session(ctx context.Context, mb *state.Mailbox, run *state.Run, adapter agents.Adapter, spec sandbox.Spec, creds sandbox.CredentialMounts) (*agents.SessionRef, *state.LLMSession, error) {
	late, err := e.awaitDetection(ctx)
	if err != nil {
		return nil, nil, err
	}
	decision, err := botrun.SessionResolver{History: e.store, Store: e.cfg.Sessions}.Resolve(botrun.SessionInput{
		Mailbox: *mb, RunID: run.ID, Enabled: AgentSessionResume.Get(e.settings, scopeOf(mb)),
		Adapter: adapter.Capabilities(), AdapterID: adapter.ID(), Installation: e.installation(adapter.ID()),
		Runner: e.cfg.Runner.Name(), Credentials: creds,
	})
	if err != nil {
		return nil, nil, err
	}
	ls := &state.LLMSession{ID: uuid.NewString(), RunID: run.ID, MailboxID: mb.ID, AdapterID: adapter.ID(),
		Provider: run.Provider, Model: run.Model, Outcome: "running", CreatedAt: e.now()}
	if ref := decision.Ref; ref != nil {
		if _, err := e.cfg.Sessions.Ensure(*mb, adapter.ID(), spec.UID, spec.GID); err != nil {
			return nil, nil, err
		}
		ls.SessionName = &ref.Name
		if id := ref.ResumeID; id != "" {
			ls.ResumeOf = &id
		}
	} else {
		if late != "" && e.installation(adapter.ID()) == nil {
			decision.Why = late
		}
		run.NoSession = decision.Why
		e.log.Info("no named session", "run", run.ID, "why", decision.Why)
	}
	if err := e.store.Update(ctx, func(tx *state.Tx) error { return tx.PutLLMSession(*ls) }); err != nil {
		return nil, nil, fmt.Errorf("record llm session: %w", err)
	}
	return decision.Ref, ls, nil
}

// callAgent runs the adapter, sealed behind the model gateway when it can
// be, and records what it said and spent into run and ls, with every secret
// of the run hidden (the gateway session's token is one more).
func (e *Engine) callAgent(ctx context.Context, mb *state.Mailbox, run *state.Run, adapter agents.Adapter, req agents.Request, ls *state.LLMSession) (*agents.Result, error) {
	redactRun := e.redact
	gw, err := e.seal(run.ID, scopeOf(mb), adapter, &req.Sandbox)
	if err != nil {
		ls.Outcome = string(agents.OutcomeFailed)
		return nil, err
	}
	if gw != nil {
		defer e.unseal(gw, run) // on every way out; closing twice is harmless
		if out, ok := e.Follow(run.ID); ok {
			out.AddSecrets(gw.Token())
		}
		redactRun = func(text string) string { return redact.Secrets(e.redact(text), []string{gw.Token()}) }
		if err := e.meterBudget(mb, gw); err != nil {
			ls.Outcome = string(agents.OutcomeFailed)
			return nil, err
		}
	}
	defer e.keepSteps(mb, run, adapter, ls, redactRun) // the run's steps of its session, once the CLI has ended
	req.Provider, req.Model, req.Runner = run.Provider, run.Model, e.cfg.Runner
	req.Timeout = RunTimeout.Get(e.settings, scopeOf(mb))
	watched, stop := e.watchStall(ctx, mb, run, adapter, gw)
	res, err := adapter.Run(watched, req)
	stall := stop()
	if gw != nil {
		e.unseal(gw, run) // the container is gone: the token dies now, not after the push
	}
	if stall != nil && ctx.Err() == nil { // stopped by the watchdog, not on purpose
		return stalled(run, ls, res, stall, req.Session != nil, redactRun)
	}
	if err != nil {
		ls.Outcome = string(agents.OutcomeFailed)
		return nil, fmt.Errorf("invoke %s: %w", adapter.ID(), err)
	}
	if gw != nil && gw.BudgetReached() { // the gateway refused its last requests
		if res.Outcome == agents.OutcomeSucceeded {
			res.Outcome = agents.OutcomeFailed
		}
		res.Text = "budget reached: the gateway refused the run's model requests at the issue's token budget (AGENT_BUDGET_TOKENS)"
	}
	recordUsage(ls, res, req.Session != nil)
	// What the agent says goes to records, comments and the merge request:
	// an agent made to print its environment must not publish a secret.
	// ... and what it wants shown in the thread loads no image and links
	// to no other host: a rendered image is a request its author sees.
	res.Text = botrun.Neutralise(redactRun(res.Text), botrun.URLHost(mb.IssueURL))
	run.Result, run.Log = res.Text, redactRun(attemptsLog(res))
	return res, nil
}

// recordUsage fills the llm_session of a run from its result: outcome,
// tokens, cost and duration, and for a named session its native id and how
// it started.
func recordUsage(ls *state.LLMSession, res *agents.Result, named bool) {
	ls.Outcome = string(res.Outcome)
	ls.InputTokens, ls.OutputTokens, ls.CostUSD = res.InputTokens, res.OutputTokens, res.CostUSD
	ls.DurationMS = res.Duration.Milliseconds()
	if !named {
		return
	}
	if res.NativeSessionID != "" {
		ls.NativeSessionID = &res.NativeSessionID
	}
	ls.Resumed = res.Resumed
	if res.ResumeFallback != "" {
		reason := string(res.ResumeFallback)
		ls.ResumeFallback = &reason
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

// checkout makes the run's working copy: the issue branch for phases that
// write, and for read-only phases the branch if the forge has it, else a
// temporary branch that is never pushed.
func (e *Engine) checkout(ctx context.Context, mb *state.Mailbox, run *state.Run, phase agents.Phase) (*botrun.Worktree, error) {
	p := projectOf(mb)
	url, err := e.on(mb.Forge).CloneURL(ctx, p)
	if err != nil {
		return nil, err
	}
	user, pass, err := e.on(mb.Forge).GitCredentials(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("git credentials: %w", err)
	}
	remote := botrun.Remote{URL: url, Username: user, Password: pass}
	if _, err := e.cfg.Repos.Fetch(ctx, p, remote); err != nil {
		return nil, err
	}
	base, err := e.on(mb.Forge).DefaultBranch(ctx, p)
	if err != nil {
		return nil, err
	}
	branch := mb.BranchName
	if branch == "" { // a merge request mailbox works on the merge request's branch
		mr, err := e.on(mb.Forge).MergeRequest(ctx, p, mb.IID)
		if err != nil {
			return nil, err
		}
		branch = mr.SourceBranch
	}
	return e.cfg.Repos.Checkout(ctx, p, remote, run.ID, branch, base, !phase.TextOnly())
}

// publish computes what the agent left (Worktree.Stage), checks it
// (CheckChange), and commits and pushes it as the bot; a change that breaks
// a rule is held on the run instead (run.Held), and nothing is pushed.
func (e *Engine) publish(ctx context.Context, mb *state.Mailbox, run *state.Run, wt *botrun.Worktree) error {
	ch, err := wt.Stage(ctx)
	if err != nil {
		return err
	}
	held, err := wt.CheckChange(ctx, ch, AgentAllowCIChanges.Get(e.settings, scopeOf(mb)), e.secrets())
	if err != nil {
		return err
	}
	if len(held) > 0 {
		return e.hold(ctx, run, wt, ch, held)
	}
	committed, err := wt.Commit(ctx, ch, commitMessage(agents.Phase(run.Phase), mb))
	if err != nil || !committed {
		return err
	}
	user, pass, err := e.on(mb.Forge).GitCredentials(ctx, projectOf(mb))
	if err != nil {
		return fmt.Errorf("git credentials: %w", err)
	}
	wt.Renew(user, pass) // fresh: the run may have outlived a short-lived token
	if err := wt.Push(ctx); err != nil {
		return err
	}
	run.Pushed = true
	run.HeadSHA, err = wt.Head(ctx)
	return err
}

func commitMessage(p agents.Phase, mb *state.Mailbox) string {
	switch p {
	case agents.PhaseCIFix:
		return fmt.Sprintf("fix: make CI pass (#%d)", mb.IID)
	case agents.PhaseReviewFix:
		return fmt.Sprintf("fix: address review feedback (#%d)", mb.IID)
	case agents.PhaseConflictResolution:
		return fmt.Sprintf("chore: merge the target branch and resolve conflicts (#%d)", mb.IID)
	}
	return fmt.Sprintf("feat: %s (#%d)", mb.Title, mb.IID)
}

// installation is the detected CLI of an adapter on the configured runner.
func (e *Engine) installation(adapterID string) *state.AgentInstallation {
	all, _ := e.store.Installations()
	for i := range all {
		a := &all[i]
		if a.AdapterID == adapterID && a.Runner == e.cfg.Runner.Name() && (a.Runner == "host" || a.Image == e.cfg.Sandbox.Image) {
			return a
		}
	}
	return nil
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

func attemptsLog(res *agents.Result) string {
	var b strings.Builder
	for i, a := range res.Attempts {
		fmt.Fprintf(&b, "--- attempt %d (%s): %s, exit %d, %s\n", i+1, a.Mode, a.Outcome, a.ExitCode, a.Duration.Round(time.Millisecond))
		if a.Fallback != "" {
			fmt.Fprintf(&b, "resume failed (%s): starting fresh under the same name\n", a.Fallback)
		}
		b.Write(a.Stdout)
		if len(a.Stderr) > 0 {
			b.WriteString("\n--- stderr\n")
			b.Write(a.Stderr)
		}
		b.WriteString("\n")
	}
	if len(res.Attempts) == 0 {
		b.Write(res.Stdout)
		b.Write(res.Stderr)
	}
	return b.String()
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

func firstLine(s string) string { return clip(s, 200) }

// clip is the first line of s, cut to n bytes (at a rune's start).
func clip(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func stripMarker(body string) string {
	if i := strings.LastIndex(body, "<!-- agent:key="); i >= 0 {
		body = body[:i]
	}
	return strings.TrimSpace(body)
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// hold keeps a change that broke a rule on the run: the files and why, and
// its patch (redacted, bounded), for a person to inspect.
func (e *Engine) hold(ctx context.Context, run *state.Run, wt *botrun.Worktree, ch *botrun.Change, held []botrun.Refusal) error {
	patch, err := wt.Patch(ctx, ch, state.MaxHeldPatch)
	if err != nil {
		e.log.Warn("patch of a held change", "run", run.ID, "err", err)
		patch = ""
	}
	run.Held = &state.RunHeld{Patch: botrun.RedactTokens(e.redact(patch))}
	for _, r := range held {
		run.Held.Files = append(run.Held.Files, state.HeldFile{Path: r.Path, Reason: r.Reason})
	}
	e.log.Warn("change held for a person", "run", run.ID, "files", len(held))
	return nil
}

// handOver gives the working copy to the sandbox's uid:gid when the bot runs
// as root, so a non-root agent can write it.
func handOver(dir string, uid, gid int) error {
	if os.Geteuid() != 0 || uid == 0 {
		return nil
	}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("hand the working copy to %d:%d: %w", uid, gid, err)
	}
	return nil
}
