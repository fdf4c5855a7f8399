package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestStateSeries(t *testing.T) {
	m := New("dev")
	writable := true
	m.StateWritable(func() bool { return writable })
	pushed := m.StateMirror(func() int { return 7 })
	pushed(30*time.Millisecond, nil)
	pushed(time.Second, errors.New("refused"))
	pushed(time.Second, errors.New("refused"))
	writable = false

	rec := httptest.NewRecorder()
	m.Handler("").ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"alfred_state_writable 0",
		"alfred_state_mirror_behind_commits 7",
		`alfred_state_mirror_pushes_total{result="pushed"} 1`,
		`alfred_state_mirror_pushes_total{result="failed"} 2`,
		"alfred_state_mirror_push_duration_seconds_count 3",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var none *Metrics
	none.StateWritable(func() bool { return true })
	if none.StateMirror(func() int { return 0 }) != nil {
		t.Error("a nil Metrics returned an observer")
	}
}
