package run

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// spec is the sandbox of a run: the service's base spec with the run's
// labels, live output (decoding the adapter's stream), working copy (read-only for text phases), network
// and the adapter's credential mounts.
func (r *Runner) spec(req Request, wt *Worktree) (sandbox.Spec, sandbox.CredentialMounts, error) {
	mb, run := &req.Mailbox, req.Run
	spec := r.Spec
	spec.Env = cloneMap(spec.Env)
	spec.Labels = map[string]string{"alfred.run": run.ID, "alfred.mailbox": mb.ID}
	if req.Live != nil {
		req.Live.Decode(liveDecoder(req.Adapter)) // the agent's steps, not its raw events (live.go)
		spec.Stdout, spec.Stderr = req.Live.Stdout(), req.Live.Stderr()
	}
	// The working copy is always at the same place, so CLIs that bind their
	// sessions to the cwd find them again.
	spec.Workdir = sandbox.WorkspacePath
	spec.Worktree = &sandbox.Mount{Host: wt.Dir, Container: sandbox.WorkspacePath, ReadOnly: agents.Phase(run.Phase).TextOnly()}
	spec.Network = req.Settings.Network
	creds, err := sandbox.ParseCredentialMounts(req.Settings.CredentialMounts)
	if err != nil {
		return spec, nil, fmt.Errorf("AGENT_CREDENTIAL_MOUNTS: %w", err)
	}
	spec.Credentials = creds[req.Adapter.ID()]
	return spec, creds, handOver(wt.Dir, spec.UID, spec.GID)
}

// session decides the run's named session (resume, fresh, or none and
// why) and records its llm_session before the invocation.
func (r *Runner) session(ctx context.Context, req Request, spec sandbox.Spec, creds sandbox.CredentialMounts) (*agents.SessionRef, *state.LLMSession, error) {
	mb, run, adapter := &req.Mailbox, req.Run, req.Adapter
	late, err := r.Detection(ctx)
	if err != nil {
		return nil, nil, err
	}
	decision, err := SessionResolver{History: r.Store, Store: r.Sessions}.Resolve(SessionInput{
		Mailbox: *mb, RunID: run.ID, Enabled: req.Settings.SessionResume,
		Adapter: adapter.Capabilities(), AdapterID: adapter.ID(), Installation: r.installation(adapter.ID()),
		Runner: r.Sandbox.Name(), Credentials: creds,
	})
	if err != nil {
		return nil, nil, err
	}
	ls := &state.LLMSession{ID: uuid.NewString(), RunID: run.ID, MailboxID: mb.ID, AdapterID: adapter.ID(),
		Provider: run.Provider, Model: run.Model, Outcome: "running", CreatedAt: r.Now()}
	if ref := decision.Ref; ref != nil {
		if _, err := r.Sessions.Ensure(*mb, adapter.ID(), spec.UID, spec.GID); err != nil {
			return nil, nil, err
		}
		ls.SessionName = &ref.Name
		if id := ref.ResumeID; id != "" {
			ls.ResumeOf = &id
		}
	} else {
		if late != "" && r.installation(adapter.ID()) == nil {
			decision.Why = late
		}
		run.NoSession = decision.Why
		r.Log.Info("no named session", "run", run.ID, "why", decision.Why)
	}
	if err := r.Store.Update(ctx, func(tx *state.Tx) error { return tx.PutLLMSession(*ls) }); err != nil {
		return nil, nil, fmt.Errorf("record llm session: %w", err)
	}
	return decision.Ref, ls, nil
}

// callAgent runs the adapter, sealed behind the model gateway when it can
// be, with the configuration its CLI needs in its home written into home
// (Configure),
// and records what it said and spent into the run and ls, with every
// secret of the run hidden (the gateway session's token is one more).
func (r *Runner) callAgent(ctx context.Context, rq Request, req agents.Request, ls *state.LLMSession, home string) (*agents.Result, error) {
	mb, run, adapter := &rq.Mailbox, rq.Run, rq.Adapter
	redactRun := r.redact
	gw, err := r.Seal(run.ID, rq.Settings, adapter, &req.Sandbox)
	if err == nil {
		err = r.Configure(home, adapter, &req.Sandbox)
	}
	if err != nil {
		if gw != nil {
			r.Unseal(gw, run)
		}
		ls.Outcome = string(agents.OutcomeFailed)
		return nil, err
	}
	if gw != nil {
		defer r.Unseal(gw, run) // on every way out; closing twice is harmless
		if rq.Live != nil {
			rq.Live.AddSecrets(gw.Token())
		}
		redactRun = func(text string) string { return redact.Secrets(r.redact(text), []string{gw.Token()}) }
		if err := MeterBudget(rq.Settings, gw); err != nil {
			ls.Outcome = string(agents.OutcomeFailed)
			return nil, err
		}
	}
	defer r.keepSteps(mb, run, adapter, ls, redactRun) // the run's steps of its session, once the CLI has ended
	req.Provider, req.Model, req.Runner = run.Provider, run.Model, r.Sandbox
	req.Timeout = rq.Settings.Timeout
	watched, stop := r.watchStall(ctx, rq.Settings.StallTimeout, rq.Live, run, adapter, gw)
	res, err := adapter.Run(watched, req)
	stall := stop()
	if gw != nil {
		r.Unseal(gw, run) // the container is gone: the token dies now, not after the push
	}
	if stall != nil && ctx.Err() == nil { // stopped by the watchdog, not on purpose
		return stalled(run, ls, res, stall, req.Session != nil, func(res *agents.Result) string { return redactRun(attemptsLog(res, adapter)) })
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
	res.Text = Neutralise(redactRun(res.Text), urlHost(mb.IssueURL))
	run.Result, run.Log = res.Text, redactRun(attemptsLog(res, adapter))
	return res, nil
}

// MeterBudget hands the issue's token budget to the run's gateway session,
// so the budget holds while the run goes: a model request past it is
// refused with an answer the CLI shows, and the run ends "budget reached"
// (the next step then pauses the issue, as before a run). s are the
// project's settings (Settings.TokenBudget, Settings.Spent).
func MeterBudget(s Settings, gw *gateway.Session) error {
	if s.TokenBudget == 0 {
		return nil
	}
	spent, err := s.Spent()
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	gw.SetBudget(gateway.Budget{Limit: s.TokenBudget, Spent: spent})
	return nil
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

// installation is the detected CLI of an adapter on the configured runner.
func (r *Runner) installation(adapterID string) *state.AgentInstallation {
	all, _ := r.Store.Installations()
	for i := range all {
		a := &all[i]
		if a.AdapterID == adapterID && a.Runner == r.Sandbox.Name() && (a.Runner == "host" || a.Image == r.Spec.Image) {
			return a
		}
	}
	return nil
}

func attemptsLog(res *agents.Result, adapter agents.Adapter) string {
	var b strings.Builder
	for i, a := range res.Attempts {
		fmt.Fprintf(&b, "--- attempt %d (%s): %s, exit %d, %s\n", i+1, a.Mode, a.Outcome, a.ExitCode, a.Duration.Round(time.Millisecond))
		if a.Fallback != "" {
			fmt.Fprintf(&b, "resume failed (%s): starting fresh under the same name\n", a.Fallback)
		}
		b.WriteString(readable(adapter, a.Stdout))
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

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
