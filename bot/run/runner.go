package run

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// Runner carries out runs. It is built once, with what every run shares,
// and Run carries out one: the working copy, the prompt, the sandbox spec,
// the session decision and its handoff, the seal, the stall watch, the
// adapter's call with its live output, the transcript read back, and the
// change staged, checked, committed and pushed (or held).
type Runner struct {
	// Sandbox runs the local agents ("image", "host", "kubernetes").
	Sandbox sandbox.Runner
	// Spec is the base of every run's spec: image, uid:gid, limits, and
	// the environment offered to adapters.
	Spec sandbox.Spec
	// Repos keeps the project clones and the runs' working copies.
	Repos *Repos
	// Sessions is the base of the per-mailbox agent session state.
	Sessions SessionStore
	// Sealing, when set, seals the runs that can be behind the model
	// gateway (seal.go); nil: no run is sealed.
	Sealing *Seal
	// Store holds the session history, the detected installations, the
	// llm_session a run records before its invocation, and the earlier
	// runs its handoff and its steps are read from.
	Store *state.Store
	// Secrets are the values to hide from what a run records.
	Secrets func() []string
	// Detection waits for the first detection of the agent CLIs; late
	// says why a run may have no session when it did not end in time.
	Detection func(ctx context.Context) (late string, err error)
	// Stopping tells whether the engine is shutting down (nothing more is
	// read of a run then).
	Stopping func() bool
	Log      *slog.Logger
	Now      func() time.Time
}

// Settings are the project's settings a run reads, resolved by the engine.
type Settings struct {
	Network          string        // AGENT_NETWORK
	CredentialMounts string        // AGENT_CREDENTIAL_MOUNTS
	SessionResume    bool          // AGENT_SESSION_RESUME
	SessionHandoff   bool          // AGENT_SESSION_HANDOFF
	AllowCIChanges   bool          // AGENT_ALLOW_CI_CHANGES
	EgressAllow      []string      // AGENT_EGRESS_ALLOW
	Provider, Model  string        // AGENT_PROVIDER, AGENT_MODEL, as the seal checks them
	Timeout          time.Duration // RUN_TIMEOUT
	StallTimeout     time.Duration // AGENT_STALL_TIMEOUT
	// TokenBudget is what is left of the token budget to hand to a
	// sealed run's gateway session: its limit (0: none) and the tokens
	// spent so far, read when the run is sealed.
	TokenBudget int64
	Spent       func() (int64, error)
}

// Forge is what a run asks of its project's forge.
type Forge interface {
	CloneURL(ctx context.Context, p forges.Project) (string, error)
	GitCredentials(ctx context.Context, p forges.Project) (username, password string, err error)
	DefaultBranch(ctx context.Context, p forges.Project) (string, error)
	MergeRequest(ctx context.Context, p forges.Project, number int64) (*forges.MergeRequest, error)
}

// Request is one run, as the engine hands it over.
type Request struct {
	Mailbox state.Mailbox
	// Run is the run's record, running: Run fills it as it goes (result,
	// log, push, held change, the session's why not, handoff, gateway,
	// steps, stall).
	Run      *state.Run
	Forge    Forge
	Adapter  agents.Adapter
	Input    PromptInput // the phase's context, gathered by the engine
	Settings Settings
	// Live is the run's live output (nil: not launched here).
	Live *live.Output
}

// Report is what a run reports besides its record: the adapter's result
// and the run's llm_session, nil when it got none.
type Report struct {
	Result  *agents.Result
	Session *state.LLMSession
}

// Run does the work of a run and fills its record (req.Run). An error
// means the run could not be carried out; the report holds what it got.
func (r *Runner) Run(ctx context.Context, req Request) (Report, error) {
	mb, run, adapter := &req.Mailbox, req.Run, req.Adapter
	phase := agents.Phase(run.Phase)
	wt, err := r.checkout(ctx, req.Forge, mb, run, phase)
	if err != nil {
		return Report{}, err
	}
	defer func() {
		if err := wt.Remove(); err != nil {
			r.Log.Warn("remove working copy", "run", run.ID, "err", err)
		}
	}()
	wt.Excludes = adapter.Capabilities().WorktreeFiles                   // out of the change (stage.go)
	if err := agents.ExcludeWorktreeFiles(wt.Dir, adapter); err != nil { // and out of the agent's own git status
		return Report{}, err
	}
	in := req.Input
	if in.Conflict, err = conflicts(ctx, req.Forge, mb, run, wt, phase); err != nil || run.NothingToDo {
		return Report{Result: &agents.Result{Outcome: agents.OutcomeSucceeded, Text: run.Result}}, err
	}
	in.Changes = r.changes(ctx, mb, run, wt)
	prompt := Prompt(in)
	spec, creds, err := r.spec(req, wt)
	if err != nil {
		return Report{}, err
	}
	ref, ls, err := r.session(ctx, req, spec, creds)
	if err != nil {
		return Report{Session: ls}, err
	}
	if h := r.handoff(mb, run, ref, req.Settings.SessionHandoff); h != "" { // a fresh session picks up where another left off
		prompt += "\n" + h
	}
	res, err := r.callAgent(ctx, req, agents.Request{Prompt: prompt, Phase: phase, Sandbox: spec, Session: ref}, ls, wt.Home)
	if err != nil || res.Outcome != agents.OutcomeSucceeded || !wt.Pushable {
		return Report{Result: res, Session: ls}, err
	}
	return Report{Result: res, Session: ls}, r.publish(ctx, req, wt)
}

// conflicts merges the default branch into a conflict_resolution run's
// working copy and returns the files in conflict; none means nothing to
// resolve (run.NothingToDo: no agent, no push). Other phases have none.
func conflicts(ctx context.Context, f Forge, mb *state.Mailbox, run *state.Run, wt *Worktree, phase agents.Phase) ([]string, error) {
	if phase != agents.PhaseConflictResolution {
		return nil, nil
	}
	target, err := f.DefaultBranch(ctx, projectOf(mb))
	if err != nil {
		return nil, err
	}
	conflicts, err := wt.Merge(ctx, target)
	if err == nil && len(conflicts) == 0 { // resolved meanwhile, or never there
		run.NothingToDo, run.Result = true, lifecycle.TextNothingToResolve(target)
	}
	return conflicts, err
}

// checkout makes the run's working copy: the issue branch for phases that
// write, and for read-only phases the branch if the forge has it, else a
// temporary branch that is never pushed.
func (r *Runner) checkout(ctx context.Context, f Forge, mb *state.Mailbox, run *state.Run, phase agents.Phase) (*Worktree, error) {
	p := projectOf(mb)
	url, err := f.CloneURL(ctx, p)
	if err != nil {
		return nil, err
	}
	user, pass, err := f.GitCredentials(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("git credentials: %w", err)
	}
	remote := Remote{URL: url, Username: user, Password: pass}
	if _, err := r.Repos.Fetch(ctx, p, remote); err != nil {
		return nil, err
	}
	base, err := f.DefaultBranch(ctx, p)
	if err != nil {
		return nil, err
	}
	branch := mb.BranchName
	if branch == "" { // a merge request mailbox works on the merge request's branch
		mr, err := f.MergeRequest(ctx, p, mb.IID)
		if err != nil {
			return nil, err
		}
		branch = mr.SourceBranch
	}
	return r.Repos.Checkout(ctx, p, remote, run.ID, branch, base, !phase.TextOnly())
}

// publish computes what the agent left (Worktree.Stage), checks it
// (checkChange), and commits and pushes it as the bot; a change that breaks
// a rule is held on the run instead (run.Held), and nothing is pushed.
func (r *Runner) publish(ctx context.Context, req Request, wt *Worktree) error {
	mb, run := &req.Mailbox, req.Run
	ch, err := wt.Stage(ctx)
	if err != nil {
		return err
	}
	held, err := wt.checkChange(ctx, ch, req.Settings.AllowCIChanges, r.Secrets())
	if err != nil {
		return err
	}
	if len(held) > 0 {
		return r.hold(ctx, run, wt, ch, held)
	}
	committed, err := wt.Commit(ctx, ch, commitMessage(agents.Phase(run.Phase), mb))
	if err != nil || !committed {
		return err
	}
	user, pass, err := req.Forge.GitCredentials(ctx, projectOf(mb))
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

// hold keeps a change that broke a rule on the run: the files and why, and
// its patch (redacted, bounded), for a person to inspect.
func (r *Runner) hold(ctx context.Context, run *state.Run, wt *Worktree, ch *Change, held []Refusal) error {
	patch, err := wt.Patch(ctx, ch, state.MaxHeldPatch)
	if err != nil {
		r.Log.Warn("patch of a held change", "run", run.ID, "err", err)
		patch = ""
	}
	run.Held = &state.RunHeld{Patch: redactTokens(r.redact(patch))}
	for _, h := range held {
		run.Held.Files = append(run.Held.Files, state.HeldFile{Path: h.Path, Reason: h.Reason})
	}
	r.Log.Warn("change held for a person", "run", run.ID, "files", len(held))
	return nil
}

// redact removes every secret the bot knows from text bound for a record,
// a comment or a page.
func (r *Runner) redact(text string) string { return redact.Secrets(text, r.Secrets()) }

func projectOf(mb *state.Mailbox) forges.Project {
	return forges.Project{Forge: mb.Forge, Owner: mb.Owner, Name: mb.Project}
}
