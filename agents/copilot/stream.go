package copilot

import (
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// Copilot's stream (`--output-format json`, 1.0.102, recorded in
// testdata/): one JSON event a line, {"type","data","ephemeral",…}, the
// shapes of its session's events.jsonl (transcript.go) plus ephemeral ones
// (deltas, model calls, background tasks). assistant.message carries the
// answer and its tool requests; tool.execution_start {toolName, arguments}
// a call as it starts, tool.execution_complete {success, result, error}
// its end; session.error a failure; the last line is the result
// {sessionId, exitCode, usage}.

// streamBookkeeping are the events that are not ephemeral and give no step
// on the live page.
var streamBookkeeping = []string{"user.message", "result", "assistant.turn_start", "assistant.turn_end", "assistant.usage", "system.message"}

// DecodeLine implements agents.StreamDecoder: answers, calls as they
// start, their results, errors; ephemeral events, session bookkeeping and
// the result give no step.
func (CLI) DecodeLine(line []byte) ([]agents.Step, bool) {
	var e entry
	if !agents.JSONObject(line, &e) || e.Type == "" {
		return nil, false
	}
	d := e.Data
	switch e.Type {
	case "assistant.message":
		return agents.Steps(agents.StepAssistant, d.Content), true
	case "tool.execution_start":
		return []agents.Step{agents.CallStep(d.ToolName, d.ToolCallID, d.Arguments)}, true
	case "tool.execution_complete":
		return e.resultSteps(time.Time{}, nil), true // no call known: no tool, no edit
	case "session.error", "session.warning":
		return agents.Note(strings.TrimPrefix(e.Type, "session.") + ": " + d.Message), true
	}
	if e.Ephemeral || slices.Contains(streamBookkeeping, e.Type) || slices.Contains(bookkeeping, e.Type) ||
		strings.HasPrefix(e.Type, "session.") || strings.HasPrefix(e.Type, "model.") {
		return nil, true
	}
	return agents.Note(e.Type), true
}
