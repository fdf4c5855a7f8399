package claudecode

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// Claude Code's stream (`-p --output-format stream-json --verbose`, 2.1.197,
// recorded in testdata/): one JSON event a line. The first is
// {"type":"system","subtype":"init","session_id":…}; "assistant" events
// carry the model's text and tool_use blocks, "user" events the tool
// results (tool_result blocks; a file an edit tool wrote in
// tool_use_result.filePath); the last is {"type":"result",…} with the
// answer, the session id, the usage and the cost (Parse reads it).

// event is one line of the stream.
type event struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ToolUseResult json.RawMessage `json:"tool_use_result"`
	IsError       bool            `json:"is_error"`
	Result        string          `json:"result"`
	Errors        []string        `json:"errors"`
}

// DecodeLine implements agents.StreamDecoder: assistant text and tool
// calls, tool results and the files they wrote; the init and a successful
// result give no step, a failed result a note with its error.
func (CLI) DecodeLine(line []byte) ([]agents.Step, bool) {
	var e event
	if !agents.JSONObject(line, &e) || e.Type == "" {
		return nil, false
	}
	switch e.Type {
	case "system":
		if e.Subtype == "init" {
			return nil, true
		}
		return agents.Note("system: " + e.Subtype), true
	case "assistant":
		return assistantSteps(e.Message.Content, time.Time{}, map[string]call{}), true
	case "user":
		return streamResults(e), true
	case "result":
		if !e.IsError {
			return nil, true
		}
		text := e.Result
		if text == "" && len(e.Errors) > 0 {
			text = e.Errors[0]
		}
		return agents.Note("error: " + text), true
	case "stream_event", "rate_limit_event":
		return nil, true
	}
	return agents.Note(e.Type), true
}

// streamResults: the tool results of a user event, each followed by the
// file it wrote when the result names one; the prompt (string content)
// gives no step, the page has it. Not userSteps: a line has no call map, so
// the file is the one the result names, whatever the tool, and the user's
// text blocks are no steps.
func streamResults(e event) []agents.Step {
	var blocks []block
	if json.Unmarshal(e.Message.Content, &blocks) != nil {
		return nil
	}
	var steps []agents.Step
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		steps = append(steps, resultStep(b, "", time.Time{}))
		if p := editedFile(e.ToolUseResult); p != "" && !b.IsError && !slices.ContainsFunc(steps, isEdit) {
			steps = append(steps, agents.EditStep("", b.ToolUseID, p))
		}
	}
	return steps
}

func isEdit(s agents.Step) bool { return s.Kind == agents.StepEdit }
