package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StateWritable registers alfred_state_writable, read from f at each
// scrape: 1 while the state store takes writes, 0 while they fail (a full
// or failing disk; /readyz then answers 503).
func (m *Metrics) StateWritable(f func() bool) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "alfred_state_writable",
		Help: "1 while the state store takes writes, 0 while they fail (a full or failing disk); /readyz answers 503 meanwhile."},
		func() float64 {
			if f() {
				return 1
			}
			return 0
		}))
}

// StateMirror registers the series of the state mirror (ALFRED_STATE_REMOTE):
// alfred_state_mirror_behind_commits, read from behind at each scrape, and
// the pushes' count and time, which the returned function observes (it
// fits mirror.Options.Observe). A nil m registers nothing and returns nil.
func (m *Metrics) StateMirror(behind func() int) func(took time.Duration, err error) {
	if m == nil {
		return nil
	}
	pushes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_state_mirror_pushes_total",
		Help: "Pushes of the state branch to ALFRED_STATE_REMOTE, by result (pushed, failed)."}, []string{"result"})
	took := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "alfred_state_mirror_push_duration_seconds",
		Help: "Time of one push of the state branch to ALFRED_STATE_REMOTE, failed ones too.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)})
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "alfred_state_mirror_behind_commits",
		Help: "Commits of the local state branch the state remote does not have yet (0: mirrored)."},
		func() float64 { return float64(behind()) })
	m.reg.MustRegister(pushes, took, gauge)
	pushes.WithLabelValues("pushed")
	pushes.WithLabelValues("failed")
	return func(d time.Duration, err error) {
		result := "pushed"
		if err != nil {
			result = "failed"
		}
		pushes.WithLabelValues(result).Inc()
		took.Observe(d.Seconds())
	}
}
