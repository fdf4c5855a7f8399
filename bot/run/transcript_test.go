package run

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/state"
)

// TestKeptSteps: the bounds of the steps a run keeps.
func TestKeptSteps(t *testing.T) {
	big := strings.Repeat("x", 8<<10)
	tests := []struct {
		name  string
		steps []agents.Step
		want  int
	}{
		{"none", nil, 0},
		{"few", make([]agents.Step, 3), 3},
		{"too many", make([]agents.Step, state.MaxRunSteps+10), state.MaxRunSteps},
		{"too big", repeat(agents.Step{Kind: agents.StepAssistant, Text: big}, 40), state.MaxRunStepBytes / (len(big) + 64 + len("assistant"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KeptSteps(tt.steps, func(s string) string { return s }); len(got) != tt.want {
				t.Errorf("%d steps kept, want %d", len(got), tt.want)
			}
		})
	}
}

// TestLastPrompt: where a run's steps start when the previous run left no
// count.
func TestLastPrompt(t *testing.T) {
	p, a := agents.Step{Kind: agents.StepPrompt}, agents.Step{Kind: agents.StepAssistant}
	tests := []struct {
		steps []agents.Step
		want  int
	}{
		{nil, 0},
		{[]agents.Step{a, a}, 0},
		{[]agents.Step{p, a, p, a}, 2},
	}
	for _, tt := range tests {
		if got := lastPrompt(tt.steps); got != tt.want {
			t.Errorf("lastPrompt(%v) = %d, want %d", tt.steps, got, tt.want)
		}
	}
}

func repeat(s agents.Step, n int) []agents.Step {
	out := make([]agents.Step, n)
	for i := range out {
		out[i] = s
	}
	return out
}
