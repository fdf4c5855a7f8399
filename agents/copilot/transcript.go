package copilot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// Copilot's transcript, as 1.0.102 writes it (recorded in
// testdata/transcript): <session-state>/<session id>/events.jsonl, one
// event a line, {"type","data","id","timestamp","parentId"}, which a
// resume appends to. "user.message" is a prompt, "assistant.message" an
// answer with its tool requests, "tool.execution_complete" a tool's
// result (the file of a create or edit in the request's path). Session,
// turn, usage and system events are bookkeeping and give no step.

// bookkeeping are the event types that give no step.
var bookkeeping = []string{
	"session.start", "session.resume", "session.shutdown", "session.usage_record", "session.skills_loaded",
	"session.info", "session.model_change", "assistant.turn_start", "assistant.turn_end", "system.message",
	"assistant.usage", "tool.execution_start",
}

// editTools are the tools that write the file named by their "path".
var editTools = []string{"create", "edit", "str_replace_editor", "write"}

// ReadTranscript implements agents.TranscriptReader: stateDir is the
// folder mounted at ~/.copilot/session-state, read as untrusted data
// (agents.SessionFiles).
func (CLI) ReadTranscript(stateDir, id string) ([]agents.Step, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("copilot: transcript: invalid session id %q", id)
	}
	data, err := agents.NewSessionFiles(stateDir).Read(id + "/events.jsonl")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("copilot: events of session %s in %s: %w", id, stateDir, agents.ErrNoTranscript)
	}
	if err != nil {
		return nil, fmt.Errorf("copilot: %w", err)
	}
	return parseEvents(data), nil
}

// entry is one line of events.jsonl, and one event of the stream
// (stream.go: ephemeral ones, a call's start with its tool and arguments).
type entry struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Ephemeral bool   `json:"ephemeral"`
	Data      struct {
		Content      string          `json:"content"`
		Message      string          `json:"message"`
		ToolRequests []request       `json:"toolRequests"`
		ToolCallID   string          `json:"toolCallId"`
		ToolName     string          `json:"toolName"`
		Arguments    json.RawMessage `json:"arguments"`
		Success      *bool           `json:"success"`
		Result       struct {
			Content string `json:"content"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	} `json:"data"`
}

// request is a tool request of an assistant message.
type request struct {
	ID        string          `json:"toolCallId"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// parseEvents turns the lines into steps.
func parseEvents(data []byte) []agents.Step {
	var steps []agents.Step
	calls := map[string]request{}
	for _, line := range agents.TranscriptLines(data) {
		var e entry
		if json.Unmarshal(line, &e) != nil {
			steps = append(steps, agents.UnreadableStep())
			continue
		}
		steps = append(steps, e.steps(calls)...)
	}
	return steps
}

// steps are the event's steps; calls remembers the tool requests by id.
func (e entry) steps(calls map[string]request) []agents.Step {
	at := agents.ParseTime(e.Timestamp)
	switch e.Type {
	case "user.message":
		if s, ok := agents.TextStep(agents.StepPrompt, e.Data.Content, at); ok {
			return []agents.Step{s}
		}
		return nil
	case "assistant.message":
		return e.assistantSteps(at, calls)
	case "tool.execution_complete":
		return e.resultSteps(at, calls)
	case "session.error":
		return []agents.Step{agents.OtherStep(e.Type+": "+e.Data.Message, at)}
	}
	if slices.Contains(bookkeeping, e.Type) {
		return nil
	}
	return []agents.Step{agents.OtherStep(e.Type, at)}
}

// assistantSteps: the answer's text, then its tool calls.
func (e entry) assistantSteps(at time.Time, calls map[string]request) []agents.Step {
	var steps []agents.Step
	if s, ok := agents.TextStep(agents.StepAssistant, e.Data.Content, at); ok {
		steps = append(steps, s)
	}
	for _, r := range e.Data.ToolRequests {
		calls[r.ID] = r
		steps = append(steps, agents.CallStep(r.Name, r.ID, r.Arguments).Timed(at))
	}
	return steps
}

// resultSteps: the tool's result, then the file it wrote for a
// successful edit tool; calls (read only, nil for the stream's lines) has
// the request of the call.
func (e entry) resultSteps(at time.Time, calls map[string]request) []agents.Step {
	r := calls[e.Data.ToolCallID]
	failed := e.Data.Success != nil && !*e.Data.Success
	text := e.Data.Result.Content
	if text == "" && len(e.Data.Error) > 0 {
		text = errorText(e.Data.Error)
	}
	steps := []agents.Step{agents.ResultStep(r.Name, e.Data.ToolCallID, text, failed).Timed(at)}
	if p := pathArg(r.Arguments); !failed && p != "" && slices.Contains(editTools, r.Name) {
		steps = append(steps, agents.EditStep(r.Name, r.ID, p).Timed(at))
	}
	return steps
}

// errorText is a tool error: a string, or an object's message.
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Message
}

// pathArg is the "path" argument of a call.
func pathArg(args json.RawMessage) string {
	var a struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(args, &a)
	return a.Path
}
