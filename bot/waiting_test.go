package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/state"
)

var waitingTestProject = forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"}

func waitingKey(kind state.Kind, iid int64) string {
	return state.MailboxKey{Forge: waitingTestProject.Forge, Owner: waitingTestProject.Owner, Project: waitingTestProject.Name, Kind: kind, IID: iid}.ID()
}

// waitingEngine is an engine with just a store holding issue 1 in in_ci and
// merge request 2 without a status, and an inbox whose workers hold their
// first message until release is closed.
func waitingEngine(t *testing.T) (e *Engine, release chan struct{}) {
	t.Helper()
	st := openStore(t)
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		if err := tx.PutMailbox(state.Mailbox{Forge: waitingTestProject.Forge, Owner: waitingTestProject.Owner, Project: waitingTestProject.Name, Kind: state.KindIssue, IID: 1, Status: string(lifecycle.StatusInCI)}); err != nil {
			return err
		}
		return tx.PutMailbox(state.Mailbox{Forge: waitingTestProject.Forge, Owner: waitingTestProject.Owner, Project: waitingTestProject.Name, Kind: state.KindMR, IID: 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	release = make(chan struct{})
	e = &Engine{store: st, cfg: Config{Forges: map[string]forges.Forge{waitingTestProject.Forge: nil}}}
	e.inbox = newInbox(context.Background(), func(context.Context, string, message) { <-release })
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		e.inbox.close()
	})
	return e, release
}

func queuedEvent(n int) message {
	return message{event: &forges.Event{DeliveryID: fmt.Sprint("d", n)}}
}

// TestWaiting: every event queued counts, the one held by its worker too,
// under the status of its mailbox; runs' ends and polls do not count.
func TestWaiting(t *testing.T) {
	project := "project:forgejo/alice/demo"
	for _, tc := range []struct {
		name  string
		posts map[string][]message
		want  map[string]int
	}{
		{"nothing", nil, map[string]int{}},
		{"by status", map[string][]message{
			waitingKey(state.KindIssue, 1): {queuedEvent(1), {runDone: "r1"}, queuedEvent(2), {poll: true}},
			waitingKey(state.KindMR, 2):    {queuedEvent(3)},
			waitingKey(state.KindIssue, 3): {queuedEvent(4), queuedEvent(5)},
			project:                        {queuedEvent(6)},
		}, map[string]int{"in_ci": 2, waitingNone: 1, waitingNew: 2, waitingProject: 1}},
		{"only runs and polls", map[string][]message{
			waitingKey(state.KindIssue, 1): {{runDone: "r1"}, {poll: true}},
		}, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := waitingEngine(t)
			for key, ms := range tc.posts {
				for _, m := range ms {
					e.inbox.post(key, m)
				}
			}
			if got := nonZero(t, e.Waiting()); !maps.Equal(got, tc.want) {
				t.Errorf("Waiting() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWaitingFallsAsEventsAreHandled: an event counts until its handling
// ends; after the last, nothing waits.
func TestWaitingFallsAsEventsAreHandled(t *testing.T) {
	e, release := waitingEngine(t)
	close(release)
	key := waitingKey(state.KindIssue, 1)
	var mu sync.Mutex
	var seen []string
	last, hold := make(chan struct{}), make(chan struct{})
	e.inbox = newInbox(context.Background(), func(_ context.Context, _ string, m message) {
		<-hold // until every message is queued
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprint(nonZero(t, e.Waiting())))
		if m.poll {
			close(last)
		}
	})
	e.inbox.post(key, message{runDone: "first"})
	for _, m := range []message{queuedEvent(1), queuedEvent(2), {runDone: "r"}, queuedEvent(3), {poll: true}} {
		e.inbox.post(key, m)
	}
	close(hold)
	<-last
	e.inbox.close()
	want := []string{"map[in_ci:3]", "map[in_ci:3]", "map[in_ci:2]", "map[in_ci:1]", "map[in_ci:1]", "map[]"}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("Waiting() as each message was handled: %v, want %v", seen, want)
	}
	if got := nonZero(t, e.Waiting()); len(got) != 0 {
		t.Errorf("after the last: %v, want nothing", got)
	}
}

// nonZero is what waits, from a Waiting that must hold every state of
// waitingStates.
func nonZero(t *testing.T, w map[string]int) map[string]int {
	for _, s := range append(waitingStates(), "in_ci", "done", "functional_analysis") {
		if _, ok := w[s]; !ok {
			t.Errorf("Waiting() has no %q: %v", s, w)
		}
	}
	out := map[string]int{}
	for s, n := range w {
		if n != 0 {
			out[s] = n
		}
	}
	return out
}

// TestRouteEvent: the mailbox an event goes to, and what a failing index
// lookup makes of it.
func TestRouteEvent(t *testing.T) {
	issue := state.Mailbox{ID: waitingKey(state.KindIssue, 7)}
	broken := errors.New("unreadable mailbox")
	index := func(found map[state.RouteKind]string, failing state.RouteKind) func(state.Route) (state.Mailbox, bool, error) {
		return func(rt state.Route) (state.Mailbox, bool, error) {
			switch {
			case rt.By == failing:
				return state.Mailbox{}, false, broken
			case found[rt.By] == rt.Value:
				return issue, true, nil
			}
			return state.Mailbox{}, false, nil
		}
	}
	mr := forges.Event{Target: forges.Target{Project: waitingTestProject, Kind: forges.TargetMergeRequest, Number: 4}}
	push := forges.Event{Target: forges.Target{Project: waitingTestProject}, Branch: "ai/7-x", SHA: "abc"}
	for _, tc := range []struct {
		name    string
		ev      forges.Event
		found   map[state.RouteKind]string
		failing state.RouteKind
		want    string
		err     bool
	}{
		{"an issue's own event", forges.Event{Target: forges.Target{Project: waitingTestProject, Kind: forges.TargetIssue, Number: 7}}, nil, state.ByMergeRequest, waitingKey(state.KindIssue, 7), false},
		{"the bot's merge request", mr, map[state.RouteKind]string{state.ByMergeRequest: "4"}, "", issue.ID, false},
		{"another merge request", mr, nil, "", waitingKey(state.KindMR, 4), false},
		{"a merge request the index cannot read", mr, nil, state.ByMergeRequest, waitingKey(state.KindMR, 4), true},
		{"a push to an issue branch", push, map[state.RouteKind]string{state.ByBranch: "ai/7-x"}, "", issue.ID, false},
		{"a push of an issue's head", push, map[state.RouteKind]string{state.ByHead: "abc"}, "", issue.ID, false},
		{"a push to another branch", push, nil, "", "project:forgejo/alice/demo", false},
		{"a push the index cannot read", push, map[state.RouteKind]string{state.ByHead: "abc"}, state.ByBranch, "project:forgejo/alice/demo", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := routeEvent(&tc.ev, index(tc.found, tc.failing))
			if got != tc.want || (err != nil) != tc.err {
				t.Fatalf("routeEvent = %q, %v; want %q, error %v", got, err, tc.want, tc.err)
			}
			if tc.err && !errors.Is(err, broken) {
				t.Errorf("the error %v does not wrap the index's", err)
			}
		})
	}
}

// TestUnroutedEventFails: an event the index could not route is counted,
// and fails at once into quarantine, with the reason in its record; the
// events routed after it are handled as usual.
func TestUnroutedEventFails(t *testing.T) {
	h := newHarness(t)
	m := metrics.New("test")
	h.engine.cfg.Metrics = m // before any event: nothing reads it yet
	for i, tc := range []struct {
		name        string
		err         error
		quarantined bool
	}{
		{"routed", nil, false},
		{"not routed", errors.New("route by branch: unreadable mailbox"), true},
		{"routed after it", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &forges.Event{Type: forges.EventPush, DeliveryID: fmt.Sprint("push-", i), Target: forges.Target{Project: h.project}, Branch: "feature"}
			now := time.Now()
			h.engine.postRouted(message{event: ev, eventPath: eventPath(now, ev.DeliveryID), received: now}, "project:forgejo/alice/demo", tc.err)
			rec := h.handled(ev.DeliveryID)
			if got := strings.HasPrefix(rec.Outcome, quarantinedOutcome); got != tc.quarantined {
				t.Errorf("outcome %q, quarantined %v, want %v", rec.Outcome, got, tc.quarantined)
			}
			if tc.err != nil && !strings.Contains(rec.Outcome, tc.err.Error()) {
				t.Errorf("outcome %q does not say why", rec.Outcome)
			}
		})
	}
	body := scrapeMetrics(t, m)
	for _, want := range []string{`alfred_routing_errors_total{forge="forgejo"} 1`, `alfred_events_quarantined_total 1`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
}

func scrapeMetrics(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler("").ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}
