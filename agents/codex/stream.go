package codex

import (
	"encoding/json"
	"strconv"

	"github.com/alchemic-studio/alfred/agents"
)

// Codex's stream (`exec --json`, 0.171.0, recorded in testdata/): one JSON
// event a line. thread.started {thread_id} first, turn.started, then
// item.started / item.updated / item.completed {item}, and turn.completed
// {usage} or turn.failed {error}; error {message} on the way. The items
// (exec_events.rs of codex-rs/exec): agent_message {text}, reasoning,
// command_execution {command, aggregated_output, exit_code, status},
// file_change {changes:[{path,kind}], status}, mcp_tool_call {server, tool,
// arguments, result, error, status}, web_search {query}, todo_list, and
// error {message} (a warning that does not end the turn).

// streamItem is the item of an item.* event.
type streamItem struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Message   string          `json:"message"`
	Command   string          `json:"command"`
	Output    string          `json:"aggregated_output"`
	ExitCode  *int            `json:"exit_code"`
	Status    string          `json:"status"`
	Query     string          `json:"query"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
}

// streamEvent is one line of the stream.
type streamEvent struct {
	Type    string      `json:"type"`
	Message string      `json:"message"`
	Item    *streamItem `json:"item"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// shellTool names codex's command executions in steps (its shell tool).
const shellTool = "shell"

// DecodeLine implements agents.StreamDecoder: commands when they start and
// their output when they end, the files a change wrote, MCP calls and web
// searches, the agent's messages, errors; the thread, turn and usage events
// give no step.
func (CLI) DecodeLine(line []byte) ([]agents.Step, bool) {
	var e streamEvent
	if !agents.JSONObject(line, &e) || e.Type == "" {
		return nil, false
	}
	switch e.Type {
	case "thread.started", "turn.started", "turn.completed":
		return nil, true
	case "turn.failed":
		if e.Error != nil {
			return agents.Note("error: " + e.Error.Message), true
		}
		return agents.Note("the turn failed"), true
	case "error":
		return agents.Note("error: " + e.Message), true
	case "item.started":
		return itemStarted(e.Item), true
	case "item.completed":
		return itemCompleted(e.Item), true
	case "item.updated":
		return nil, true
	}
	return agents.Note(e.Type), true
}

// itemStarted: the calls, as they start.
func itemStarted(it *streamItem) []agents.Step {
	if it == nil {
		return nil
	}
	switch it.Type {
	case "command_execution":
		args, _ := json.Marshal(map[string]string{"command": it.Command})
		return []agents.Step{agents.CallStep(shellTool, it.ID, args)}
	case "mcp_tool_call":
		return []agents.Step{agents.CallStep(it.Server+"."+it.Tool, it.ID, it.Arguments)}
	case "web_search":
		args, _ := json.Marshal(map[string]string{"query": it.Query})
		return []agents.Step{agents.CallStep("web_search", it.ID, args)}
	}
	return nil
}

// itemCompleted: messages, results and the files changed.
func itemCompleted(it *streamItem) []agents.Step {
	if it == nil {
		return nil
	}
	switch it.Type {
	case "agent_message":
		return agents.Steps(agents.StepAssistant, it.Text)
	case "command_execution":
		failed := it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0)
		text := it.Output
		if failed && it.ExitCode != nil && text == "" {
			text = "exit code " + strconv.Itoa(*it.ExitCode)
		}
		return []agents.Step{agents.ResultStep(shellTool, it.ID, text, failed)}
	case "file_change":
		var steps []agents.Step
		for _, c := range it.Changes {
			if it.Status != "failed" && c.Path != "" {
				steps = append(steps, agents.EditStep("apply_patch", it.ID, c.Path))
			}
		}
		if it.Status == "failed" {
			steps = append(steps, agents.ResultStep("apply_patch", it.ID, "the change was not applied", true))
		}
		return steps
	case "mcp_tool_call":
		text, failed := "", it.Status == "failed"
		if len(it.Result) > 0 && string(it.Result) != "null" {
			text = agents.Args(it.Result)
		}
		if it.Error != nil {
			text, failed = it.Error.Message, true
		}
		return []agents.Step{agents.ResultStep(it.Server+"."+it.Tool, it.ID, text, failed)}
	case "error":
		return agents.Note("error: " + it.Message)
	}
	return nil
}
