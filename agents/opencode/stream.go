package opencode

import (
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// OpenCode's stream (`run --format json`, 1.18.33, recorded in testdata/):
// one JSON event a line, each with the sessionID. step_start and
// step_finish {part: {tokens, cost}} frame each model step; text {part:
// {text}} is an answer; tool_use {part: {tool, callID, state: {status,
// input, output, error}}} comes once the call has ended, its result with
// it; error {error: {name, data: {message}}}.

// streamEvent is one line of the stream; its part is a part of the
// session's database (transcript.go).
type streamEvent struct {
	Type  string    `json:"type"`
	Part  *part     `json:"part"`
	Error *apiError `json:"error"`
}

// DecodeLine implements agents.StreamDecoder: answers; each tool call with
// its result, and the file an edit tool wrote; errors; the step frames give
// no step.
func (CLI) DecodeLine(line []byte) ([]agents.Step, bool) {
	var e streamEvent
	if !agents.JSONObject(line, &e) || e.Type == "" {
		return nil, false
	}
	switch e.Type {
	case "step_start", "step_finish":
		return nil, true
	case "text":
		if e.Part == nil {
			return nil, true
		}
		return agents.Steps(agents.StepAssistant, e.Part.Text), true
	case "tool_use":
		if e.Part == nil || e.Part.State.Status == "" {
			return nil, true
		}
		return e.Part.toolSteps(time.Time{}, time.Time{}), true
	case "error":
		if e.Error == nil {
			return agents.Note("error"), true
		}
		return agents.Note("error: " + e.Error.text()), true
	case "reasoning":
		return nil, true
	}
	return agents.Note(e.Type), true
}
