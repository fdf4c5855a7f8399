package metrics

import (
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome is the figures of one group of issues that the alfred_outcomes_*
// gauges export (outcomes.Figures, field for field): a project's, or
// Project "" for the projects pooled because they are not public; an
// adapter and model's, "*" standing for all of them.
type Outcome struct {
	Forge, Project, Adapter, Model string
	Issues                         int
	Ends                           map[string]int
	MergeRateOf                    int
	MergeRate                      float64
	ToPullRequestN                 int
	ToPullRequestMedian            float64
	ToPullRequestP90               float64
	ToMergeN                       int
	ToMergeMedian, ToMergeP90      float64
	Merged                         int
	USDPerMerged, TokensPerMerged  float64
	Unpriced                       bool
}

// outcomeLabels label every outcome series.
var outcomeLabels = []string{"forge", "project", "adapter", "model"}

// Outcomes registers the alfred_outcomes_* gauges, read from read at a
// scrape at most once every ttl (the scrapes between share its figures;
// concurrent ones wait for the one reading), and
// alfred_outcomes_compute_seconds, the time the last read took. A figure
// with nothing behind it (no finished issue, none merged) has no series.
func (m *Metrics) Outcomes(ttl time.Duration, read func() []Outcome) {
	if m == nil {
		return
	}
	m.reg.MustRegister(newOutcomesCollector(ttl, time.Now, read))
}

// outcomesCollector reads the outcomes at most once every ttl.
type outcomesCollector struct {
	ttl  time.Duration
	now  func() time.Time
	read func() []Outcome

	issues, finished, rate, toPR, toMerge, cost, tokens, took *prometheus.Desc

	mu   sync.Mutex
	at   time.Time // of the last read; zero: never read
	last []Outcome
	dur  time.Duration
}

func newOutcomesCollector(ttl time.Duration, now func() time.Time, read func() []Outcome) *outcomesCollector {
	desc := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help+outcomeHelp, append(slices.Clone(outcomeLabels), extra...), nil)
	}
	return &outcomesCollector{ttl: ttl, now: now, read: read,
		issues:   desc("alfred_outcomes_issues", "Issues the bot worked, whatever their end."),
		finished: desc("alfred_outcomes_finished_issues", "Finished issues by end: merged, closed_unmerged, delivered (an analysis or an answer), done_unrecorded.", "end"),
		rate:     desc("alfred_outcomes_merge_rate", "Merged issues over the finished issues meant to merge (0 to 1); no series before one finished."),
		toPR:     desc("alfred_outcomes_time_to_pull_request_seconds", "Time from the assignment to the bot's merge request: median (0.5) and 90th percentile (0.9).", "quantile"),
		toMerge:  desc("alfred_outcomes_time_to_merge_seconds", "Time from the assignment to the merge: median (0.5) and 90th percentile (0.9).", "quantile"),
		cost:     desc("alfred_outcomes_cost_per_merged_usd", "Dollars the merged issues' runs reported, per merged change (a lower bound when a run reported none)."),
		tokens:   desc("alfred_outcomes_tokens_per_merged", "Tokens of the merged issues' runs per merged change."),
		took: prometheus.NewDesc("alfred_outcomes_compute_seconds",
			"Time the last computation of the alfred_outcomes_* gauges took (they are computed again at most once a TTL).", nil, nil),
	}
}

// outcomeHelp ends every outcome series' help.
const outcomeHelp = ` Over every issue ever assigned; project "" pools the projects not in ALFRED_PUBLIC_PROJECTS, per forge; adapter or model "*" is all of them.`

// Describe implements prometheus.Collector.
func (c *outcomesCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.issues, c.finished, c.rate, c.toPR, c.toMerge, c.cost, c.tokens, c.took} {
		ch <- d
	}
}

// figures is the outcomes, read again when the last read is ttl old.
func (c *outcomesCollector) figures() ([]Outcome, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); c.at.IsZero() || now.Sub(c.at) >= c.ttl || now.Before(c.at) {
		c.last = c.read()
		c.at = now
		c.dur = c.now().Sub(now)
	}
	return c.last, c.dur
}

// Collect implements prometheus.Collector.
func (c *outcomesCollector) Collect(ch chan<- prometheus.Metric) {
	list, took := c.figures()
	ch <- prometheus.MustNewConstMetric(c.took, prometheus.GaugeValue, max(took.Seconds(), 0))
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) { // none comes: a figure is never NaN
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
	}
	for _, o := range list {
		l := []string{o.Forge, o.Project, o.Adapter, o.Model}
		gauge(c.issues, float64(o.Issues), l...)
		for _, end := range slices.Sorted(maps.Keys(o.Ends)) {
			gauge(c.finished, float64(o.Ends[end]), append(l, end)...)
		}
		if o.MergeRateOf > 0 {
			gauge(c.rate, o.MergeRate, l...)
		}
		if o.ToPullRequestN > 0 {
			gauge(c.toPR, o.ToPullRequestMedian, append(l, "0.5")...)
			gauge(c.toPR, o.ToPullRequestP90, append(l, "0.9")...)
		}
		if o.ToMergeN > 0 {
			gauge(c.toMerge, o.ToMergeMedian, append(l, "0.5")...)
			gauge(c.toMerge, o.ToMergeP90, append(l, "0.9")...)
		}
		if o.Merged > 0 {
			gauge(c.cost, o.USDPerMerged, l...)
			gauge(c.tokens, o.TokensPerMerged, l...)
		}
	}
}
