package grok

import (
	"encoding/json"

	"github.com/alchemic-studio/alfred/agents"
)

// Grok's output: @vibe-kit/grok-cli 0.0.34 has no streaming format (`grok
// --help` lists no output option). Its headless path prints the run's
// messages, one OpenAI-style message a line ({"role":"user"}, assistant
// messages with their tool_calls, {"role":"tool","tool_call_id","content"}),
// only once the whole conversation has ended. So its lines are decoded
// into steps, shown at the end of the run, and the CLI does not report
// progress: its silence while it works is no stall (ReportsProgress).

// streamMessage is one line of the output.
type streamMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// DecodeLine implements agents.StreamDecoder: the assistant's text and tool
// calls, the tools' results; the user's prompt gives no step, and an
// answer that is an API error (which exits 0) is a note.
func (CLI) DecodeLine(line []byte) ([]agents.Step, bool) {
	var m streamMessage
	if !agents.JSONObject(line, &m) || m.Role == "" {
		return nil, false
	}
	switch m.Role {
	case "user":
		return nil, true
	case "tool":
		return []agents.Step{agents.ResultStep("", m.ToolCallID, m.Content, false)}, true
	case "assistant":
		if len(m.ToolCalls) > 0 && m.Content == "Using tools to help you..." {
			m.Content = "" // grok's own filler before its calls
		}
		steps := agents.Steps(agents.StepAssistant, m.Content)
		if len(steps) == 1 && isError(m.Content) {
			steps = agents.Note(m.Content)
		}
		for _, c := range m.ToolCalls {
			steps = append(steps, agents.CallStep(c.Function.Name, c.ID, c.Function.Arguments))
		}
		return steps, true
	}
	return agents.Note(m.Role), true
}

// ReportsProgress implements agents.ProgressReporter: grok prints its
// messages only once it has ended.
func (CLI) ReportsProgress() bool { return false }
