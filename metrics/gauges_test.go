package metrics

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

const waitingHeader = `# HELP alfred_events_waiting Events accepted and not yet handled (the one being handled included), by the status of their mailbox: its status, new (no mailbox yet), project (about no issue), none (a mailbox without status) or unreadable.
# TYPE alfred_events_waiting gauge
`

// TestEventsWaiting: each scrape reads the engine's count by state; a state
// once seen stays, at 0, when nothing waits in it any more.
func TestEventsWaiting(t *testing.T) {
	m := New("dev")
	var now map[string]int
	m.EventsWaiting(func() map[string]int { return now })
	for _, tc := range []struct {
		name string
		now  map[string]int
		want string // the series, without the header; empty: none
	}{
		{"nothing ever waited", nil, ""},
		{"two states", map[string]int{"new": 2, "in_ci": 1},
			"alfred_events_waiting{state=\"in_ci\"} 1\nalfred_events_waiting{state=\"new\"} 2\n"},
		{"one handled, one more state", map[string]int{"new": 1, "done": 3},
			"alfred_events_waiting{state=\"done\"} 3\nalfred_events_waiting{state=\"in_ci\"} 0\nalfred_events_waiting{state=\"new\"} 1\n"},
		{"all handled", map[string]int{},
			"alfred_events_waiting{state=\"done\"} 0\nalfred_events_waiting{state=\"in_ci\"} 0\nalfred_events_waiting{state=\"new\"} 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now = tc.now
			want := ""
			if tc.want != "" {
				want = waitingHeader + tc.want
			}
			if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "alfred_events_waiting"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestContainersRunning: the runner's count, labelled with its name.
func TestContainersRunning(t *testing.T) {
	for _, tc := range []struct {
		runner string
		n      int
	}{{"image", 0}, {"image", 3}, {"host", 1}} {
		m := New("dev")
		m.ContainersRunning(tc.runner, func() int { return tc.n })
		want := "# HELP alfred_containers_running Agent sandboxes started and not yet removed, by runner (image: containers, host: processes).\n" +
			"# TYPE alfred_containers_running gauge\n" +
			"alfred_containers_running{runner=\"" + tc.runner + "\"} " + strconv.Itoa(tc.n) + "\n"
		if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "alfred_containers_running"); err != nil {
			t.Errorf("%s with %d: %v", tc.runner, tc.n, err)
		}
	}
}

// TestStateWritten: commits counted by result, each one timed.
func TestStateWritten(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		errs                 []error
		committed, failed    float64
		observed             float64
		sumAtLeast, sumBelow float64
	}{
		{"none", nil, 0, 0, 0, 0, 0.001},
		{"durable", []error{nil, nil}, 2, 0, 2, 0.02, 0.03},
		{"one failed", []error{nil, errors.New("disk full")}, 1, 1, 2, 0.02, 0.03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New("dev")
			for _, err := range tc.errs {
				m.StateWritten(12*time.Millisecond, err)
			}
			if got := testutil.ToFloat64(m.stateCommits.WithLabelValues("committed")); got != tc.committed {
				t.Errorf("committed = %v, want %v", got, tc.committed)
			}
			if got := testutil.ToFloat64(m.stateCommits.WithLabelValues("failed")); got != tc.failed {
				t.Errorf("failed = %v, want %v", got, tc.failed)
			}
			count, sum := sample(t, m, "alfred_state_write_duration_seconds_count"), sample(t, m, "alfred_state_write_duration_seconds_sum")
			if count != tc.observed || sum < tc.sumAtLeast || sum >= tc.sumBelow {
				t.Errorf("histogram count %v sum %v, want %v in [%v, %v)", count, sum, tc.observed, tc.sumAtLeast, tc.sumBelow)
			}
		})
	}
}

// TestRoutingError: counted by forge.
func TestRoutingError(t *testing.T) {
	m := New("dev")
	for _, f := range []string{"forgejo", "forgejo", "gitlab"} {
		m.RoutingError(f)
	}
	for forge, want := range map[string]float64{"forgejo": 2, "gitlab": 1, "github": 0} {
		if got := testutil.ToFloat64(m.routingErrors.WithLabelValues(forge)); got != want {
			t.Errorf("routing errors of %s = %v, want %v", forge, got, want)
		}
	}
}

// sample reads the value of one series from a scrape (-1: not there).
func sample(t *testing.T, m *Metrics, series string) float64 {
	t.Helper()
	_, body := scrape(t, m.Handler(""), "")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}
