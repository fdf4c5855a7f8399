package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// handleEvent applies one recorded event to its mailbox and returns what it
// did, for the event record. An error means it could not (the forge or the
// store failed) and may be tried again: every forge effect is idempotent
// (managed comments by key, labels by name), and a run is started last, so
// handling an event again changes nothing twice.
func (e *Engine) handleEvent(ctx context.Context, key string, ev *forges.Event) (string, error) {
	if e.beforeEvent != nil {
		e.beforeEvent(ev)
	}
	if err := e.known(ev.Target.Project.Forge); err != nil {
		return "", err
	}
	mb, err := e.mailbox(key)
	if err != nil {
		return "", fmt.Errorf("read mailbox %s: %w", key, err)
	}
	in := lifecycle.Classify(ev, mb, e.meOn(ev.Target.Project.Forge))
	log := e.log.With("mailbox", key, "delivery", ev.DeliveryID, "event", ev.Type, "intent", in.Kind)
	if in.Kind == lifecycle.IntentIgnore {
		log.Debug("event ignored", "reason", in.Reason)
		return "ignored: " + in.Reason, nil
	}
	if lifecycle.Steers(in.Kind) {
		perm, err := e.on(ev.Target.Project.Forge).Permission(ctx, ev.Target.Project, ev.Actor)
		if err != nil {
			return "", fmt.Errorf("permission of %s: %w", ev.Actor, err)
		}
		if perm < forges.PermissionWrite {
			log.Info("steering refused: no write access", "actor", ev.Actor, "permission", perm)
			return "ignored: " + ev.Actor + " has no write access", nil
		}
		ok, why, err := e.confirm(ctx, ev, in)
		if err != nil {
			return "", fmt.Errorf("read back %s: %w", in.Kind, err)
		}
		if !ok {
			log.Warn("steering refused: the forge does not confirm the event", "actor", ev.Actor, "why", why)
			return "ignored: " + why, nil
		}
	}
	if err := e.act(ctx, mb, ev, in); err != nil {
		return "", fmt.Errorf("%s: %w", in.Kind, err)
	}
	log.Info("event handled")
	return string(in.Kind), nil
}

// reviewFeedback adds to what the event said the line comments the bot has
// not handed to a run yet (some forges' review webhooks carry none). Comment
// ids grow on every forge, so the highest one seen marks the place; no clock
// of the bot's is compared with the forge's.
func (e *Engine) reviewFeedback(ctx context.Context, mb *state.Mailbox, said string) (string, error) {
	comments, err := e.on(mb.Forge).ReviewComments(ctx, projectOf(mb), mb.MergeRequestIID, time.Time{})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(said))
	seen := mb.ReviewSeenID
	for _, c := range comments {
		if c.ID <= mb.ReviewSeenID {
			continue
		}
		seen = max(seen, c.ID)
		if strings.EqualFold(c.Author, e.meOn(mb.Forge)) || strings.Contains(said, strings.TrimSpace(c.Body)) {
			continue
		}
		b.WriteString("\n- ")
		if c.Path != "" {
			fmt.Fprintf(&b, "%s:%d: ", c.Path, c.Line)
		}
		b.WriteString(strings.TrimSpace(c.Body))
	}
	mb.ReviewSeenID = seen
	return b.String(), nil
}

// checkMergeRequest reads the bot's merge request and moves the mailbox on:
// red CI starts a ci_fix run, conflicts a conflict_resolution run, green CI
// moves it to in_review (lifecycle.DecideMergeRequest). The same handling
// serves webhooks, the poller and the end of a run, through the dispatch
// table's row for a CI intent.
func (e *Engine) checkMergeRequest(ctx context.Context, h handling) error {
	mb, trigger := h.mb, h.trigger
	p := projectOf(mb)
	mr, err := e.on(mb.Forge).MergeRequest(ctx, p, mb.MergeRequestIID)
	if err != nil {
		return err
	}
	switch mr.State { // read, not told: the forge names who merged, nobody who closed
	case forges.MergeRequestMerged:
		return e.finish(ctx, mb, errMerged, lifecycle.StepFinished, mr.MergedBy)
	case forges.MergeRequestClosed:
		return e.finish(ctx, mb, errClosed, lifecycle.StepFinished, "")
	}
	if mr.HeadSHA != "" && mr.HeadSHA != mb.HeadSHA {
		mb.HeadSHA = mr.HeadSHA
	}
	conflict, err := e.confirmConflict(ctx, mb, mr)
	if err != nil {
		return err
	}
	var ci forges.CIState
	if !conflict { // a conflict comes first: CI of a head that cannot merge waits
		st, err := e.on(mb.Forge).CIStatus(ctx, p, mr.HeadSHA)
		if err != nil {
			return err
		}
		ci = st.State
	}
	next, a := lifecycle.DecideMergeRequest(*mb, *mr, conflict, ci, e.rulesOf(mb), trigger)
	return e.apply(ctx, mb, next, a)
}

// confirmConflict tells whether the merge request really has a conflict.
// Forgejo and Gitea answer mergeable false while they re-check a pull request
// in the background after every push, so the forge's word alone would start
// a conflict_resolution run that pushes, which makes the forge check again:
// a loop. A conflict is believed only when git merge-tree, on the bot's own
// clone, finds one too. A clean merge resets the conflict counter.
func (e *Engine) confirmConflict(ctx context.Context, mb *state.Mailbox, mr *forges.MergeRequest) (bool, error) {
	if mr.Mergeable != forges.MergeableConflict {
		if mr.Mergeable == forges.MergeableClean {
			mb.ConflictFixAttempts = 0
		}
		return false, nil
	}
	p := projectOf(mb)
	url, err := e.on(mb.Forge).CloneURL(ctx, p)
	if err != nil {
		return false, err
	}
	user, pass, err := e.on(mb.Forge).GitCredentials(ctx, p)
	if err != nil {
		return false, fmt.Errorf("git credentials: %w", err)
	}
	if _, err := e.cfg.Repos.Fetch(ctx, p, botrun.Remote{URL: url, Username: user, Password: pass}); err != nil {
		return false, err
	}
	files, err := e.cfg.Repos.Conflicts(ctx, p, mr.TargetBranch, mr.HeadSHA)
	if err != nil {
		// A head the clone cannot reach (a fork's branch): believe the
		// forge; CONFLICT_FIX_MAX_ATTEMPTS still bounds the runs.
		e.log.Warn("check for conflicts with git", "mailbox", mb.ID, "merge_request", mr.Number, "err", err)
		return true, nil
	}
	if len(files) == 0 {
		e.log.Info("the forge reports a conflict that git does not find: still checking", "mailbox", mb.ID, "head", mr.HeadSHA)
		mb.ConflictFixAttempts = 0
		return false, nil
	}
	return true, nil
}

// finish closes the mailbox: the run in progress stopped, session state
// removed (it stays when AGENT_SESSION_RESUME is off), how it ended recorded
// (state.MailboxEnd: merged or closed, by whom when an event named them),
// then step s (to done). The removal comes first so that a failure or a
// crash in between is retried rather than leaving state behind a mailbox
// that is already done.
func (e *Engine) finish(ctx context.Context, mb *state.Mailbox, why error, s lifecycle.Step, by string) error {
	if mb.ActiveRunID != "" {
		stopCtx, cancel := context.WithTimeout(ctx, stopRunTimeout)
		err := e.stopRun(stopCtx, mb.ActiveRunID, why)
		cancel()
		if err != nil {
			return err
		}
		mb.ActiveRunID = ""
		if err := e.updateStatusComment(ctx, mb); err != nil {
			e.log.Warn("status comment", "mailbox", mb.ID, "err", err)
		}
	}
	if AgentSessionResume.Get(e.settings, scopeOf(mb)) {
		if err := e.cfg.Sessions.RemoveMailbox(*mb); err != nil {
			return err
		}
	}
	how := state.EndClosed
	if errors.Is(why, errMerged) {
		how = state.EndMerged
	}
	mb.End = &state.MailboxEnd{How: how, By: by, At: e.now()}
	return e.step(ctx, mb, s, "", "", "")
}

// Why a mailbox is finished, as the cause of a run it stops.
var (
	errMerged = errors.New("the merge request was merged")
	errClosed = errors.New("the issue or merge request was closed")
)

// stopRunTimeout bounds the wait for a stopped run to end (its container's
// grace period and removal).
const stopRunTimeout = 2 * time.Minute

// rulesOf reads the rules of mb's project.
func (e *Engine) rulesOf(mb *state.Mailbox) lifecycle.Rules {
	sc := scopeOf(mb)
	return lifecycle.Rules{
		LLMRetries: LLMMaxRetries.Get(e.settings, sc), CIFix: CIFixMaxAttempts.Get(e.settings, sc),
		CIHardCap: CIFixHardCap.Get(e.settings, sc), ConflictFix: ConflictFixMaxAttempts.Get(e.settings, sc),
		NeedValidation: RequirePlanValidation.Get(e.settings, sc), PublicURL: e.cfg.PublicURL,
	}
}

// apply carries out a decision's actions on mb (see lifecycle.Actions for their
// order), which becomes next. A failure stops there: nothing is saved, and
// the event or the run's end is handled again from the saved mailbox (every
// action is idempotent: comments are found by their key, labels and the
// merge request by their name).
func (e *Engine) apply(ctx context.Context, mb *state.Mailbox, next state.Mailbox, a lifecycle.Actions) error {
	*mb = next
	if a.Note != "" {
		e.log.Info(a.Note, "mailbox", mb.ID, "status", mb.Status, "active_run", mb.ActiveRunID)
	}
	if err := e.prepare(ctx, mb, a); err != nil {
		return err
	}
	if a.Release {
		if err := e.release(ctx, mb); err != nil {
			return err
		}
	}
	if a.Resume != nil {
		return e.resume(ctx, mb, *a.Resume)
	}
	if a.Step == "" {
		return e.save(ctx, mb)
	}
	if err := e.step(ctx, mb, a.Step, a.Phase, a.Trigger, a.Extra); err != nil {
		return err
	}
	if a.CheckMR != "" {
		return e.dispatch(ctx, handling{mb: mb, in: ciIntent, trigger: a.CheckMR})
	}
	return nil
}

// prepare carries out the actions that come before a decision's step: the
// validation, the description section, the merge request, the comment, the
// label.
func (e *Engine) prepare(ctx context.Context, mb *state.Mailbox, a lifecycle.Actions) error {
	if a.RecordBy != "" {
		if err := e.recordValidation(ctx, mb, a.RecordBy); err != nil {
			return err
		}
	}
	if a.Section != "" {
		if _, err := forges.EnsureSection(ctx, e.on(mb.Forge), projectOf(mb), mb.IID, a.Section); err != nil {
			return err
		}
	}
	if a.EnsureMR {
		if err := e.ensureMergeRequest(ctx, mb, a.MRResult); err != nil {
			return err
		}
	}
	if a.Say != nil {
		if err := e.comment(ctx, mb, a.Say.Kind, a.Say.Cause, a.Say.Text); err != nil {
			return err
		}
	}
	if a.BindPlan {
		if err := e.recordValidation(ctx, mb, "(given while the plan was revised)"); err != nil {
			return err
		}
	}
	if a.Unlabel != "" {
		if err := e.on(mb.Forge).RemoveLabel(ctx, issueTarget(mb), a.Unlabel.Label()); err != nil {
			return fmt.Errorf("remove %s: %w", a.Unlabel.Label(), err)
		}
	}
	return nil
}

// step moves mb along the declared transition s (lifecycle/table.go): to its
// To status and, when its row runs a phase, a run of it (phase, when the row
// says the failed one). The budget may hold the run back (holdBack): then
// the step is dropped, or the mailbox pauses instead. A step the table does
// not declare from mb's status is a bug and fails, so the table and the
// engine cannot part ways unseen.
func (e *Engine) step(ctx context.Context, mb *state.Mailbox, s lifecycle.Step, phase agents.Phase, trigger, extra string) error {
	t, ok := lifecycle.TransitionOf(s)
	if !ok {
		return fmt.Errorf("lifecycle: no step %q in the table", s)
	}
	if s.PostsPlan() && mb.PlannedAt.IsZero() {
		mb.PlannedAt = e.now() // the first plan, whatever follows it (outcomes)
	}
	run := t.Run
	if run == lifecycle.PhaseFailed {
		run = phase
	}
	if run == "" {
		return e.move(ctx, mb, t, "", trigger, extra)
	}
	hold, err := e.holdBack(mb, s, run, trigger, extra)
	switch {
	case err != nil:
		return err
	case hold.dropped:
		e.log.Info("run held back: the issue is paused at its budget", "mailbox", mb.ID, "step", s, "phase", run)
		return e.save(ctx, mb)
	case hold.pause != "":
		if err := e.comment(ctx, mb, lifecycle.KindBudgetPaused, strconv.Itoa(hold.limits.Steps), lifecycle.TextBudgetPaused(run, hold.spent, hold.limits)); err != nil {
			return err
		}
		pause, _ := lifecycle.TransitionOf(hold.pause)
		return e.move(ctx, mb, pause, "", "", "")
	}
	return e.move(ctx, mb, t, run, trigger, extra)
}

// move takes row t from mb's status: to its To status, and a run of phase
// run when set.
func (e *Engine) move(ctx context.Context, mb *state.Mailbox, t lifecycle.Transition, run agents.Phase, trigger, extra string) error {
	if !t.Allows(lifecycle.Status(mb.Status)) {
		return fmt.Errorf("lifecycle: step %s is not declared from status %q", t.Step, mb.Status)
	}
	if e.stepped != nil {
		e.stepped(t.Step)
	}
	switch {
	case t.To != "":
		return e.transition(ctx, mb, t.To, run, trigger, extra)
	case run != "":
		return e.startRun(ctx, mb, run, trigger, extra)
	}
	return e.save(ctx, mb)
}

// transition sets the status (label and record) and, when phase is set,
// starts a run of it. extra is phase input: the question to answer or the
// review feedback.
func (e *Engine) transition(ctx context.Context, mb *state.Mailbox, s lifecycle.Status, phase agents.Phase, trigger, extra string) error {
	if lifecycle.Status(mb.Status) != s || len(lifecycle.StatusLabels(mb.Labels)) != 1 {
		if err := e.setStatusLabel(ctx, mb, s); err != nil {
			return err
		}
	}
	if mb.Status != string(s) {
		mb.StatusSince = e.now()
	}
	mb.Status = string(s)
	if phase == "" {
		return e.save(ctx, mb)
	}
	return e.startRun(ctx, mb, phase, trigger, extra)
}

// setStatusLabel makes s the one status label of the issue, in the form
// of its forge (statusLabel). Where the forge keeps one status itself
// (exclusive scoped labels), adding it takes the old one off too; the bot
// removes the others all the same: a label of the other form, or one the
// forge does not scope.
func (e *Engine) setStatusLabel(ctx context.Context, mb *state.Mailbox, s lifecycle.Status) error {
	t := issueTarget(mb)
	want := e.statusLabel(mb.Forge, s)
	for _, l := range lifecycle.StatusLabels(mb.Labels) {
		if l != want {
			if err := e.on(mb.Forge).RemoveLabel(ctx, t, l); err != nil {
				return fmt.Errorf("remove %s: %w", l, err)
			}
		}
	}
	if !slices.Contains(mb.Labels, want) {
		if err := e.on(mb.Forge).AddLabels(ctx, t, want); err != nil {
			return fmt.Errorf("add %s: %w", want, err)
		}
	}
	labels := slices.DeleteFunc(slices.Clone(mb.Labels), func(l string) bool { _, ok := forges.StatusOf(l); return ok })
	mb.Labels = append(labels, want)
	return nil
}

// statusLabel is the label of status s on forge: in the form its
// configuration chose (Config.StatusPrefixes), "status::x" by default.
func (e *Engine) statusLabel(forge string, s lifecycle.Status) string {
	if p := e.cfg.StatusPrefixes[forge]; p != "" {
		return s.LabelWith(p)
	}
	return s.Label()
}

// comment posts (or finds) the managed comment of kind for cause.
func (e *Engine) comment(ctx context.Context, mb *state.Mailbox, kind, cause, body string) error {
	_, _, err := forges.EnsureComment(ctx, e.on(mb.Forge), issueTarget(mb), forges.Key(mb.ID, kind, cause), kind, body)
	return err // it says "ensure comment <kind>"
}
