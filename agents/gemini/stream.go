package gemini

import (
	"encoding/json"

	"github.com/alchemic-studio/alfred/agents"
)

// Gemini's stream (`--output-format stream-json`, 0.61.0, recorded in
// testdata/): one JSON event a line. init {session_id, model}; message
// {role, content, delta} (the user's prompt, then the assistant's text in
// deltas); tool_use {tool_name, tool_id, parameters}; tool_result {tool_id,
// status, output, error}; error {severity, message} (a warning or an error
// on the way); result {status, error, stats} last.

// event is one line of the stream.
type event struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Message    string          `json:"message"`
	Error      *errorObject    `json:"error"`
	Stats      struct {
		Models map[string]struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"models"`
	} `json:"stats"`
}

// DecodeLine implements agents.StreamDecoder: the assistant's text (each
// delta as it comes, Partial: the page adds it to the answer), tool calls and results, errors; the init, the user's
// prompt and a successful result give no step.
func (CLI) DecodeLine(line []byte) ([]agents.Step, bool) {
	var e event
	if !agents.JSONObject(line, &e) || e.Type == "" {
		return nil, false
	}
	switch e.Type {
	case "init":
		return nil, true
	case "message":
		if e.Role != "assistant" {
			return nil, true
		}
		steps := agents.Steps(agents.StepAssistant, e.Content)
		for i := range steps {
			steps[i].Partial = e.Delta // the answer comes in deltas
		}
		return steps, true
	case "tool_use":
		return []agents.Step{agents.CallStep(e.ToolName, e.ToolID, e.Parameters)}, true
	case "tool_result":
		text, failed := e.Output, e.Status != "success"
		if e.Error != nil && e.Error.Message != "" {
			text = e.Error.Message
		}
		return []agents.Step{agents.ResultStep("", e.ToolID, text, failed)}, true
	case "error":
		return agents.Note("error: " + e.Message), true
	case "result":
		if e.Error != nil && e.Error.Message != "" {
			return agents.Note("error: " + e.Error.Message), true
		}
		return nil, true
	}
	return agents.Note(e.Type), true
}
