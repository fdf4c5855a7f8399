package copilot

import (
	"encoding/json"
	"slices"
	"strings"

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
	var e struct {
		Type      string `json:"type"`
		Ephemeral bool   `json:"ephemeral"`
		Data      struct {
			Content    string          `json:"content"`
			Message    string          `json:"message"`
			ToolCallID string          `json:"toolCallId"`
			ToolName   string          `json:"toolName"`
			Arguments  json.RawMessage `json:"arguments"`
			Success    *bool           `json:"success"`
			Result     struct {
				Content string `json:"content"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		} `json:"data"`
	}
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
		text := d.Result.Content
		if text == "" && len(d.Error) > 0 {
			text = errorText(d.Error)
		}
		return []agents.Step{agents.ResultStep("", d.ToolCallID, text, d.Success != nil && !*d.Success)}, true
	case "session.error", "session.warning":
		return agents.Note(strings.TrimPrefix(e.Type, "session.") + ": " + d.Message), true
	}
	if e.Ephemeral || slices.Contains(streamBookkeeping, e.Type) || slices.Contains(bookkeeping, e.Type) ||
		strings.HasPrefix(e.Type, "session.") || strings.HasPrefix(e.Type, "model.") {
		return nil, true
	}
	return agents.Note(e.Type), true
}
