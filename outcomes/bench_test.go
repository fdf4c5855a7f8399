package outcomes

import (
	"context"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// The cost of the gauges' figures over a store of 1000 issues, each with
// a run and a session: reading them (Load, the baseline) and reading and
// summing them up by project and agent (FiguresOf). A scrape computes them
// at most once a minute (metrics.Outcomes).
func BenchmarkOutcomes(b *testing.B) {
	st := seedStore(b, 1000)
	now := at(2000 * time.Hour)
	demo := state.ProjectRef{Forge: "gitea", Owner: "alice", Project: "demo"}
	b.Run("Load", func(b *testing.B) {
		for b.Loop() {
			if list, _ := Load(context.Background(), st, demo, Filter{Now: now}); len(list) != 1000 {
				b.Fatal(len(list))
			}
		}
	})
	b.Run("FiguresOf", func(b *testing.B) {
		for b.Loop() {
			if f, _ := FiguresOf(context.Background(), st, nil, now); len(f) == 0 {
				b.Fatal("no figures")
			}
		}
	})
}
