package bot

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

func (h *harness) assign(iid int64) {
	h.t.Helper()
	h.openIssue(iid, "Add a greeting", "type::task")
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(iid), Labels: []string{"type::task"}})
}

func (h *harness) command(iid int64, c lifecycle.Command) {
	h.t.Helper()
	h.forge.AddLabels(context.Background(), h.issueTarget(iid), c.Label())
	h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: h.issueTarget(iid), Labels: h.forge.labels(iid)})
}

func TestRetriesThenBlockedThenRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) { s.settings = append(s.settings, projectSetting("LLM_MAX_RETRIES", "1")) })
	h.adapter.FailNext("API Error: Unable to connect to API")
	h.adapter.FailNext("API Error: Unable to connect to API")
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusBlocked)
	if mb.LLMRetries != 1 || mb.Phase != string(agents.PhaseAnalysis) {
		t.Errorf("blocked mailbox: retries %d phase %s", mb.LLMRetries, mb.Phase)
	}
	kinds := h.forge.commentKinds(h.issueTarget(7))
	if count(kinds, lifecycle.KindBlocked) != 1 {
		t.Fatalf("comments: %q", kinds)
	}
	if len(mustRuns(t, h.store, mb.ID)) != 2 {
		t.Errorf("runs: want the attempt and one retry")
	}

	// ai::retry: counters reset, one retry_resumed comment, the phase runs again.
	h.command(7, lifecycle.CommandRetry)
	mb = h.waitStatus(7, lifecycle.StatusWaitingValidation)
	if mb.LLMRetries != 0 || count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindRetryResumed) != 1 {
		t.Errorf("after retry: retries %d, comments %q", mb.LLMRetries, h.forge.commentKinds(h.issueTarget(7)))
	}
	if labels := h.forge.labels(7); len(lifecycle.StatusLabels(labels)) != 1 || labels[len(labels)-1] != lifecycle.StatusWaitingValidation.Label() {
		t.Errorf("labels %q", labels)
	}
}

func TestRetryOnceAllowsExactlyOneAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) { s.settings = append(s.settings, projectSetting("LLM_MAX_RETRIES", "2")) })
	for range 3 {
		h.adapter.FailNext("crash")
	}
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusBlocked)
	runs := len(mustRuns(t, h.store, mb.ID))
	h.adapter.FailNext("crash again")
	h.command(7, lifecycle.CommandRetryOnce)
	waitUntil(t, func() bool { return count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindBlocked) == 2 })
	mb = h.waitStatus(7, lifecycle.StatusBlocked)
	if got := len(mustRuns(t, h.store, mb.ID)); got != runs+1 {
		t.Errorf("retry_once ran %d runs, want 1", got-runs)
	}
	if slices := h.forge.labels(7); len(lifecycle.StatusLabels(slices)) != 1 {
		t.Errorf("labels %q", slices)
	}
}

func TestRetryUntilGreen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) {
		s.settings = append(s.settings, projectSetting("CI_FIX_MAX_ATTEMPTS", "1"), projectSetting("REQUIRE_PLAN_VALIDATION", "false"))
	})
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusInCI)
	red := func(mb state.Mailbox) {
		h.forge.setCI(mb.HeadSHA, forges.CIFailure)
		h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	}
	red(mb) // attempt 1 of 1
	waitUntil(t, func() bool { m := h.mailbox(7); return m.HeadSHA != mb.HeadSHA && m.ActiveRunID == "" })
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	red(mb) // over the limit: blocked
	mb = h.waitStatus(7, lifecycle.StatusBlocked)
	if count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindBlocked) != 1 {
		t.Fatalf("comments %q", h.forge.commentKinds(h.issueTarget(7)))
	}

	h.command(7, lifecycle.CommandRetryUntilGreen)
	waitUntil(t, func() bool { m := h.mailbox(7); return m.HeadSHA != mb.HeadSHA && m.ActiveRunID == "" })
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	if !mb.UntilGreen {
		t.Fatal("until_green not set")
	}
	red(mb) // beyond CI_FIX_MAX_ATTEMPTS but under the hard cap: fixes again
	waitUntil(t, func() bool { m := h.mailbox(7); return m.HeadSHA != mb.HeadSHA && m.ActiveRunID == "" })
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	h.forge.setCI(mb.HeadSHA, forges.CISuccess)
	h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	mb = h.waitStatus(7, lifecycle.StatusInReview)
	if mb.UntilGreen {
		t.Error("until_green survives green CI")
	}
}

func TestTwoEventsForOneMailboxAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	h.forge.AddLabels(context.Background(), h.issueTarget(7), lifecycle.CommandValidatePlan.Label())
	labels := h.forge.labels(7)
	var wg sync.WaitGroup
	for _, id := range []string{"d-a", "d-b", "d-c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := forges.Event{Type: forges.EventIssueLabeled, DeliveryID: id, Actor: "alice", Target: h.issueTarget(7), Labels: labels}
			ev.Target.Project = h.project
			if err := h.engine.Intake(context.Background(), &ev); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	mb := h.waitStatus(7, lifecycle.StatusInCI)
	if n := count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindPlanValidated); n != 1 {
		t.Errorf("%d plan_validated comments", n)
	}
	var dev int
	for _, r := range mustRuns(t, h.store, mb.ID) {
		if r.Phase == string(agents.PhaseDevelopment) {
			dev++
		}
	}
	if dev != 1 {
		t.Errorf("%d development runs", dev)
	}
}

// blocking makes every run wait until its context ends, as an agent does
// while the bot is killed.
// TestRestartFinishesTheWorkOnce stops the engine in the middle of a run and
// with an event recorded but not handled, then starts a new one on the same
// state: the run is done again once, the event handled once, nothing doubled.
func TestRestartFinishesTheWorkOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)

	// The engine is stopped while development runs.
	cfg := h.engine.cfg
	h.engine.Close()
	stuck := cfg
	stuck.Adapters = map[string]agents.Adapter{"fake": held{Adapter: h.adapter}}
	e1, err := New(stuck)
	if err != nil {
		t.Fatal(err)
	}
	if err := e1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.engine = e1
	h.command(7, lifecycle.CommandValidatePlan)
	waitUntil(t, func() bool {
		mb := h.mailbox(7)
		if mb.ActiveRunID == "" {
			return false
		}
		r, _, _ := h.store.RunWithSessions(mb.ActiveRunID)
		return r.Status == state.RunRunning
	})
	e1.Close()
	interrupted := h.mailbox(7).ActiveRunID
	if r, _, _ := h.store.RunWithSessions(interrupted); r.Status != state.RunRunning {
		t.Errorf("a run interrupted by a shutdown is recorded %s, want it left running for the next start", r.Status)
	}

	// An event recorded just before the crash, never handled.
	h.forge.RemoveLabel(context.Background(), h.issueTarget(7), lifecycle.StatusInDevelopment.Label())
	h.forge.AddLabels(context.Background(), h.issueTarget(7), "status::done")
	ev := forges.Event{Type: forges.EventIssueLabeled, DeliveryID: "recorded-before-crash", Actor: "alice", Target: h.issueTarget(7), Labels: h.forge.labels(7)}
	now := time.Now()
	if err := h.store.Update(context.Background(), func(tx *state.Tx) error {
		return tx.Put(eventPath(now, ev.DeliveryID), eventRecord{FormatVersion: 1, Delivery: ev.DeliveryID, ReceivedAt: now, Event: &ev})
	}); err != nil {
		t.Fatal(err)
	}

	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: testLogLevel()}))
	e2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.engine = e2
	t.Cleanup(e2.Close)
	mb := h.waitStatus(7, lifecycle.StatusInCI)
	old, _, _ := h.store.RunWithSessions(interrupted)
	if old.Status != state.RunCanceled {
		t.Errorf("interrupted run status %s", old.Status)
	}
	kinds := h.forge.commentKinds(h.issueTarget(7))
	if count(kinds, lifecycle.KindPlanValidated) != 1 || count(kinds, lifecycle.KindStatusLabelRestored) != 1 {
		t.Errorf("comments %q", kinds)
	}
	var dev int
	for _, r := range mustRuns(t, h.store, mb.ID) {
		if r.Phase == string(agents.PhaseDevelopment) && r.Status == state.RunSucceeded {
			dev++
		}
	}
	if dev != 1 || len(h.forge.mrs) != 1 {
		t.Errorf("%d successful development runs, %d merge requests", dev, len(h.forge.mrs))
	}
	// The recorded event is marked done, so a redelivery is dropped.
	if err := h.engine.Intake(context.Background(), &ev); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindStatusLabelRestored); n != 1 {
		t.Errorf("redelivery after restart acted: %d restore comments", n)
	}
}

// TestForgeDownIsRetriedNotLost: while the forge fails, the event is tried
// again (in order), and what it does happens once.
func TestForgeDownIsRetriedNotLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.forge.down("CreateComment", 2)
	h.forge.down("AddLabels", 1)
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	if n := count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindAcknowledgement); n != 1 {
		t.Errorf("%d acknowledgements", n)
	}

	// Down for longer than the retries last: the event is given up, with the
	// error in its record, and the mailbox is unchanged.
	h.forge.down("CreateComment", 100)
	h.forge.AddLabels(context.Background(), h.issueTarget(7), "status::in_ci")
	h.send(forges.Event{Type: forges.EventIssueLabeled, DeliveryID: "while-down", Actor: "alice", Target: h.issueTarget(7), Labels: h.forge.labels(7)})
	if rec := h.handled("while-down"); !strings.Contains(rec.Outcome, "504 Gateway Timeout") {
		t.Errorf("event record outcome %q", rec.Outcome)
	}
	if mb := h.mailbox(7); mb.Status != string(lifecycle.StatusWaitingValidation) {
		t.Errorf("status %s", mb.Status)
	}
}

// TestOldEventsArePruned: handled events past the retention leave the state
// branch and the redelivery filter; recent ones stay and still stop a
// redelivery.
func TestOldEventsArePruned(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.engine.Close()
	now := time.Now()
	ev := func(id string) *forges.Event {
		return &forges.Event{Type: forges.EventIgnored, Reason: "test", DeliveryID: id, Target: forges.Target{Project: h.project}}
	}
	old, recent := now.Add(-8*24*time.Hour), now.Add(-time.Hour)
	err := h.store.Update(context.Background(), func(tx *state.Tx) error {
		if err := tx.Put(eventPath(old, "old"), eventRecord{FormatVersion: 1, Delivery: "old", ReceivedAt: old, Event: ev("old"), Done: true}); err != nil {
			return err
		}
		return tx.Put(eventPath(recent, "recent"), eventRecord{FormatVersion: 1, Delivery: "recent", ReceivedAt: recent, Event: ev("recent"), Done: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(h.engine.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	paths := h.store.List(eventsDir)
	if len(paths) != 1 || paths[0] != eventPath(recent, "recent") {
		t.Fatalf("event records after the start: %q", paths)
	}
	e.events.seenMu.Lock()
	_, keptRecent := e.events.seen["recent"]
	_, keptOld := e.events.seen["old"]
	e.events.seenMu.Unlock()
	if !keptRecent || keptOld {
		t.Errorf("redelivery filter: recent %v, old %v", keptRecent, keptOld)
	}
}

// held is an adapter whose runs wait for their context, as a CLI in a
// container does until the runner stops it; each run's start is sent on
// started, when set.
type held struct {
	agents.Adapter
	started chan struct{}
}

func (a held) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	if a.started != nil {
		a.started <- struct{}{}
	}
	<-ctx.Done()
	return &agents.Result{Outcome: agents.OutcomeCanceled}, nil
}

// heldHarness is a harness whose agent runs wait until they are stopped;
// started says when each one starts.
func heldHarness(t *testing.T) (*harness, chan struct{}) {
	t.Helper()
	started := make(chan struct{}, 4)
	h := newHarness(t, func(s *setup) {
		s.wrap = func(a agents.Adapter) agents.Adapter { return held{Adapter: a, started: started} }
	})
	return h, started
}

// waitStarted waits for a run of a heldHarness to start.
func waitStarted(t *testing.T, started chan struct{}) {
	t.Helper()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the run never started")
	}
}

// TestClosingStopsTheRun: an issue closed while its run works stops the run,
// records it as canceled with the reason, removes the session state and
// leaves the mailbox done, with no run restarted or applied afterwards.
func TestClosingStopsTheRun(t *testing.T) {
	t.Parallel()
	h, started := heldHarness(t)
	h.assign(7)
	waitStarted(t, started)
	mb := h.mailbox(7)
	run := mb.ActiveRunID
	if run == "" {
		t.Fatal("no active run while the agent works")
	}
	if err := os.MkdirAll(h.engine.cfg.Sessions.Dir(mb, "fake"), 0o700); err != nil {
		t.Fatal(err)
	}
	h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "alice", Target: h.issueTarget(7)})
	mb = h.waitStatus(7, lifecycle.StatusDone)

	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 || runs[0].ID != run || runs[0].Status != state.RunCanceled || !strings.Contains(runs[0].Outcome, "closed") {
		t.Fatalf("runs after closing: %+v", runs)
	}
	if _, err := os.Stat(h.engine.cfg.Sessions.Dir(mb, "fake")); !os.IsNotExist(err) {
		t.Errorf("session state after closing: %v", err)
	}
	// The run's end reaches the mailbox after it is done: nothing happens.
	time.Sleep(200 * time.Millisecond)
	if mb = h.mailbox(7); mb.Status != string(lifecycle.StatusDone) || mb.ActiveRunID != "" || len(mustRuns(t, h.store, mb.ID)) != 1 {
		t.Errorf("after the run's end: %+v", mb)
	}
	if got := h.forge.labels(7); len(lifecycle.StatusLabels(got)) != 1 || lifecycle.StatusLabels(got)[0] != lifecycle.StatusDone.Label() {
		t.Errorf("labels %q", got)
	}
}

// TestClosingWhileTheForgeFails: the run is stopped but the forge fails
// until the closing event is given up; the canceled run's end then clears
// the active run and is not retried.
func TestClosingWhileTheForgeFails(t *testing.T) {
	t.Parallel()
	h, started := heldHarness(t)
	h.assign(7)
	waitStarted(t, started)
	h.forge.down("AddLabels", 100)
	h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "alice", Target: h.issueTarget(7)})
	waitUntil(t, func() bool { m := h.mailbox(7); return m.ActiveRunID == "" })
	time.Sleep(200 * time.Millisecond)
	mb := h.mailbox(7)
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 || runs[0].Status != state.RunCanceled || mb.ActiveRunID != "" {
		t.Fatalf("a run stopped on purpose was retried or left active: %+v, mailbox %+v", runs, mb)
	}
}

// TestShutdownWhileTheForgeIsDown: an event still being tried when the
// engine stops is not given up: the next start handles it.
func TestShutdownWhileTheForgeIsDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)

	h.forge.down("CreateComment", 1_000_000)
	h.forge.AddLabels(context.Background(), h.issueTarget(7), "status::in_ci")
	h.send(forges.Event{Type: forges.EventIssueLabeled, DeliveryID: "during-outage", Actor: "alice", Target: h.issueTarget(7), Labels: h.forge.labels(7)})
	waitUntil(t, func() bool {
		h.forge.mu.Lock()
		defer h.forge.mu.Unlock()
		return h.forge.failNext["CreateComment"] < 1_000_000-2 // tried, and tried again
	})
	cfg := h.engine.cfg
	h.engine.Close()
	if rec := h.eventRecord("during-outage"); rec.Done {
		t.Fatalf("the event was given up at shutdown: %+v", rec)
	}

	h.forge.down("CreateComment", 0)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.engine = e
	t.Cleanup(e.Close)
	if rec := h.handled("during-outage"); strings.Contains(rec.Outcome, "error") {
		t.Errorf("event record after the restart: %+v", rec)
	}
	if n := count(h.forge.commentKinds(h.issueTarget(7)), lifecycle.KindStatusLabelRestored); n != 1 {
		t.Errorf("%d status_label_restored comments, want 1", n)
	}
}

// TestGoneIsNotRetried: a forge that says the issue does not exist (a 404)
// is believed at once: the event is recorded with the error, not tried for
// minutes while the mailbox's later events wait.
func TestGoneIsNotRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.send(forges.Event{Type: forges.EventIssueAssigned, DeliveryID: "deleted-issue", Actor: "alice", Assignee: "alfred",
		Target: h.issueTarget(404)})
	if rec := h.handled("deleted-issue"); !strings.Contains(rec.Outcome, "not found") {
		t.Errorf("event record: %+v", rec)
	}
	h.forge.mu.Lock()
	defer h.forge.mu.Unlock()
	if h.forge.missing != 1 {
		t.Errorf("the missing issue was asked for %d times, want once", h.forge.missing)
	}
}

// TestAgentOutputIsRedacted: an agent that prints the secrets it was given
// (the API key offered to it, the forge token it pushes with) or any other
// the service holds publishes none in the plan comment, the description or
// the run's record.
func TestAgentOutputIsRedacted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) { s.secrets = []string{"", "whsec-1234", "api-key-5678"} })
	h.adapter.ReplyNext("## Functional analysis\n\nKey sk-very-secret, api-key-5678.\n\n## Implementation plan\n\n1. Push with tok-s3cret, check whsec-1234.")
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	var published []string
	cs, _ := h.forge.Comments(context.Background(), h.issueTarget(7))
	for _, c := range cs {
		published = append(published, c.Body)
	}
	is, _ := h.forge.Issue(context.Background(), h.project, 7)
	published = append(published, is.Body)
	for _, r := range mustRuns(t, h.store, mb.ID) {
		published = append(published, r.Result, r.Outcome, r.Log)
	}
	all := strings.Join(published, "\n")
	for _, secret := range []string{"sk-very-secret", "tok-s3cret", "whsec-1234", "api-key-5678"} {
		if strings.Contains(all, secret) {
			t.Errorf("%s published: %q", secret, all)
		}
	}
	if !strings.Contains(all, "Push with [redacted], check [redacted].") {
		t.Errorf("the plan is not there, redacted: %q", all)
	}
}

// TestClosingAQueuedRun: a run still waiting for a slot when its issue is
// closed is recorded canceled and never started.
func TestClosingAQueuedRun(t *testing.T) {
	t.Parallel()
	h, started := heldHarness(t)
	for _, iid := range []int64{7, 8} { // the two slots taken
		h.assign(iid)
		waitStarted(t, started)
	}
	h.assign(9)
	waitUntil(t, func() bool { return h.mailbox(9).ActiveRunID != "" })
	h.send(forges.Event{Type: forges.EventIssueClosed, Actor: "alice", Target: h.issueTarget(9)})
	mb := h.waitStatus(9, lifecycle.StatusDone)
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 || runs[0].Status != state.RunCanceled || !strings.Contains(runs[0].Outcome, "closed") || !runs[0].StartedAt.IsZero() {
		t.Fatalf("the queued run after closing: %+v", runs)
	}
	select {
	case <-started:
		t.Error("the queued run was started")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestStatusLabelChangedInTwoSteps: Gitea sends a person's change of the
// status label as two events (the label added, then the old one removed);
// the status is restored with one comment, not one per event.
func TestStatusLabelChangedInTwoSteps(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	issue := h.issueTarget(7)
	h.forge.AddLabels(context.Background(), issue, "status::in_ci")
	added := h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue, Labels: h.forge.labels(7)})
	h.forge.RemoveLabel(context.Background(), issue, "status::waiting_validation")
	removed := h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue, Labels: []string{"type::task", "status::in_ci"}})
	h.handled(added.DeliveryID)
	h.handled(removed.DeliveryID)
	if got := h.forge.labels(7); len(lifecycle.StatusLabels(got)) != 1 || !slices.Contains(got, lifecycle.StatusWaitingValidation.Label()) {
		t.Errorf("labels after the restore: %q", got)
	}
	if n := count(h.forge.commentKinds(issue), lifecycle.KindStatusLabelRestored); n != 1 {
		t.Errorf("%d status_label_restored comments for one change, want 1", n)
	}
}

// TestScopedStatusLabels: on a forge whose status labels are scoped
// (Config.StatusPrefixes: "status/"), the bot sets "status/x"; a status
// label of the other form a person adds counts as a status label too, and
// is taken off when the bot restores its own, with the restore comment
// naming the label as the forge has it.
func TestScopedStatusLabels(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(s *setup) { s.statusPrefixes = map[string]string{"forgejo": forges.ScopedStatusPrefix} })
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	want := lifecycle.StatusWaitingValidation.LabelWith(forges.ScopedStatusPrefix)
	if got := h.forge.labels(7); len(lifecycle.StatusLabels(got)) != 1 || !slices.Contains(got, want) {
		t.Fatalf("labels %q, want the one status label %s", got, want)
	}
	issue := h.issueTarget(7)
	h.forge.AddLabels(context.Background(), issue, "status::in_ci")
	ev := h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue, Labels: h.forge.labels(7)})
	h.handled(ev.DeliveryID)
	if got := h.forge.labels(7); len(lifecycle.StatusLabels(got)) != 1 || !slices.Contains(got, want) {
		t.Errorf("labels after the restore: %q, want only %s", got, want)
	}
	comments, _ := h.forge.Comments(context.Background(), issue)
	restored := slices.ContainsFunc(comments, func(c forges.Comment) bool {
		return strings.Contains(c.Body, "The status label `"+want+"` is managed by me")
	})
	if !restored {
		t.Errorf("no restore comment naming %s", want)
	}
}

// TestFirstEventQuarantinedThenRetried: the issue's first event fails for
// good (the forge refuses its status label: deleted since the sync): it is
// quarantined in a mailbox that holds only it, said in the thread with
// ai::retry; ai::retry handles it again and the issue starts.
func TestFirstEventQuarantinedThenRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.forge.gone("AddLabels", 1)
	h.openIssue(7, "Add a greeting", "type::task")
	ev := h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(7), Labels: []string{"type::task"}})
	if rec := h.handled(ev.DeliveryID); !strings.HasPrefix(rec.Outcome, quarantinedOutcome) {
		t.Fatalf("the first event: %+v, want quarantined", rec)
	}
	mb := h.mailbox(7)
	if mb.Status != "" || len(mb.Quarantined) != 1 || mb.Quarantined[0].Delivery != ev.DeliveryID {
		t.Fatalf("the mailbox of the quarantined start: %+v", mb)
	}
	comments, _ := h.forge.Comments(context.Background(), h.issueTarget(7))
	said := slices.ContainsFunc(comments, func(c forges.Comment) bool {
		return strings.Contains(c.Body, "could not process the event") && strings.Contains(c.Body, lifecycle.CommandRetry.Label())
	})
	if !said {
		t.Fatalf("the thread does not say the event was set aside: %+v", comments)
	}
	h.command(7, lifecycle.CommandRetry)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)
	if n := len(mustRuns(t, h.store, h.mailbox(7).ID)); n != 1 {
		t.Errorf("%d runs after ai::retry, want the analysis", n)
	}
}
