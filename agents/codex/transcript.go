package codex

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// Codex's transcript, as 0.171.0 writes it (recorded in
// testdata/transcript): one rollout file a thread,
// <sessions>/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, which a resume
// appends to. Each line is {"timestamp","type","payload"}. The
// conversation is in the "response_item" lines (messages, function and
// custom tool calls and their outputs); of the "event_msg" lines, which
// repeat it for display, only completed FileChange items are read: the
// files an apply_patch changed, whether the model called the tool or ran
// apply_patch in a shell command. Injected context (developer messages,
// <environment_context> and the like) gives no step.

// bookkeeping are the line types that give no step.
var bookkeeping = []string{"session_meta", "turn_context", "world_state", "token_usage_record"}

// ReadTranscript implements agents.TranscriptReader: stateDir is the
// folder mounted at ~/.codex/sessions, read as untrusted data
// (agents.SessionFiles: the rollouts of the thread within one budget).
func (CLI) ReadTranscript(stateDir, id string) ([]agents.Step, error) {
	if id == "" || strings.ContainsAny(id, `/\*?[`) {
		return nil, fmt.Errorf("codex: transcript: invalid thread id %q", id)
	}
	files := agents.NewSessionFiles(stateDir)
	matches, err := files.Glob("*/*/*/rollout-*-" + id + ".jsonl")
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("codex: rollout of thread %s in %s: %w", id, stateDir, agents.ErrNoTranscript)
	}
	// Named by start time (Glob sorts them): a thread has one, older first
	// should there be more.
	var steps []agents.Step
	for _, m := range matches {
		data, err := files.Read(m)
		if err != nil {
			return nil, fmt.Errorf("codex: %w", err)
		}
		steps = append(steps, parseRollout(data)...)
	}
	return steps, nil
}

// line is one line of a rollout file.
type line struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// item is a response_item payload, or the item of an event_msg.
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	// FileChange items (event_msg item_completed).
	ID      string                     `json:"id"`
	Status  string                     `json:"status"`
	Changes map[string]json.RawMessage `json:"changes"`
}

// parseRollout turns the lines into steps.
func parseRollout(data []byte) []agents.Step {
	var steps []agents.Step
	tools := map[string]string{} // call id -> tool name
	for _, raw := range agents.TranscriptLines(data) {
		var l line
		if json.Unmarshal(raw, &l) != nil {
			steps = append(steps, agents.UnreadableStep())
			continue
		}
		steps = append(steps, l.steps(tools)...)
	}
	return steps
}

// steps are the line's steps; tools remembers the calls' tools by id.
func (l line) steps(tools map[string]string) []agents.Step {
	at := agents.ParseTime(l.Timestamp)
	switch {
	case slices.Contains(bookkeeping, l.Type):
		return nil
	case l.Type == "event_msg":
		return eventSteps(l.Payload, at)
	case l.Type == "response_item":
		var it item
		if json.Unmarshal(l.Payload, &it) != nil {
			return []agents.Step{agents.UnreadableStep()}
		}
		return it.steps(at, tools)
	}
	return []agents.Step{agents.OtherStep(l.Type, at)}
}

// eventSteps: the files of a completed FileChange; an error event as other.
func eventSteps(payload json.RawMessage, at time.Time) []agents.Step {
	var e struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Item    item   `json:"item"`
	}
	if json.Unmarshal(payload, &e) != nil {
		return []agents.Step{agents.UnreadableStep()}
	}
	switch {
	case e.Type == "error" || e.Type == "stream_error" || e.Type == "turn_aborted":
		return []agents.Step{agents.OtherStep(strings.TrimSpace(e.Type+": "+e.Message), at)}
	case e.Type != "item_completed" || e.Item.Type != "FileChange" || e.Item.Status != "completed":
		return nil
	}
	var steps []agents.Step
	for _, p := range slices.Sorted(maps.Keys(e.Item.Changes)) {
		steps = append(steps, agents.EditStep("apply_patch", e.Item.ID, p).Timed(at))
	}
	return steps
}

// steps are a response item's steps.
func (it item) steps(at time.Time, tools map[string]string) []agents.Step {
	switch it.Type {
	case "message":
		return it.messageSteps(at)
	case "function_call", "custom_tool_call":
		tools[it.CallID] = it.Name
		args := it.Arguments
		if it.Type == "custom_tool_call" {
			args = it.Input
		}
		return []agents.Step{agents.CallStep(it.Name, it.CallID, args).Timed(at)}
	case "function_call_output", "custom_tool_call_output":
		out, failed := output(it.Output)
		return []agents.Step{agents.ResultStep(tools[it.CallID], it.CallID, out, failed).Timed(at)}
	case "reasoning":
		return nil
	}
	return []agents.Step{agents.OtherStep("response_item/"+it.Type, at)}
}

// messageSteps: a user prompt or an assistant answer; injected context
// (developer and system messages, user messages that are one <tag>…</tag>
// block) gives none.
func (it item) messageSteps(at time.Time) []agents.Step {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Content, &parts)
	var texts []string
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	text := strings.Join(texts, "\n")
	kind := agents.StepPrompt
	switch {
	case it.Role == "assistant":
		kind = agents.StepAssistant
	case it.Role != "user" || injected.MatchString(text):
		return nil
	}
	if s, ok := agents.TextStep(kind, text, at); ok {
		return []agents.Step{s}
	}
	return nil
}

// injected matches a user message that is context codex adds, one
// <tag>…</tag> block (environment_context, user_instructions, …).
var injected = regexp.MustCompile(`(?s)^\s*<([a-z_]+)>.*</([a-z_]+)>\s*$`)

// output is a call's output as text, and whether it reports a failure: a
// string (for a command, its header left out), or an object with content
// and success.
func output(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var o struct {
			Content string `json:"content"`
			Success *bool  `json:"success"`
		}
		_ = json.Unmarshal(raw, &o)
		return o.Content, o.Success != nil && !*o.Success
	}
	failed := false
	if m := exitCode.FindStringSubmatch(s); m != nil {
		failed = m[1] != "0"
	}
	return withoutHeader(s), failed
}

// withoutHeader leaves out the header codex puts before a command's output
// (chunk id, wall time, exit code, token count, up to "Output:"), once or
// nested, as apply_patch run in a shell gives.
func withoutHeader(s string) string {
	for {
		head, rest, ok := strings.Cut(s, "Output:\n")
		if !ok || head == "" || !headerLines.MatchString(head) {
			return s
		}
		s = rest
	}
}

// headerLines matches a command output's header lines.
var headerLines = regexp.MustCompile(`^((Chunk ID|Wall time|Process exited with code|Exit code|Original token count|Process running with session ID)\b[^\n]*\n)*$`)

// exitCode finds the exit code in a command output's header.
var exitCode = regexp.MustCompile(`(?m)^(?:Process exited with code|Exit code:) (-?\d+)$`)
