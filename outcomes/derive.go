package outcomes

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// The phases and statuses as the records spell them (agents.Phase,
// lifecycle.Status; TestNamesMatch holds them equal).
const (
	phaseAnalysis    = "analysis"
	phaseDevelopment = "development"
	phaseCIFix       = "ci_fix"
	phaseReviewFix   = "review_fix"
	phaseConflict    = "conflict_resolution"
	phaseAnswer      = "answer"

	statusWaitingValidation = "waiting_validation"
	statusDone              = "done"
	statusBlocked           = "blocked"
	statusPaused            = "paused"

	flowAnalysis = "analysis"
	flowQuestion = "question"
)

// phaseOrder is the lifecycle's order of the phases.
var phaseOrder = []string{phaseAnalysis, phaseDevelopment, phaseCIFix, phaseReviewFix, phaseConflict, phaseAnswer}

// retrySuffix ends the trigger of a run that retries a failed run
// (lifecycle.retryOrBlock).
const retrySuffix = "/retry"

// Derive makes the outcome of mailbox mb from its runs and their llm
// sessions, at now: a mailbox not finished whose last activity is
// abandonAfter or more before now, with no run going, is EndAbandoned
// (abandonAfter <= 0, or a zero now, abandons nothing). The runs and
// sessions may come in any order; those of another mailbox or run are left
// out, and Problems says so.
func Derive(mb state.Mailbox, runs []state.Run, sessions []state.LLMSession, now time.Time, abandonAfter time.Duration) Outcome {
	d := &deriver{mb: mb}
	o := Outcome{
		MailboxID: mb.ID, Forge: mb.Forge, Owner: mb.Owner, Project: mb.Project, Kind: mb.Kind, IID: mb.IID,
		Flow: mb.Flow, Status: mb.Status,
		Trial: armOf(mb),
	}
	d.runs = d.ownRuns(runs)
	d.sessions = d.ownSessions(sessions)
	o.Runs = len(d.runs)
	o.AssignedAt = d.assignedAt()
	o.Plan = d.milestone(o.AssignedAt, d.planAt())
	o.PullRequest = d.milestone(o.AssignedAt, d.pullRequestAt())
	o.End, o.By = d.end()
	o.LastActivity = d.lastActivity()
	if !o.End.Finished() {
		o.Idle = d.idle(o.LastActivity, now)
		if o.Idle != nil && abandonAfter > 0 && *o.Idle >= abandonAfter && mb.ActiveRunID == "" {
			o.End = EndAbandoned
		}
	} else {
		o.Finished = d.milestone(o.AssignedAt, d.finishedAt())
	}
	d.count(&o)
	o.Problems = d.problems
	return o
}

// deriver holds the records of one derivation and what they lacked.
type deriver struct {
	mb       state.Mailbox
	runs     []state.Run                   // the mailbox's, each once, by creation
	sessions map[string][]state.LLMSession // by run id
	problems []string
}

func (d *deriver) problem(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

// ownRuns keeps the runs of the mailbox, each id once, ordered by when they
// were created (then started, then by id: a stable order for bad times).
func (d *deriver) ownRuns(runs []state.Run) []state.Run {
	seen := map[string]bool{}
	var out []state.Run
	for _, r := range runs {
		switch {
		case r.MailboxID != "" && d.mb.ID != "" && r.MailboxID != d.mb.ID:
			d.problem("run %s belongs to mailbox %s: left out", r.ID, r.MailboxID)
		case r.ID != "" && seen[r.ID]:
			d.problem("run %s is given twice: counted once", r.ID)
		default:
			seen[r.ID] = true
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b state.Run) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), a.StartedAt.Compare(b.StartedAt), strings.Compare(a.ID, b.ID))
	})
	return out
}

// ownSessions groups the sessions by their run, keeping those of a run
// given, each id once.
func (d *deriver) ownSessions(sessions []state.LLMSession) map[string][]state.LLMSession {
	runs := map[string]bool{}
	for _, r := range d.runs {
		runs[r.ID] = true
	}
	seen := map[string]bool{}
	out := map[string][]state.LLMSession{}
	for _, s := range sessions {
		switch {
		case !runs[s.RunID]:
			d.problem("llm session %s names run %q, which is not one of the mailbox's runs: left out", s.ID, s.RunID)
		case s.ID != "" && seen[s.ID]:
			d.problem("llm session %s is given twice: counted once", s.ID)
		default:
			seen[s.ID] = true
			out[s.RunID] = append(out[s.RunID], s)
		}
	}
	return out
}

// assignedAt is the mailbox's creation, made when the bot took the issue;
// for a record without it, the first run's creation.
func (d *deriver) assignedAt() time.Time {
	if !d.mb.CreatedAt.IsZero() {
		return d.mb.CreatedAt
	}
	for _, r := range d.runs {
		if !r.CreatedAt.IsZero() {
			d.problem("the mailbox has no creation time: the assignment is taken as its first run's creation")
			return r.CreatedAt
		}
	}
	d.problem("the mailbox has no creation time and no run has one: no time from the assignment")
	return time.Time{}
}

// moment is a time and whether it was derived rather than recorded.
type moment struct {
	at      time.Time
	derived bool
}

// milestone is the moment at, reached, with its time from the assignment.
func (d *deriver) milestone(assigned time.Time, m moment) Milestone {
	if m.at.IsZero() {
		return Milestone{}
	}
	ms := Milestone{At: m.at, Derived: m.derived}
	switch {
	case assigned.IsZero():
	case m.at.Before(assigned):
		d.problem("%s comes before the assignment %s: no time from it", m.at.Format(time.RFC3339), assigned.Format(time.RFC3339))
	default:
		after := m.at.Sub(assigned)
		ms.After = &after
	}
	return ms
}

// planAt is the first plan: recorded, or for an older record the end of the
// first analysis run that succeeded once the mailbox went past its analysis
// (a writing run, or the plan waiting for validation, or the flow done at
// its plan); early when that analysis asked questions first.
func (d *deriver) planAt() moment {
	if !d.mb.PlannedAt.IsZero() {
		return moment{at: d.mb.PlannedAt}
	}
	if d.mb.Flow == flowQuestion {
		return moment{}
	}
	past := d.mb.Status == statusWaitingValidation || d.mb.Status == statusDone && d.mb.Flow == flowAnalysis ||
		slices.ContainsFunc(d.runs, func(r state.Run) bool { return writes(r.Phase) })
	if !past {
		return moment{}
	}
	for _, r := range d.runs {
		if r.Phase == phaseAnalysis && r.Status == state.RunSucceeded && !r.FinishedAt.IsZero() {
			return moment{at: r.FinishedAt, derived: true}
		}
	}
	return moment{}
}

// pullRequestAt is when the bot found or opened its merge request:
// recorded, or for an older record the end of the first writing run that
// pushed (the bot opens the merge request at once after it).
func (d *deriver) pullRequestAt() moment {
	if !d.mb.MergeRequestAt.IsZero() {
		return moment{at: d.mb.MergeRequestAt}
	}
	if d.mb.Kind != state.KindIssue || d.mb.MergeRequestIID == 0 {
		return moment{} // a merge request mailbox answers one a person opened
	}
	for _, r := range d.runs {
		if writes(r.Phase) && (r.Pushed || r.NothingToDo) && !r.FinishedAt.IsZero() {
			return moment{at: r.FinishedAt, derived: true}
		}
	}
	d.problem("merge request !%d has no recorded time and no run pushed before it", d.mb.MergeRequestIID)
	return moment{}
}

// writes tells whether a phase writes to the issue branch.
func writes(phase string) bool {
	return phase == phaseDevelopment || phase == phaseCIFix || phase == phaseReviewFix || phase == phaseConflict
}

// end is how the mailbox ended, before the abandon threshold is applied,
// and who merged or closed it.
func (d *deriver) end() (End, string) {
	if d.mb.Status != statusDone {
		switch d.mb.Status {
		case statusBlocked:
			return EndBlocked, ""
		case statusPaused:
			return EndPaused, ""
		}
		return EndOpen, ""
	}
	if e := d.mb.End; e != nil {
		switch e.How {
		case state.EndMerged:
			return EndMerged, e.By
		case state.EndClosed:
			return EndClosed, e.By
		}
		d.problem("the mailbox ended %q, which is neither %q nor %q", e.How, state.EndMerged, state.EndClosed)
		return EndUnrecorded, e.By
	}
	if d.mb.Flow == flowAnalysis || d.mb.Flow == flowQuestion {
		return EndDelivered, ""
	}
	d.problem("the mailbox is done with no record of how (merged or closed): it predates the record")
	return EndUnrecorded, ""
}

// finishedAt is when a finished mailbox ended: recorded, or when it took
// its status (done), or for an older record its last update (a done
// mailbox takes no more events).
func (d *deriver) finishedAt() moment {
	if e := d.mb.End; e != nil && !e.At.IsZero() {
		return moment{at: e.At}
	}
	if !d.mb.StatusSince.IsZero() {
		return moment{at: d.mb.StatusSince}
	}
	if d.mb.UpdatedAt.IsZero() {
		d.problem("the mailbox is done with no time of its end")
		return moment{}
	}
	return moment{at: d.mb.UpdatedAt, derived: true}
}

// lastActivity is the latest time the work moved: the mailbox's creation,
// milestones and status change, a validation, a budget pause, its runs and
// sessions. A record written before the mailbox kept its status change has
// its last update instead, which the poller of a merge request moves too.
func (d *deriver) lastActivity() time.Time {
	var last time.Time
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	mb := d.mb
	for _, t := range []time.Time{mb.CreatedAt, mb.PlannedAt, mb.MergeRequestAt, mb.StatusSince} {
		later(t)
	}
	if mb.StatusSince.IsZero() {
		later(mb.UpdatedAt)
	}
	if mb.Validated != nil {
		later(mb.Validated.At)
	}
	if mb.Budget != nil && mb.Budget.Paused != nil {
		later(mb.Budget.Paused.At)
	}
	if mb.End != nil {
		later(mb.End.At)
	}
	for _, r := range d.runs {
		later(r.CreatedAt)
		later(r.StartedAt)
		later(r.FinishedAt)
		for _, s := range d.sessions[r.ID] {
			later(s.CreatedAt)
		}
	}
	return last
}

// idle is the time from last to now: nil when either is unknown, zero
// when now comes before last (Problems says so).
func (d *deriver) idle(last, now time.Time) *time.Duration {
	if last.IsZero() || now.IsZero() {
		return nil
	}
	idle := now.Sub(last)
	if idle < 0 {
		d.problem("the last activity %s comes after now %s: idle taken as none", last.Format(time.RFC3339), now.Format(time.RFC3339))
		idle = 0
	}
	return &idle
}

// count fills the runs' counts, rounds, spend and phases.
func (d *deriver) count(o *Outcome) {
	phases := map[string]*Phase{}
	rounds := map[string]map[string]bool{} // phase -> the reasons its runs started for
	for _, r := range d.runs {
		sp := d.spendOf(r)
		o.Spend = o.Spend.Add(sp)
		p := phases[r.Phase]
		if p == nil {
			p = &Phase{Phase: r.Phase}
			phases[r.Phase] = p
		}
		p.Runs++
		p.Spend = p.Spend.Add(sp)
		if a := d.agentOf(r); !slices.Contains(p.Agents, a) {
			p.Agents = append(p.Agents, a)
		}
		if r.Status == state.RunFailed || r.Status == state.RunTimeout {
			o.FailedRuns++
		}
		if r.Stalled {
			o.StalledRuns++
		}
		if strings.HasSuffix(r.Trigger, retrySuffix) {
			o.Retries++
			continue
		}
		if r.NothingToDo || r.PlanChanged != "" {
			continue
		}
		why := r.Trigger
		if why == "" {
			why = "run " + r.ID
		}
		if rounds[r.Phase] == nil {
			rounds[r.Phase] = map[string]bool{}
		}
		rounds[r.Phase][why] = true
	}
	o.Rounds = Rounds{CIFix: len(rounds[phaseCIFix]), ReviewFix: len(rounds[phaseReviewFix]), Conflict: len(rounds[phaseConflict])}
	o.Phases = ordered(phases)
}

// ordered lists the phases in the lifecycle's order, unknown ones last by
// name.
func ordered(phases map[string]*Phase) []Phase {
	out := make([]Phase, 0, len(phases))
	for _, p := range phases {
		out = append(out, *p)
	}
	rank := func(p string) int {
		if i := slices.Index(phaseOrder, p); i >= 0 {
			return i
		}
		return len(phaseOrder)
	}
	slices.SortFunc(out, func(a, b Phase) int {
		return cmp.Or(cmp.Compare(rank(a.Phase), rank(b.Phase)), strings.Compare(a.Phase, b.Phase))
	})
	return out
}

// agentOf is the run's adapter and model, from its sessions when the run
// does not name them.
func (d *deriver) agentOf(r state.Run) Agent {
	a := Agent{Adapter: r.AdapterID, Model: r.Model}
	for _, s := range d.sessions[r.ID] {
		if a.Adapter == "" {
			a.Adapter = s.AdapterID
		}
		if a.Model == "" {
			a.Model = s.Model
		}
	}
	return a
}

// spendOf is one run's spend (as state.SpendOf counts it): its tokens as
// the gateway counted them when it counted any, else as its CLI reported
// them; its dollars as its CLI reported them. A count below zero, or a
// dollar figure that is no finite amount at or over zero, is left out.
func (d *deriver) spendOf(r state.Run) Spend {
	var cli Spend
	for _, s := range d.sessions[r.ID] {
		cli.InputTokens = addTokens(cli.InputTokens, d.tokens(s.InputTokens, "llm session "+s.ID+" input"))
		cli.OutputTokens = addTokens(cli.OutputTokens, d.tokens(s.OutputTokens, "llm session "+s.ID+" output"))
		if c := s.CostUSD; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			d.problem("llm session %s reports a cost of %v dollars: left out", s.ID, c)
		} else {
			cli.USD = addUSD(cli.USD, c)
		}
	}
	sp := Spend{USD: cli.USD}
	if g := r.Gateway; g != nil {
		sp.InputTokens = d.tokens(g.InputTokens, "run "+r.ID+" gateway input")
		sp.OutputTokens = d.tokens(g.OutputTokens, "run "+r.ID+" gateway output")
	}
	switch {
	case sp.Tokens() > 0:
		sp.GatewayRuns = 1
	case cli.Tokens() > 0:
		sp.InputTokens, sp.OutputTokens, sp.CLIRuns = cli.InputTokens, cli.OutputTokens, 1
	}
	if sp.Tokens() > 0 && sp.USD == 0 {
		sp.UnpricedRuns = 1
	}
	return sp
}

// tokens is n, or 0 with a problem when n is below zero.
func (d *deriver) tokens(n int64, what string) int64 {
	if n < 0 {
		d.problem("%s tokens are %d: left out", what, n)
		return 0
	}
	return n
}
