package outcomes

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/state"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

const mbID = "gitea/alice/demo/issue/7"

func at(d time.Duration) time.Time { return t0.Add(d) }

func dur(d time.Duration) *time.Duration { return &d }

// mailbox is issue 7, assigned at t0, planned 10 minutes in, its merge
// request opened at 2h31m, in review.
func mailbox() state.Mailbox {
	return state.Mailbox{
		ID: mbID, Forge: "gitea", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 7, Flow: "task",
		Status: "in_review", MergeRequestIID: 12, CreatedAt: t0, UpdatedAt: at(6*time.Hour + 50*time.Minute), StatusSince: at(6 * time.Hour),
		PlannedAt: at(10 * time.Minute), MergeRequestAt: at(151 * time.Minute),
	}
}

// run is a run of mailbox 7 of phase, created at c and finished 10 minutes
// later.
func run(id, phase, trigger string, c time.Duration, st state.RunStatus) state.Run {
	return state.Run{ID: id, MailboxID: mbID, Phase: phase, Trigger: trigger, AdapterID: "claude-code", Model: "opus",
		Status: st, CreatedAt: at(c), StartedAt: at(c + time.Second), FinishedAt: at(c + 10*time.Minute)}
}

func session(id, runID string, in, out int64, usd float64) state.LLMSession {
	return state.LLMSession{ID: id, RunID: runID, MailboxID: mbID, AdapterID: "claude-code", Model: "opus",
		InputTokens: in, OutputTokens: out, CostUSD: usd, CreatedAt: t0}
}

// history is the runs of an issue that went through analysis, development,
// two CI rounds (the first failed once and was retried, on Codex), a
// review round and two conflict checks (the first found nothing to do),
// with their sessions: CLI-reported tokens, but the development run's,
// which the gateway counted.
func history() ([]state.Run, []state.LLMSession) {
	dev := run("r2", phaseDevelopment, "validate", 2*time.Hour, state.RunSucceeded)
	dev.Pushed, dev.Gateway = true, &state.RunGateway{Requests: 4, InputTokens: 5000, OutputTokens: 500}
	retry := run("r4", phaseCIFix, "r3/retry", 3*time.Hour+20*time.Minute, state.RunSucceeded)
	retry.AdapterID, retry.Model, retry.Pushed = "codex", "gpt-5", true
	nothing := run("r7", phaseConflict, "d5/conflict/c1", 5*time.Hour, state.RunSucceeded)
	nothing.NothingToDo = true
	runs := []state.Run{
		run("r1", phaseAnalysis, "d1", time.Minute, state.RunSucceeded),
		dev,
		run("r3", phaseCIFix, "r2/ci/a1", 3*time.Hour, state.RunFailed),
		retry,
		run("r5", phaseCIFix, "d3/ci/a2", 4*time.Hour, state.RunSucceeded),
		run("r6", phaseReviewFix, "d4", 4*time.Hour+30*time.Minute, state.RunSucceeded),
		nothing,
		run("r8", phaseConflict, "d6/conflict/c2", 5*time.Hour+30*time.Minute, state.RunSucceeded),
	}
	sessions := []state.LLMSession{
		session("s1", "r1", 1000, 200, 0.5),
		session("s2", "r2", 4000, 400, 1), // the gateway's count wins
		session("s3", "r3", 100, 10, 0),   // unpriced
		session("s4", "r4", 300, 30, 0.25),
		session("s5", "r5", 200, 20, 0.25),
		session("s6", "r6", 50, 5, 0.1),
		// r7 invoked no agent: no session.
		session("s8", "r8", 10, 1, 0.01),
	}
	sessions[3].AdapterID, sessions[3].Model = "codex", "gpt-5"
	return runs, sessions
}

// TestDeriveEnds plays each end on the same history.
func TestDeriveEnds(t *testing.T) {
	now := at(7 * time.Hour)
	const week = 7 * 24 * time.Hour
	for _, tc := range []struct {
		name     string
		edit     func(*state.Mailbox)
		now      time.Time
		abandon  time.Duration
		end      End
		by       string
		finished *time.Duration
		idle     *time.Duration
	}{
		{"merged", func(m *state.Mailbox) {
			m.Status, m.End = "done", &state.MailboxEnd{How: state.EndMerged, By: "alice", At: at(24 * time.Hour)}
		}, now, week, EndMerged, "alice", dur(24 * time.Hour), nil},
		{"merged, learned by reading the merge request", func(m *state.Mailbox) {
			m.Status, m.End = "done", &state.MailboxEnd{How: state.EndMerged, At: at(25 * time.Hour)}
		}, now, week, EndMerged, "", dur(25 * time.Hour), nil},
		{"closed unmerged", func(m *state.Mailbox) {
			m.Status, m.End = "done", &state.MailboxEnd{How: state.EndClosed, By: "bob", At: at(30 * time.Hour)}
		}, now, week, EndClosed, "bob", dur(30 * time.Hour), nil},
		{"finished long ago is never abandoned", func(m *state.Mailbox) {
			m.Status, m.End = "done", &state.MailboxEnd{How: state.EndMerged, By: "alice", At: at(24 * time.Hour)}
		}, at(400 * 24 * time.Hour), week, EndMerged, "alice", dur(24 * time.Hour), nil},
		{"blocked", func(m *state.Mailbox) { m.Status = "blocked" }, now, week, EndBlocked, "", nil, dur(time.Hour)},
		{"paused", func(m *state.Mailbox) { m.Status = "paused" }, now, week, EndPaused, "", nil, dur(time.Hour)},
		{"still open", nil, now, week, EndOpen, "", nil, dur(time.Hour)},
		{"abandoned after 8 days blocked", func(m *state.Mailbox) { m.Status = "blocked" },
			at(6*time.Hour + 8*24*time.Hour), week, EndAbandoned, "", nil, dur(8 * 24 * time.Hour)},
		{"abandoned exactly at the threshold", nil, at(6*time.Hour + week), week, EndAbandoned, "", nil, dur(week)},
		{"waiting for a person, not yet abandoned", func(m *state.Mailbox) { m.Status = "waiting_validation" },
			at(6*time.Hour + week - time.Second), week, EndOpen, "", nil, dur(week - time.Second)},
		{"a run going is never abandoned", func(m *state.Mailbox) { m.ActiveRunID = "r9" },
			at(6*time.Hour + 30*24*time.Hour), week, EndOpen, "", nil, dur(30 * 24 * time.Hour)},
		{"no threshold abandons nothing", func(m *state.Mailbox) { m.Status = "paused" },
			at(6*time.Hour + 300*24*time.Hour), 0, EndPaused, "", nil, dur(300 * 24 * time.Hour)},
		{"no now: no idle time, nothing abandoned", nil, time.Time{}, week, EndOpen, "", nil, nil},
		{"delivered: type::analysis done at its plan", func(m *state.Mailbox) {
			m.Status, m.Flow, m.MergeRequestIID, m.MergeRequestAt = "done", "analysis", 0, time.Time{}
		}, now, week, EndDelivered, "", dur(6 * time.Hour), nil},
		{"done before ends were recorded", func(m *state.Mailbox) { m.Status = "done" },
			now, week, EndUnrecorded, "", dur(6 * time.Hour), nil},
		{"done before statuses were timed: its last update", func(m *state.Mailbox) { m.Status, m.StatusSince = "done", time.Time{} },
			now, week, EndUnrecorded, "", dur(6*time.Hour + 50*time.Minute), nil},
		{"in review for eight days, polled all along", func(m *state.Mailbox) { m.UpdatedAt = at(6*time.Hour + 8*24*time.Hour - time.Minute) },
			at(6*time.Hour + 8*24*time.Hour), week, EndAbandoned, "", nil, dur(8 * 24 * time.Hour)},
		{"polled, before statuses were timed: not abandoned", func(m *state.Mailbox) {
			m.StatusSince, m.UpdatedAt = time.Time{}, at(6*time.Hour+8*24*time.Hour-time.Minute)
		}, at(6*time.Hour + 8*24*time.Hour), week, EndOpen, "", nil, dur(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mb := mailbox()
			if tc.edit != nil {
				tc.edit(&mb)
			}
			runs, sessions := history()
			o := Derive(mb, runs, sessions, tc.now, tc.abandon)
			checkSane(t, o)
			if o.End != tc.end || o.By != tc.by {
				t.Errorf("end %s by %q, want %s by %q", o.End, o.By, tc.end, tc.by)
			}
			if !reflect.DeepEqual(o.Finished.After, tc.finished) || o.Finished.Reached() != (tc.finished != nil) {
				t.Errorf("finished %+v (after %v), want after %v", o.Finished, show(o.Finished.After), show(tc.finished))
			}
			if !reflect.DeepEqual(o.Idle, tc.idle) {
				t.Errorf("idle %v, want %v", show(o.Idle), show(tc.idle))
			}
			if o.Status != mb.Status {
				t.Errorf("status %q, want the mailbox's %q", o.Status, mb.Status)
			}
		})
	}
}

func show(d *time.Duration) string {
	if d == nil {
		return "not reached"
	}
	return d.String()
}

// TestDeriveFigures: the times to plan and pull request, the rounds, the
// runs, the spend by source and the agents of each phase, on the history.
func TestDeriveFigures(t *testing.T) {
	runs, sessions := history()
	o := Derive(mailbox(), runs, sessions, at(7*time.Hour), 0)
	checkSane(t, o)
	if len(o.Problems) != 0 {
		t.Errorf("problems on sound records: %q", o.Problems)
	}
	if !reflect.DeepEqual(o.Plan, Milestone{At: at(10 * time.Minute), After: dur(10 * time.Minute)}) {
		t.Errorf("plan %+v", o.Plan)
	}
	if !reflect.DeepEqual(o.PullRequest, Milestone{At: at(151 * time.Minute), After: dur(151 * time.Minute)}) {
		t.Errorf("pull request %+v", o.PullRequest)
	}
	if o.Finished.Reached() || o.Finished.After != nil {
		t.Errorf("an open issue finished: %+v", o.Finished)
	}
	if want := (Rounds{CIFix: 2, ReviewFix: 1, Conflict: 1}); o.Rounds != want {
		t.Errorf("rounds %+v, want %+v", o.Rounds, want)
	}
	if o.Runs != 8 || o.FailedRuns != 1 || o.Retries != 1 {
		t.Errorf("runs %d, failed %d, retries %d; want 8, 1, 1", o.Runs, o.FailedRuns, o.Retries)
	}
	want := Spend{InputTokens: 1000 + 5000 + 100 + 300 + 200 + 50 + 10, OutputTokens: 200 + 500 + 10 + 30 + 20 + 5 + 1,
		USD: 0.5 + 1 + 0.25 + 0.25 + 0.1 + 0.01, GatewayRuns: 1, CLIRuns: 6, UnpricedRuns: 1}
	if !sameSpend(o.Spend, want) || o.Spend.Source() != SourceMixed || o.Spend.Priced() {
		t.Errorf("spend %+v (%s, priced %v), want %+v (mixed, unpriced)", o.Spend, o.Spend.Source(), o.Spend.Priced(), want)
	}
	// The same tokens as the budget counts them (state.SpendOf).
	var budget state.Spend
	for _, r := range runs {
		var ss []state.LLMSession
		for _, s := range sessions {
			if s.RunID == r.ID {
				ss = append(ss, s)
			}
		}
		budget = budget.Add(state.SpendOf(r, ss))
	}
	if budget.Tokens != o.Spend.Tokens() || budget.Unpriced != o.Spend.UnpricedRuns {
		t.Errorf("tokens %d unpriced %d, the budget's %d and %d", o.Spend.Tokens(), o.Spend.UnpricedRuns, budget.Tokens, budget.Unpriced)
	}
	var names []string
	for _, p := range o.Phases {
		names = append(names, p.Phase)
	}
	if !slices.Equal(names, []string{phaseAnalysis, phaseDevelopment, phaseCIFix, phaseReviewFix, phaseConflict}) {
		t.Fatalf("phases %q", names)
	}
	ci := o.Phases[2]
	if ci.Runs != 3 || !slices.Equal(ci.Agents, []Agent{{"claude-code", "opus"}, {"codex", "gpt-5"}}) {
		t.Errorf("ci_fix phase %+v", ci)
	}
	if dev := o.Phases[1]; dev.Spend.Source() != SourceGateway || dev.Spend.Tokens() != 5500 || dev.Spend.USD != 1 {
		t.Errorf("development spend %+v (%s): the gateway's tokens, the CLI's dollars", dev.Spend, dev.Spend.Source())
	}
	if an := o.Phases[0]; an.Spend.Source() != SourceCLI || an.Spend.Tokens() != 1200 {
		t.Errorf("analysis spend %+v (%s)", an.Spend, an.Spend.Source())
	}
	if o.LastActivity != at(6*time.Hour) {
		t.Errorf("last activity %v", o.LastActivity)
	}
}

func sameSpend(a, b Spend) bool {
	usd := math.Abs(a.USD-b.USD) < 1e-9
	a.USD, b.USD = 0, 0
	return usd && a == b
}

// TestDeriveSources: a run's tokens are the gateway's when it counted
// any, else its CLI's; a run that used none counts in neither.
func TestDeriveSources(t *testing.T) {
	gw := func(in, out int64) *state.RunGateway {
		return &state.RunGateway{Requests: 1, InputTokens: in, OutputTokens: out}
	}
	for _, tc := range []struct {
		name     string
		gateway  *state.RunGateway
		sessions []state.LLMSession
		want     Spend
		source   Source
	}{
		{"the CLI's, not sealed", nil, []state.LLMSession{session("a", "r1", 10, 2, 0.1), session("b", "r1", 5, 1, 0.2)},
			Spend{InputTokens: 15, OutputTokens: 3, USD: 0.3, CLIRuns: 1}, SourceCLI},
		{"the gateway's, sealed", gw(100, 9), []state.LLMSession{session("a", "r1", 10, 2, 0.1)},
			Spend{InputTokens: 100, OutputTokens: 9, USD: 0.1, GatewayRuns: 1}, SourceGateway},
		{"the gateway's, its CLI reported nothing: unpriced", gw(100, 9), nil,
			Spend{InputTokens: 100, OutputTokens: 9, GatewayRuns: 1, UnpricedRuns: 1}, SourceGateway},
		{"a gateway that counted nothing: the CLI's", gw(0, 0), []state.LLMSession{session("a", "r1", 10, 2, 0)},
			Spend{InputTokens: 10, OutputTokens: 2, CLIRuns: 1, UnpricedRuns: 1}, SourceCLI},
		{"no tokens anywhere", nil, []state.LLMSession{session("a", "r1", 0, 0, 0)}, Spend{}, SourceNone},
		{"a run without sessions", nil, nil, Spend{}, SourceNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run("r1", phaseDevelopment, "d1", time.Hour, state.RunSucceeded)
			r.Gateway = tc.gateway
			o := Derive(mailbox(), []state.Run{r}, tc.sessions, at(7*time.Hour), 0)
			checkSane(t, o)
			if !sameSpend(o.Spend, tc.want) || o.Spend.Source() != tc.source {
				t.Errorf("spend %+v (%s), want %+v (%s)", o.Spend, o.Spend.Source(), tc.want, tc.source)
			}
			if len(o.Phases) != 1 || !sameSpend(o.Phases[0].Spend, tc.want) {
				t.Errorf("phases %+v", o.Phases)
			}
		})
	}
}

// TestDeriveOlderRecords: a mailbox written before it kept its plan's and
// merge request's times gets them from its runs, marked derived.
func TestDeriveOlderRecords(t *testing.T) {
	runs, sessions := history()
	mb := mailbox()
	mb.PlannedAt, mb.MergeRequestAt = time.Time{}, time.Time{}
	o := Derive(mb, runs, sessions, at(7*time.Hour), 0)
	checkSane(t, o)
	if !reflect.DeepEqual(o.Plan, Milestone{At: at(11 * time.Minute), After: dur(11 * time.Minute), Derived: true}) {
		t.Errorf("plan %+v: the first analysis run's end", o.Plan)
	}
	if !reflect.DeepEqual(o.PullRequest, Milestone{At: at(130 * time.Minute), After: dur(130 * time.Minute), Derived: true}) {
		t.Errorf("pull request %+v: the first pushed run's end", o.PullRequest)
	}

	// Still in analysis: no plan yet, whatever the analysis runs did.
	mb.Status, mb.MergeRequestIID = "functional_analysis", 0
	o = Derive(mb, runs[:1], sessions, at(7*time.Hour), 0)
	if o.Plan.Reached() || o.Plan.After != nil || o.PullRequest.Reached() {
		t.Errorf("in analysis: plan %+v, pull request %+v", o.Plan, o.PullRequest)
	}
	// A question has no plan.
	mb.Status, mb.Flow = "done", "question"
	o = Derive(mb, []state.Run{run("r1", phaseAnswer, "d1", time.Minute, state.RunSucceeded)}, nil, at(7*time.Hour), 0)
	if o.Plan.Reached() || o.End != EndDelivered {
		t.Errorf("a question: plan %+v, end %s", o.Plan, o.End)
	}
}

// TestDeriveBadInput: whatever the records hold, no panic, no negative
// duration, no NaN, and Problems names what was left out.
func TestDeriveBadInput(t *testing.T) {
	runs, sessions := history()
	foreign := run("x1", phaseDevelopment, "d", time.Hour, state.RunSucceeded)
	foreign.MailboxID = "gitea/alice/demo/issue/8"
	weird := session("s9", "r1", -50, -5, math.NaN())
	weird2 := session("s10", "r2", 1, 1, math.Inf(1))
	neg := run("r1", phaseAnalysis, "d1", time.Minute, state.RunSucceeded)
	neg.Gateway = &state.RunGateway{InputTokens: -1000}
	for _, tc := range []struct {
		name     string
		mb       func() state.Mailbox
		runs     []state.Run
		sessions []state.LLMSession
		now      time.Time
		problem  string // a word the problems must hold ("" for none)
	}{
		{"no runs", mailbox, nil, nil, at(7 * time.Hour), ""},
		{"nothing at all", func() state.Mailbox { return state.Mailbox{} }, nil, nil, time.Time{}, "no creation time"},
		{"zero times everywhere", func() state.Mailbox {
			m := mailbox()
			m.CreatedAt, m.UpdatedAt, m.PlannedAt, m.MergeRequestAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			return m
		},
			[]state.Run{{ID: "r1", MailboxID: mbID, Phase: phaseDevelopment, Pushed: true}}, []state.LLMSession{{ID: "s1", RunID: "r1", InputTokens: 3}}, at(time.Hour), "no creation time"},
		{"a run of another mailbox", mailbox, append(slices.Clone(runs), foreign), sessions, at(7 * time.Hour), "belongs to mailbox"},
		{"a run given twice", mailbox, append(slices.Clone(runs), runs[0]), sessions, at(7 * time.Hour), "given twice"},
		{"a session of no run given", mailbox, runs, append(slices.Clone(sessions), session("s0", "nope", 1, 1, 1)), at(7 * time.Hour), "not one of the mailbox's runs"},
		{"negative tokens and a NaN cost", mailbox, runs, append(slices.Clone(sessions), weird, weird2), at(7 * time.Hour), "left out"},
		{"tokens at the int64 limit", mailbox, runs, append(slices.Clone(sessions), session("s11", "r1", math.MaxInt64, math.MaxInt64, math.MaxFloat64), session("s12", "r1", 1, 1, math.MaxFloat64)), at(7 * time.Hour), ""},
		{"a gateway counting below zero", mailbox, []state.Run{neg}, sessions[:1], at(7 * time.Hour), "gateway input"},
		{"milestones before the assignment", func() state.Mailbox { m := mailbox(); m.CreatedAt = at(48 * time.Hour); return m }, runs, sessions, at(72 * time.Hour), "before the assignment"},
		{"now before the last activity", mailbox, runs, sessions, t0, "comes after now"},
		{"a done mailbox with an unknown end", func() state.Mailbox {
			m := mailbox()
			m.Status, m.End = "done", &state.MailboxEnd{How: "exploded"}
			return m
		}, runs, sessions, at(7 * time.Hour), "neither"},
		{"a merge request and no pushed run", func() state.Mailbox { m := mailbox(); m.MergeRequestAt = time.Time{}; return m }, runs[:1], sessions, at(7 * time.Hour), "no run pushed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Derive(tc.mb(), tc.runs, tc.sessions, tc.now, 24*time.Hour)
			checkSane(t, o)
			all := strings.Join(o.Problems, "\n")
			if tc.problem == "" && all != "" || !strings.Contains(all, tc.problem) {
				t.Errorf("problems %q, want one about %q", o.Problems, tc.problem)
			}
		})
	}
}

// TestDeriveOrderFree: runs and sessions in any order give the same
// outcome.
func TestDeriveOrderFree(t *testing.T) {
	runs, sessions := history()
	want := Derive(mailbox(), runs, sessions, at(7*time.Hour), 0)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rs, ss := slices.Clone(runs), slices.Clone(sessions)
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		rng.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		got := Derive(mailbox(), rs, ss, at(7*time.Hour), 0)
		// Dollars summed in another order may differ in the last bit.
		if !sameSpend(got.Spend, want.Spend) {
			t.Fatalf("spend %+v, in order %+v", got.Spend, want.Spend)
		}
		got.Spend = want.Spend
		for i := range got.Phases {
			if i < len(want.Phases) && sameSpend(got.Phases[i].Spend, want.Phases[i].Spend) {
				got.Phases[i].Spend = want.Phases[i].Spend
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled:\n%+v\nin order:\n%+v", got, want)
		}
	}
}

// checkSane: no negative duration, no NaN or infinite dollars, no negative
// count, and a duration only for a milestone reached.
func checkSane(t *testing.T, o Outcome) {
	t.Helper()
	for name, m := range map[string]Milestone{"plan": o.Plan, "pull request": o.PullRequest, "finished": o.Finished} {
		if m.After != nil && (*m.After < 0 || !m.Reached()) {
			t.Errorf("%s: %+v (after %v)", name, m, *m.After)
		}
	}
	if o.Idle != nil && *o.Idle < 0 {
		t.Errorf("idle %v", *o.Idle)
	}
	spends := []Spend{o.Spend}
	for _, p := range o.Phases {
		spends = append(spends, p.Spend)
	}
	for _, s := range spends {
		if math.IsNaN(s.USD) || math.IsInf(s.USD, 0) || s.USD < 0 || s.InputTokens < 0 || s.OutputTokens < 0 {
			t.Errorf("spend %+v", s)
		}
	}
	if o.Runs < 0 || o.FailedRuns < 0 || o.Retries < 0 || o.Rounds.CIFix < 0 {
		t.Errorf("counts %+v", o)
	}
}

// TestNamesMatch: the names Derive reads are those the records are
// written with.
func TestNamesMatch(t *testing.T) {
	var phases []string
	for _, p := range agents.Phases() {
		phases = append(phases, string(p))
	}
	if !slices.Equal(phases, phaseOrder) {
		t.Errorf("phases %q, agents' %q", phaseOrder, phases)
	}
	for mine, theirs := range map[string]lifecycle.Status{
		statusWaitingValidation: lifecycle.StatusWaitingValidation, statusDone: lifecycle.StatusDone,
		statusBlocked: lifecycle.StatusBlocked, statusPaused: lifecycle.StatusPaused,
	} {
		if mine != string(theirs) {
			t.Errorf("status %q, lifecycle's %q", mine, theirs)
		}
	}
	if flowAnalysis != string(lifecycle.FlowAnalysis) || flowQuestion != string(lifecycle.FlowQuestion) {
		t.Errorf("flows %q %q", flowAnalysis, flowQuestion)
	}
}

// TestOutcomeJSON: the JSON of an outcome says where its tokens were
// counted, leaves out what was not reached, and reads back.
func TestOutcomeJSON(t *testing.T) {
	runs, sessions := history()
	mb := mailbox()
	mb.PlannedAt = time.Time{}
	mb.Status = "functional_analysis"
	o := Derive(mb, runs[:1], sessions, at(7*time.Hour), 0)
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	if !strings.Contains(s, `"source":"cli"`) || !strings.Contains(s, `"plan":{}`) || strings.Contains(s, "NaN") {
		t.Errorf("json %s", s)
	}
	var back Outcome
	if err := json.Unmarshal(raw, &back); err != nil || !sameSpend(back.Spend, o.Spend) || back.End != o.End || back.Plan.Reached() {
		t.Errorf("read back %+v, %v", back, err)
	}
}
