package metrics

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// EventsWaiting registers alfred_events_waiting, read from f at each scrape:
// the events accepted and not yet handled, by the state of their mailbox.
func (m *Metrics) EventsWaiting(f func() map[string]int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(newLabelledGauge("alfred_events_waiting",
		"Events accepted and not yet handled (the one being handled included), by the status of their mailbox: "+
			"its status, new (no mailbox yet), project (about no issue), none (a mailbox without status) or unreadable.",
		"state", f))
}

// ContainersRunning registers alfred_containers_running, read from f at
// each scrape: the sandboxes runner (image: containers, host: processes)
// started and has not torn down yet.
func (m *Metrics) ContainersRunning(runner string, f func() int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "alfred_containers_running",
		Help:        "Agent sandboxes started and not yet removed, by runner (image: containers, host: processes).",
		ConstLabels: prometheus.Labels{"runner": runner}}, func() float64 { return float64(f()) }))
}

// labelledGauge is a gauge of one label whose values are read at each
// scrape. A label value once seen stays, at 0 when f no longer names it, so
// that its series drops to 0 instead of ending.
type labelledGauge struct {
	desc *prometheus.Desc
	read func() map[string]int

	mu   sync.Mutex
	seen map[string]bool
}

func newLabelledGauge(name, help, label string, read func() map[string]int) *labelledGauge {
	return &labelledGauge{desc: prometheus.NewDesc(name, help, []string{label}, nil), read: read, seen: map[string]bool{}}
}

// Describe implements prometheus.Collector.
func (g *labelledGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *labelledGauge) Collect(ch chan<- prometheus.Metric) {
	now := g.read()
	g.mu.Lock()
	for v := range now {
		g.seen[v] = true
	}
	values := slices.Sorted(maps.Keys(g.seen))
	g.mu.Unlock()
	for _, v := range values {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(now[v]), v)
	}
}
