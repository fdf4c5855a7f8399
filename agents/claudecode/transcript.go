package claudecode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// Claude Code's transcript, as 2.1.197 writes it (recorded in
// testdata/transcript): one JSON Lines file a session,
// <projects>/<cwd slug>/<session id>.jsonl, one entry a line. "user"
// entries carry a prompt (string content) or tool results (tool_result
// blocks, the file a Write or Edit wrote in toolUseResult.filePath);
// "assistant" entries carry text and tool_use blocks. The other types are
// bookkeeping (title, queue, last prompt, mode, attachments of injected
// context) and give no step.

// bookkeeping are the entry types that give no step.
var bookkeeping = []string{
	"custom-title", "agent-name", "queue-operation", "last-prompt", "mode",
	"attachment", "file-history-snapshot", "summary", "permission-mode",
}

// editTools are the tools that write files, and the argument naming the file.
var editTools = map[string]string{"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

// ReadTranscript implements agents.TranscriptReader: stateDir is the
// folder mounted at ~/.claude/projects, read as untrusted data
// (agents.SessionFiles).
func (CLI) ReadTranscript(stateDir, id string) ([]agents.Step, error) {
	files := agents.NewSessionFiles(stateDir)
	rel, err := transcriptFile(files, stateDir, id)
	if err != nil {
		return nil, err
	}
	data, err := files.Read(rel)
	if err != nil {
		return nil, fmt.Errorf("claude code: %w", err)
	}
	return parseTranscript(data), nil
}

// transcriptFile is the session's file in any project folder (the newest,
// should a resume from another cwd have made a second one), relative to
// the session folder.
func transcriptFile(files *agents.SessionFiles, stateDir, id string) (string, error) {
	if id == "" || strings.ContainsAny(id, `/\*?[`) || strings.HasPrefix(id, ".") {
		return "", fmt.Errorf("claude code: transcript: invalid session id %q", id)
	}
	matches, err := files.Glob("*/" + id + ".jsonl")
	if err != nil {
		return "", fmt.Errorf("claude code: %w", err)
	}
	var newest string
	var at time.Time
	for _, m := range matches {
		if t, err := files.ModTime(m); err == nil && (newest == "" || t.After(at)) {
			newest, at = m, t
		}
	}
	if newest == "" {
		return "", fmt.Errorf("claude code: transcript of session %s in %s: %w", id, stateDir, agents.ErrNoTranscript)
	}
	return newest, nil
}

// entry is one line of the transcript.
type entry struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	Timestamp string `json:"timestamp"`
	IsMeta    bool   `json:"isMeta"`
	Message   struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
}

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// parseTranscript turns the lines into steps.
func parseTranscript(data []byte) []agents.Step {
	var steps []agents.Step
	tools := map[string]call{}
	for _, line := range agents.TranscriptLines(data) {
		var e entry
		if json.Unmarshal(line, &e) != nil {
			steps = append(steps, agents.UnreadableStep())
			continue
		}
		steps = append(steps, e.steps(tools)...)
	}
	return steps
}

// call is a tool call: its tool, and the file it names when it edits one.
type call struct{ tool, path string }

// newCall reads the call of a tool_use block.
func newCall(b block) call {
	c := call{tool: b.Name}
	if arg := editTools[b.Name]; arg != "" {
		var in map[string]any
		_ = json.Unmarshal(b.Input, &in)
		c.path, _ = in[arg].(string)
	}
	return c
}

// steps are the entry's steps; tools remembers the calls by id.
func (e entry) steps(tools map[string]call) []agents.Step {
	at := agents.ParseTime(e.Timestamp)
	switch {
	case slices.Contains(bookkeeping, e.Type):
		return nil
	case e.Type == "user" && e.IsMeta:
		return []agents.Step{agents.OtherStep("user (meta)", at)}
	case e.Type == "user":
		return e.userSteps(at, tools)
	case e.Type == "assistant":
		return assistantSteps(e.Message.Content, at, tools)
	case e.Subtype != "":
		return []agents.Step{agents.OtherStep(e.Type+"/"+e.Subtype, at)}
	}
	return []agents.Step{agents.OtherStep(e.Type, at)}
}

// userSteps: a prompt, or tool results (each followed by the file it
// wrote, for a successful edit tool).
func (e entry) userSteps(at time.Time, tools map[string]call) []agents.Step {
	var text string
	if json.Unmarshal(e.Message.Content, &text) == nil {
		s, ok := agents.TextStep(agents.StepPrompt, text, at)
		if !ok {
			return nil
		}
		return []agents.Step{s}
	}
	var blocks []block
	_ = json.Unmarshal(e.Message.Content, &blocks)
	var steps []agents.Step
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if s, ok := agents.TextStep(agents.StepPrompt, b.Text, at); ok {
				steps = append(steps, s)
			}
		case "tool_result":
			c := tools[b.ToolUseID]
			steps = append(steps, resultStep(b, c.tool, at))
			if p := cmp.Or(editedFile(e.ToolUseResult), c.path); p != "" && !b.IsError && editTools[c.tool] != "" {
				steps = append(steps, agents.EditStep(c.tool, b.ToolUseID, p).Timed(at))
			}
		default:
			steps = append(steps, agents.OtherStep("user/"+b.Type, at))
		}
	}
	return steps
}

// assistantSteps: text answers and tool calls, of a transcript's entry and
// of the stream's assistant event (DecodeLine: no time, a new call map).
func assistantSteps(content json.RawMessage, at time.Time, tools map[string]call) []agents.Step {
	var blocks []block
	if json.Unmarshal(content, &blocks) != nil {
		return []agents.Step{agents.UnreadableStep()}
	}
	var steps []agents.Step
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if s, ok := agents.TextStep(agents.StepAssistant, b.Text, at); ok {
				steps = append(steps, s)
			}
		case "tool_use":
			tools[b.ID] = newCall(b)
			steps = append(steps, agents.CallStep(b.Name, b.ID, b.Input).Timed(at))
		case "thinking", "redacted_thinking":
		default:
			steps = append(steps, agents.OtherStep("assistant/"+b.Type, at))
		}
	}
	return steps
}

// resultStep is the step of a tool_result block, of a call of tool.
func resultStep(b block, tool string, at time.Time) agents.Step {
	return agents.ResultStep(tool, b.ToolUseID, resultText(b.Content), b.IsError).Timed(at)
}

// resultText is a tool result's content: a string, or its text blocks.
func resultText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []block
	_ = json.Unmarshal(content, &blocks)
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// editedFile is the file an edit tool's result names (toolUseResult.filePath).
func editedFile(result json.RawMessage) string {
	var r struct {
		FilePath string `json:"filePath"`
	}
	_ = json.Unmarshal(result, &r)
	return r.FilePath
}
