package run

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/state"
)

// analysisReply is an analysis as an agent answers it.
const analysisReply = "## Functional analysis\n\nUsers want a greeting.\n\n## Implementation plan\n\n1. Add hello.go.\n2. Test it."

var handoffFrom = state.RunHandoff{Adapter: "claude-code", NativeSessionID: "sess-1"}

// handoffRuns is an analysis run and a development run of one session.
func handoffRuns() []state.Run {
	return []state.Run{
		{Phase: "analysis", Status: state.RunSucceeded, Result: analysisReply, Steps: []state.RunStep{
			{Kind: "prompt", Text: "You are Alfred, a teammate working on issue #7.\n# Issue #7: Add a greeting"},
			{Kind: "assistant", Text: analysisReply},
		}},
		{Phase: "development", Status: state.RunFailed, Outcome: "failed: tests do not pass", Steps: []state.RunStep{
			{Kind: "prompt", Text: "Implement the plan"},
			{Kind: "tool_call", Tool: "Bash", Args: `{"command":"go test"}`},
			{Kind: "tool_result", Tool: "Bash", Text: "FAIL demo 0.01s", Failed: true},
			{Kind: "edit", Tool: "Write", Path: "hello.go"},
			{Kind: "edit", Tool: "Edit", Path: "hello.go"},
			{Kind: "edit", Tool: "Write", Path: "hello_test.go"},
			{Kind: "assistant", Text: "I chose fmt.Println over log: the greeting goes to stdout."},
		}},
	}
}

// TestHandoff: what a handoff says of a session, and what it leaves out.
func TestHandoff(t *testing.T) {
	big := strings.Repeat("word ", 3000)
	tests := []struct {
		name    string
		runs    []state.Run
		want    []string
		notWant []string
	}{
		{"no runs", nil, nil, nil},
		{"runs without steps or result", []state.Run{{Phase: "development", Status: state.RunSucceeded}}, nil, nil},
		{"a session", handoffRuns(), []string{
			HandoffHeading, "made by claude-code in session sess-1",
			"> **Goal (the session's first prompt)**\n> You are Alfred, a teammate working on issue #7.\n> # Issue #7: Add a greeting\n",
			"> **Plan**\n> 1. Add hello.go.\n> 2. Test it.\n",
			"> **Files touched**\n> - hello.go\n> - hello_test.go\n",
			"> **Decisions (the last answers)**\n> - I chose fmt.Println over log",
			"> - Bash failed: FAIL demo 0.01s\n", "> - the last run (development) ended failed: failed: tests do not pass",
		}, []string{"Implement the plan", "go test\"}"}},
		{"secrets stay redacted", []state.Run{{Phase: "development", Status: state.RunSucceeded, Steps: []state.RunStep{
			{Kind: "prompt", Text: "use the key " + redact.Mark},
			{Kind: "assistant", Text: "done with " + redact.Mark},
		}}}, []string{"use the key " + redact.Mark, "done with " + redact.Mark}, nil},
		{"bounded", []state.Run{{Phase: "analysis", Status: state.RunSucceeded, Result: big, Steps: []state.RunStep{
			{Kind: "prompt", Text: big}, {Kind: "assistant", Text: big},
		}}, {Phase: "development", Status: state.RunSucceeded, Steps: manySteps(big)}}, []string{"…"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Handoff(handoffFrom, tt.runs)
			if len(got) > MaxHandoffBytes {
				t.Errorf("%d bytes, over %d", len(got), MaxHandoffBytes)
			}
			if tt.want == nil && got != "" {
				t.Fatalf("handoff %q, want none", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("handoff lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("handoff has %q:\n%s", w, got)
				}
			}
			checkQuoted(t, got)
		})
	}
}

// checkQuoted: past the heading's paragraph, every line is quoted.
func checkQuoted(t *testing.T, h string) {
	t.Helper()
	if h == "" {
		return
	}
	_, body, _ := strings.Cut(h, "\n\n")
	_, body, _ = strings.Cut(body, "\n\n")
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if !strings.HasPrefix(line, ">") {
			t.Errorf("line %q is not quoted", line)
		}
	}
}

func manySteps(text string) []state.RunStep {
	var out []state.RunStep
	for i := range 200 {
		out = append(out, state.RunStep{Kind: "edit", Path: strings.Repeat("d/", i%7) + "f.go" + strings.Repeat("x", i)},
			state.RunStep{Kind: "tool_result", Tool: "Bash", Text: text, Failed: true},
			state.RunStep{Kind: "assistant", Text: text})
	}
	return out
}

// TestHandsOver: the fresh reasons that carry a handoff are the resolver's
// own, known before the prompt is built, where an earlier session exists.
func TestHandsOver(t *testing.T) {
	tests := []struct {
		reason agents.FallbackReason
		want   bool
	}{
		{agents.FallbackAdapterChanged, true},
		{agents.FallbackResumeFailed, true},
		{agents.FallbackNoPriorSession, false},
		{agents.FallbackStateMissing, false}, // known only once the adapter ran
		{agents.FallbackNone, false},
	}
	for _, tt := range tests {
		if got := handsOver(tt.reason); got != tt.want {
			t.Errorf("handsOver(%q) = %v, want %v", tt.reason, got, tt.want)
		}
	}
}
