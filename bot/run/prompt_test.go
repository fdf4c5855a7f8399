package run

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
)

func TestAnalysisPromptCarriesAnswersAndFeedback(t *testing.T) {
	base := PromptInput{Phase: agents.PhaseAnalysis}
	first := Prompt(base)
	if !strings.Contains(first, questionsHeading) || strings.Contains(first, "Revise the plan") || strings.Contains(first, "You asked") {
		t.Errorf("first analysis prompt: %q", first)
	}
	again := base
	again.Asked, again.Plan, again.Feedback = "- Which language?", "1. hello.go", "@alfred reuse the logger"
	p := Prompt(again)
	for _, want := range []string{"You asked these questions", "- Which language?", "Revise the plan", "reuse the logger", "1. hello.go"} {
		if !strings.Contains(p, want) {
			t.Errorf("revision prompt lacks %q", want)
		}
	}
}
