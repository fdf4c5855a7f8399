package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRunSessionsModel adds and removes random sessions of a few runs and
// compares what of and all yield with a map of sets.
func TestRunSessionsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 5))
	rs := newRunSessions(0)
	model := map[string]map[string]bool{}
	for step := range 5000 {
		run, path := fmt.Sprintf("r%d", rng.IntN(6)), fmt.Sprintf("s%d.json", rng.IntN(8))
		if rng.IntN(2) == 0 {
			rs.add(run, path)
			if model[run] == nil {
				model[run] = map[string]bool{}
			}
			model[run][path] = true
		} else {
			rs.remove(run, path)
			delete(model[run], path)
			if len(model[run]) == 0 {
				delete(model, run)
			}
		}
		n := 0
		for run := range 6 {
			id := fmt.Sprintf("r%d", run)
			got := slices.Sorted(rs.of(id))
			want := slices.Sorted(maps.Keys(model[id]))
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: of(%s) = %q, want %q", step, id, got, want)
			}
			n += len(want)
		}
		all := 0
		for run, p := range rs.all() {
			if !model[run][p] {
				t.Fatalf("step %d: all yields %s %s, not in the model", step, run, p)
			}
			all++
		}
		if all != n || len(rs.one) != len(model) {
			t.Fatalf("step %d: all yields %d paths of %d runs, want %d of %d", step, all, len(rs.one), n, len(model))
		}
	}
}
