package lifecycle

import (
	"slices"
	"strings"
)

// Markers of the analysis output, which the analysis prompt asks for, so
// that its end splits into the description section, the plan comment or the
// questions comment.
const (
	AnalysisHeading  = "## Functional analysis"
	PlanHeading      = "## Implementation plan"
	QuestionsHeading = "## Questions"
)

// Analysis is the output of an analysis run, split by its headings.
type Analysis struct {
	Functional string // for the description section
	Plan       string // for the plan comment
	Questions  string // set, with no Plan, when the agent needs answers first
}

// ParseAnalysis splits the output of an analysis run. Without any heading,
// the whole text is the plan. A plan wins over questions: questions written
// next to a plan stay in the plan, for the validation to settle.
func ParseAnalysis(text string) Analysis {
	type mark struct {
		at   int
		head string
	}
	var marks []mark
	for _, h := range []string{AnalysisHeading, PlanHeading, QuestionsHeading} {
		if i := headingAt(text, h); i >= 0 {
			marks = append(marks, mark{i, h})
		}
	}
	if len(marks) == 0 {
		return Analysis{Plan: strings.TrimSpace(text)}
	}
	slices.SortFunc(marks, func(a, b mark) int { return a.at - b.at })
	var a Analysis
	for i, m := range marks {
		end := len(text)
		if i+1 < len(marks) {
			end = marks[i+1].at
		}
		part := strings.TrimSpace(text[m.at+len(m.head) : end])
		switch m.head {
		case AnalysisHeading:
			a.Functional = part
		case PlanHeading:
			a.Plan = part
		case QuestionsHeading:
			a.Questions = part
		}
	}
	if a.Plan != "" {
		if a.Questions != "" {
			a.Plan += "\n\n" + QuestionsHeading + "\n\n" + a.Questions
		}
		a.Questions = ""
	}
	if a.Plan == "" && a.Questions == "" {
		a.Plan = strings.TrimSpace(text) // headings without content: keep it all
	}
	return a
}

// headingAt finds heading h at the start of a line.
func headingAt(text, h string) int {
	for i := 0; ; {
		j := strings.Index(text[i:], h)
		if j < 0 {
			return -1
		}
		at := i + j
		end := at + len(h)
		if (at == 0 || text[at-1] == '\n') && (end == len(text) || text[end] == '\n' || text[end] == '\r' || text[end] == ' ') {
			return at
		}
		i = end
	}
}
