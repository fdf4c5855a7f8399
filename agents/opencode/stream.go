package opencode

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
)

// OpenCode's stream (`run --format json`, 1.18.33, recorded in testdata/):
// one JSON event a line, each with the sessionID. step_start and
// step_finish {part: {tokens, cost}} frame each model step; text {part:
// {text}} is an answer; tool_use {part: {tool, callID, state: {status,
// input, output, error}}} comes once the call has ended, its result with
// it; error {error: {name, data: {message}}}.

// streamPart is the part of an event.
type streamPart struct {
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	Text   string `json:"text"`
	State  *struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output string          `json:"output"`
		Error  string          `json:"error"`
	} `json:"state"`
}

// streamEvent is one line of the stream.
type streamEvent struct {
	Type  string      `json:"type"`
	Part  *streamPart `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
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
		return toolSteps(e.Part), true
	case "error":
		if e.Error == nil {
			return agents.Note("error"), true
		}
		return agents.Note("error: " + strings.TrimSpace(e.Error.Name+": "+e.Error.Data.Message)), true
	case "reasoning":
		return nil, true
	}
	return agents.Note(e.Type), true
}

// toolSteps: the call, its result, and the file an edit tool wrote.
func toolSteps(p *streamPart) []agents.Step {
	if p == nil || p.State == nil {
		return nil
	}
	st := p.State
	steps := []agents.Step{agents.CallStep(p.Tool, p.CallID, st.Input)}
	switch st.Status {
	case "completed":
		steps = append(steps, agents.ResultStep(p.Tool, p.CallID, st.Output, false))
		var in struct {
			FilePath string `json:"filePath"`
		}
		if json.Unmarshal(st.Input, &in) == nil && in.FilePath != "" && slices.Contains(editTools, p.Tool) {
			steps = append(steps, agents.Step{Kind: agents.StepEdit, Tool: p.Tool, CallID: p.CallID, Path: in.FilePath})
		}
	case "error":
		steps = append(steps, agents.ResultStep(p.Tool, p.CallID, st.Error, true))
	}
	return steps
}
