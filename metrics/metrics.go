// Package metrics owns what Alfred tells Prometheus: every series it exports
// is declared here, with its labels, and nowhere else. The engine and the
// HTTP server report through the small methods of Metrics; /metrics serves
// them (behind a bearer token when one is set). A nil *Metrics reports
// nothing, so tests and tools can leave it out.
//
// It imports no other Alfred package.
package metrics

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the registry of one process and its series.
type Metrics struct {
	reg *prometheus.Registry

	webhooks        *prometheus.CounterVec
	webhookDuration *prometheus.HistogramVec
	runs            *prometheus.CounterVec
	runDuration     *prometheus.HistogramVec
	sessions        *prometheus.CounterVec
	forgeCalls      *prometheus.CounterVec
	forgeDuration   *prometheus.HistogramVec
	forgeRetries    *prometheus.CounterVec
	panics          *prometheus.CounterVec
	quarantined     prometheus.Counter
	stateWrites     prometheus.Histogram
	stateCommits    *prometheus.CounterVec
	routingErrors   *prometheus.CounterVec
}

// New makes the registry: Go runtime and process series, build info with
// version, and Alfred's own.
func New(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "alfred_build_info", Help: "Always 1; the version is a label.",
		ConstLabels: prometheus.Labels{"version": version}})
	buildInfo.Set(1)
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_webhooks_total",
		Help: "Webhook deliveries answered, by forge and outcome (accepted, ignored, rejected, malformed, too_large, error)."},
		[]string{"forge", "outcome"})
	m.webhookDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "alfred_webhook_duration_seconds",
		Help: "Time to answer a webhook delivery (verify, parse, journal).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)},
		[]string{"forge"})
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_runs_total",
		Help: "Runs ended, by phase, adapter and status (succeeded, failed, canceled, ...)."},
		[]string{"phase", "adapter", "status"})
	m.runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "alfred_run_duration_seconds",
		Help: "Wall time of a run, from its start to its end.", Buckets: prometheus.ExponentialBuckets(1, 2, 13)},
		[]string{"phase"})
	m.sessions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_sessions_total",
		Help: "Agent sessions by how they started, as the status comment says it: resumed, fresh (reason), or none (no named session)."},
		[]string{"start"})
	m.forgeCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_forge_calls_total",
		Help: "HTTP requests to the forge's API, by forge, method and status class (2xx, 4xx, 5xx, error)."},
		[]string{"forge", "method", "status"})
	m.forgeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "alfred_forge_call_duration_seconds",
		Help: "Time of one HTTP request to the forge's API.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)},
		[]string{"forge"})
	m.forgeRetries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_forge_retries_total",
		Help: "Forge API requests sent again, by forge and reason (the status code, rate_limit, timeout, network)."},
		[]string{"forge", "reason"})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_panics_recovered_total",
		Help: "Panics recovered, by where (event, run, run end, poll, flush, http)."}, []string{"in"})
	m.quarantined = prometheus.NewCounter(prometheus.CounterOpts{Name: "alfred_events_quarantined_total",
		Help: "Events set aside after every try failed, until ai::retry."})
	m.stateWrites = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "alfred_state_write_duration_seconds",
		Help: "Time to write one commit of the state branch durably (packs and ref synced), failed ones too.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
	m.stateCommits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_state_commits_total",
		Help: "Commits of the state branch, by result (committed, failed)."}, []string{"result"})
	m.routingErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "alfred_routing_errors_total",
		Help: "Events the state index could not route to their mailbox (they fail, and are quarantined), by forge."}, []string{"forge"})
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo, m.webhooks, m.webhookDuration, m.runs, m.runDuration, m.sessions, m.forgeCalls, m.forgeDuration, m.forgeRetries,
		m.panics, m.quarantined, m.stateWrites, m.stateCommits, m.routingErrors)
	return m
}

// Gauge registers a gauge read from f at each scrape (the events waiting in
// the journal, the runs in flight).
func (m *Metrics) Gauge(name, help string, f func() float64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// Handler serves the registry; with a token set, only to requests bearing it.
func (m *Metrics) Handler(token string) http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="alfred metrics"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Webhooks wraps the webhook handler of forge: each answer is counted by
// its outcome, read from the status code, and timed.
func (m *Metrics) Webhooks(forge string, next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		m.webhookDuration.WithLabelValues(forge).Observe(time.Since(start).Seconds())
		m.webhooks.WithLabelValues(forge, webhookOutcome(sw.status)).Inc()
	})
}

// webhookOutcome names what the webhook handler's status code means.
func webhookOutcome(status int) string {
	switch status {
	case http.StatusAccepted:
		return "accepted"
	case http.StatusOK:
		return "ignored" // a redelivery or an event Alfred has no use for
	case http.StatusUnauthorized:
		return "rejected"
	case http.StatusBadRequest:
		return "malformed"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	}
	return "error"
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Transport counts and times the requests of forge's API client.
func (m *Metrics) Transport(forge string, next http.RoundTripper) http.RoundTripper {
	if m == nil {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(r)
		m.forgeDuration.WithLabelValues(forge).Observe(time.Since(start).Seconds())
		class := "error"
		if err == nil {
			class = strconv.Itoa(resp.StatusCode/100) + "xx"
		}
		m.forgeCalls.WithLabelValues(forge, r.Method, class).Inc()
		return resp, err
	})
}

// ForgeRetry returns what counts the retries of forge's calls, by reason
// (forges.RetryPolicy.OnRetry); nil for a nil m.
func (m *Metrics) ForgeRetry(forge string) func(reason string) {
	if m == nil {
		return nil
	}
	return func(reason string) { m.forgeRetries.WithLabelValues(forge, reason).Inc() }
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// RunEnded counts a run that ended with status, and its wall time.
func (m *Metrics) RunEnded(phase, adapter, status string, took time.Duration) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(phase, adapter, status).Inc()
	m.runDuration.WithLabelValues(phase).Observe(took.Seconds())
}

// SessionStarted counts an agent session by how it started.
func (m *Metrics) SessionStarted(start string) {
	if m == nil {
		return
	}
	m.sessions.WithLabelValues(start).Inc()
}

// PanicRecovered counts a panic recovered in the named place.
func (m *Metrics) PanicRecovered(in string) {
	if m == nil {
		return
	}
	m.panics.WithLabelValues(in).Inc()
}

// EventQuarantined counts an event set aside.
func (m *Metrics) EventQuarantined() {
	if m == nil {
		return
	}
	m.quarantined.Inc()
}

// StateWritten counts a commit of the state branch and its time; err is
// nil when it is durable. It fits state.Options.Observe.
func (m *Metrics) StateWritten(took time.Duration, err error) {
	if m == nil {
		return
	}
	result := "committed"
	if err != nil {
		result = "failed"
	}
	m.stateCommits.WithLabelValues(result).Inc()
	m.stateWrites.Observe(took.Seconds())
}

// RoutingError counts an event of forge the state index could not route.
func (m *Metrics) RoutingError(forge string) {
	if m == nil {
		return
	}
	m.routingErrors.WithLabelValues(forge).Inc()
}

// Reach is whether one forge answers, and since when it does not.
type Reach struct {
	Forge     string
	Up        bool
	DownSince time.Time // zero while Up
}

// ForgeReach exports, read from f at each scrape, whether each forge
// answers (alfred_forge_up, 1 or 0) and since when it does not
// (alfred_forge_down_since_seconds, a Unix time; 0 while it answers).
func (m *Metrics) ForgeReach(f func() []Reach) {
	if m == nil {
		return
	}
	m.reg.MustRegister(reachCollector(f))
}

var (
	forgeUpDesc = prometheus.NewDesc("alfred_forge_up",
		"1 when the bot knows who it is on the forge (it answered), 0 while it does not answer; its webhooks are journaled meanwhile.", []string{"forge"}, nil)
	forgeDownDesc = prometheus.NewDesc("alfred_forge_down_since_seconds",
		"When the forge stopped answering, as a Unix time; 0 while it answers.", []string{"forge"}, nil)
)

type reachCollector func() []Reach

func (c reachCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- forgeUpDesc
	ch <- forgeDownDesc
}

func (c reachCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c() {
		up, since := 0.0, 0.0
		if r.Up {
			up = 1
		} else {
			since = float64(r.DownSince.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(forgeUpDesc, prometheus.GaugeValue, up, r.Forge)
		ch <- prometheus.MustNewConstMetric(forgeDownDesc, prometheus.GaugeValue, since, r.Forge)
	}
}
