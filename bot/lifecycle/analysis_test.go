package lifecycle

import "testing"

func TestParseAnalysis(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Analysis
	}{
		{"analysis and plan", "## Functional analysis\n\nGreet.\n\n## Implementation plan\n\n1. hello.go",
			Analysis{Functional: "Greet.", Plan: "1. hello.go"}},
		{"questions instead of a plan", "## Functional analysis\n\nGreet whom?\n\n## Questions\n\n- Which language?",
			Analysis{Functional: "Greet whom?", Questions: "- Which language?"}},
		{"questions next to a plan stay in the plan", "## Implementation plan\n\n1. x\n\n## Questions\n\n- y?",
			Analysis{Plan: "1. x\n\n## Questions\n\n- y?"}},
		{"no headings: all plan", "Just do it.", Analysis{Plan: "Just do it."}},
		{"a deeper heading is text", "## Functional analysis\n\nA\n\n### Questions\n\nnone\n\n## Implementation plan\n\nB",
			Analysis{Functional: "A\n\n### Questions\n\nnone", Plan: "B"}},
		{"a heading inside a line is text", "See ## Questions below.\n\n## Implementation plan\n\nB",
			Analysis{Plan: "B"}},
		{"empty sections keep the text", "## Implementation plan\n", Analysis{Plan: "## Implementation plan"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseAnalysis(tt.in); got != tt.want {
				t.Errorf("ParseAnalysis = %+v, want %+v", got, tt.want)
			}
		})
	}
}
