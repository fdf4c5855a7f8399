package bot

import (
	"fmt"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
)

// PromptInput is the full context of a phase (the issue body carries the
// functional analysis in its managed section). The prompt is the same whether
// the agent session is new, resumed or absent (DESIGN.md section 4, rule 6):
// a resumed agent gets the whole context again.
type PromptInput struct {
	Phase    agents.Phase
	Project  forges.Project
	Issue    forges.Issue
	Branch   string
	Plan     string                 // the implementation plan, once posted
	Thread   []forges.Comment       // what people wrote in the issue thread
	Question string                 // answer: what to answer
	CI       []forges.Check         // ci_fix: the failing checks
	Review   string                 // review_fix: the review feedback
	Conflict []string               // conflict_resolution: files with conflicts
	Reviews  []forges.ReviewComment // review_fix: line comments
}

// Markers of the analysis output, so the bot can split it into the
// description section and the plan comment.
const (
	analysisHeading = "## Functional analysis"
	planHeading     = "## Implementation plan"
)

// Prompt renders the instructions for one phase.
func Prompt(in PromptInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are Alfred, a teammate working on issue #%d of %s.\n\n", in.Issue.Number, in.Project.FullName())
	fmt.Fprintf(&b, "# Issue #%d: %s\n\n%s\n\n", in.Issue.Number, in.Issue.Title, strings.TrimSpace(in.Issue.Body))
	if in.Plan != "" {
		fmt.Fprintf(&b, "%s\n\n%s\n\n", planHeading, strings.TrimSpace(in.Plan))
	}
	if len(in.Thread) > 0 {
		b.WriteString("# Discussion\n\n")
		for _, c := range in.Thread {
			fmt.Fprintf(&b, "@%s wrote:\n%s\n\n", c.Author, strings.TrimSpace(c.Body))
		}
	}
	b.WriteString("# Your task\n\n")
	switch in.Phase {
	case agents.PhaseAnalysis:
		fmt.Fprintf(&b, "Do not change any file. Read the code in the working directory and answer with two sections, exactly these headings:\n\n%s\n(what the issue asks for, in the users' terms: behaviour, edge cases, open questions)\n\n%s\n(the steps to implement it: files, functions, tests)\n", analysisHeading, planHeading)
	case agents.PhaseDevelopment:
		fmt.Fprintf(&b, "Implement the plan in the working directory, on branch %s, with tests. Leave the changes in the working tree or commit them; I push them and open the merge request. End with a short summary of what you changed, for the merge request description.\n", in.Branch)
	case agents.PhaseCIFix:
		b.WriteString("CI failed on the merge request. Fix the cause in the working directory. Failing checks:\n\n")
		for _, c := range in.CI {
			fmt.Fprintf(&b, "- %s: %s %s %s\n", c.Name, c.State, c.Description, c.URL)
		}
		b.WriteString("\nEnd with a short summary of the fix.\n")
	case agents.PhaseReviewFix:
		b.WriteString("A reviewer left feedback on the merge request. Address it in the working directory:\n\n")
		b.WriteString(strings.TrimSpace(in.Review) + "\n")
		for _, c := range in.Reviews {
			fmt.Fprintf(&b, "- %s:%d (@%s): %s\n", c.Path, c.Line, c.Author, strings.TrimSpace(c.Body))
		}
		b.WriteString("\nEnd with a short summary of what you changed.\n")
	case agents.PhaseConflictResolution:
		b.WriteString("Merging the target branch into this branch left conflicts. Resolve every conflict marker, keeping both sides' intent, in:\n\n")
		for _, f := range in.Conflict {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	case agents.PhaseAnswer:
		b.WriteString("Do not change any file. Answer this question from the thread, plainly and briefly, as a teammate would:\n\n")
		b.WriteString(strings.TrimSpace(in.Question) + "\n")
	}
	return b.String()
}

// SplitAnalysis separates the analysis output into the functional analysis
// (for the description section) and the plan (for the plan comment). Without
// the plan heading, the whole text is the plan.
func SplitAnalysis(text string) (analysis, plan string) {
	i := strings.Index(text, planHeading)
	if i < 0 {
		return "", strings.TrimSpace(text)
	}
	analysis = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text[:i]), analysisHeading))
	plan = strings.TrimSpace(text[i+len(planHeading):])
	return analysis, plan
}
