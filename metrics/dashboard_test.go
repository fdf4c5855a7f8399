package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardReadsRealSeries: every alfred_ series the Grafana dashboard
// of deploy/grafana queries is one this package exports, so the dashboard
// cannot drift from the code.
func TestDashboardReadsRealSeries(t *testing.T) {
	raw, err := os.ReadFile("../deploy/grafana/alfred.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	m := New("dev")
	m.Gauge("alfred_runs_in_flight", "runs", func() float64 { return 0 })
	m.EventsWaiting(func() map[string]int { return nil })
	m.ContainersRunning("image", func() int { return 0 })
	exported := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() { m.reg.Describe(ch); close(ch) }()
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	for desc := range ch {
		if n := name.FindStringSubmatch(desc.String()); n != nil {
			exported[n[1]] = true
		}
	}
	used := regexp.MustCompile(`alfred_[a-z_]+`)
	seen := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, s := range used.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "_bucket"), "_count"), "_sum")
				seen++
				if !exported[base] {
					t.Errorf("panel %q queries %s, which Alfred does not export", p.Title, s)
				}
			}
		}
	}
	if seen < 10 {
		t.Errorf("the dashboard queries %d alfred_ series; it should show them all", seen)
	}
}
