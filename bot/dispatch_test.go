package bot

import (
	"testing"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
)

// TestEveryEffectHasAMethod: every effect of the lifecycle, and every one a
// row of its dispatch table names, is performed by a method of the engine.
func TestEveryEffectHasAMethod(t *testing.T) {
	for _, ef := range lifecycle.Effects() {
		if effects[ef] == nil {
			t.Errorf("effect %s has no engine method in effects", ef)
		}
	}
	for _, r := range lifecycle.DispatchRows() {
		if effects[r.Effect] == nil {
			t.Errorf("the row for %s needs effect %s, which no engine method performs", r.On, r.Effect)
		}
	}
	if len(effects) != len(lifecycle.Effects()) {
		t.Errorf("%d engine methods for %d effects", len(effects), len(lifecycle.Effects()))
	}
}
