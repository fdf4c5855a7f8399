package gemini

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// Gemini's transcript, as 0.61.0 writes it (recorded in
// testdata/transcript): <tmp>/<project>/chats/session-<time>-<first 8
// characters of the id>.jsonl, a log of changes to one conversation
// record, replayed as Gemini's own loader does: a metadata line
// ({"sessionId","projectHash",…}), message lines (an "id": added, or
// replacing the message of that id in place), {"$set":{…}} (its
// "messages" replace the list) and {"$rewindTo":id} (drops that message and
// those after it). A resume writes the whole list again with $set into the
// session's file, and also leaves a second file of the same session that
// holds only the injected context: the reader takes the file of the
// session with the most messages. Records the reader does not know, and
// unreadable lines, which Gemini's loader skips, are other steps after the
// messages. Messages are "user" (a prompt, or
// function responses, which the tool calls already carry), "gemini" (text,
// and toolCalls with their results) and "info", "warning", "error" (kept as
// other).

// editTools are the tools that write the file named by their "file_path".
var editTools = []string{"write_file", "replace", "edit"}

// ReadTranscript implements agents.TranscriptReader: stateDir is the
// folder mounted at ~/.gemini/tmp, read as untrusted data
// (agents.SessionFiles: the session's files within one budget).
func (CLI) ReadTranscript(stateDir, id string) ([]agents.Step, error) {
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return nil, fmt.Errorf("gemini: transcript: invalid session id %q", id)
	}
	files := agents.NewSessionFiles(stateDir)
	matches, err := files.Glob("*/chats/session-*-" + id[:8] + ".jsonl")
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	var best *conversation
	for _, m := range matches {
		data, err := files.Read(m)
		if err != nil {
			return nil, fmt.Errorf("gemini: %w", err)
		}
		if c := replay(data); c.SessionID == id && (best == nil || len(c.messages) > len(best.messages)) {
			best = c
		}
	}
	if best == nil {
		return nil, fmt.Errorf("gemini: transcript of session %s in %s: %w", id, stateDir, agents.ErrNoTranscript)
	}
	return best.steps(), nil
}

// conversation is the record a session file's lines build.
type conversation struct {
	SessionID string
	messages  []message
	// seen are the messages by id as last recorded by a message line.
	seen map[string]message
	// others are the steps of unreadable lines and of records the reader
	// does not know, which Gemini itself skips; they follow the messages
	// (a $set would otherwise drop them).
	others []agents.Step
}

// message is a message record.
type message struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []toolCall      `json:"toolCalls"`
}

// toolCall is a tool call of a gemini message, with its result.
type toolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Result        []part          `json:"result"`
	Status        string          `json:"status"`
	Timestamp     string          `json:"timestamp"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

// hasResult tells whether the call is over.
func (tc toolCall) hasResult() bool { return tc.Status != "" || len(tc.Result) > 0 }

// part is a content part.
type part struct {
	Text     *string   `json:"text"`
	Call     *callPart `json:"functionCall"`
	Response *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// callPart is a function call part.
type callPart struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// replay builds the conversation of a session file.
func replay(data []byte) *conversation {
	c := &conversation{seen: map[string]message{}}
	for _, line := range agents.TranscriptLines(data) {
		var r map[string]json.RawMessage
		if json.Unmarshal(line, &r) != nil {
			c.others = append(c.others, agents.UnreadableStep())
			continue
		}
		c.apply(r, line)
	}
	return c
}

// apply applies one record.
func (c *conversation) apply(r map[string]json.RawMessage, line []byte) {
	var rewind, id string
	switch {
	case json.Unmarshal(r["$rewindTo"], &rewind) == nil && rewind != "":
		c.rewind(rewind)
	case json.Unmarshal(r["id"], &id) == nil && id != "":
		var m message
		_ = json.Unmarshal(line, &m)
		c.seen[m.ID] = m
		c.upsert(m)
	case r["$set"] != nil:
		c.set(r["$set"])
	case r["sessionId"] != nil:
		c.set(line)
	default:
		c.others = append(c.others, agents.OtherStep("record without id", time.Time{}))
	}
}

// set applies metadata: the session id, and messages that replace the
// list. A message a message line recorded is kept as that line has it: a
// resume writes the history again with its own time on every message.
func (c *conversation) set(raw json.RawMessage) {
	var s struct {
		SessionID *string   `json:"sessionId"`
		Messages  []message `json:"messages"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return
	}
	if s.SessionID != nil {
		c.SessionID = *s.SessionID
	}
	if s.Messages != nil {
		c.messages = nil
		for _, m := range s.Messages {
			if old, ok := c.seen[m.ID]; ok {
				m = old
			}
			c.upsert(m)
		}
	}
}

// upsert replaces the message of m's id in place, or appends m.
func (c *conversation) upsert(m message) {
	i := slices.IndexFunc(c.messages, func(x message) bool { return x.ID == m.ID })
	if i < 0 {
		c.messages = append(c.messages, m)
		return
	}
	c.messages[i] = m
}

// rewind drops the message id and those after it; all, when id is unknown.
func (c *conversation) rewind(id string) {
	i := slices.IndexFunc(c.messages, func(x message) bool { return x.ID == id })
	c.messages = c.messages[:max(i, 0)]
}

// steps are the conversation's steps. A tool's result is read from the
// call that carries it; a function response in a user message is a step
// only when no call carried it.
func (c *conversation) steps() []agents.Step {
	var steps []agents.Step
	tr := tracker{done: map[string]bool{}, calls: map[string]callPart{}}
	for _, m := range c.messages {
		steps = append(steps, m.steps(tr)...)
	}
	return append(steps, c.others...)
}

// tracker follows the calls across messages: the ids whose result is a
// step, and the calls of functionCall parts by id.
type tracker struct {
	done  map[string]bool
	calls map[string]callPart
}

// steps are a message's steps.
func (m message) steps(tr tracker) []agents.Step {
	at := agents.ParseTime(m.Timestamp)
	text, parts := content(m.Content)
	switch m.Type {
	case "user":
		return userSteps(text, parts, at, tr)
	case "gemini":
		return m.modelSteps(text, parts, at, tr)
	case "info", "warning", "error":
		return []agents.Step{agents.OtherStep(m.Type+": "+text, at)}
	}
	return []agents.Step{agents.OtherStep(m.Type, at)}
}

// content is a message's text (a string, or its text parts) and its parts.
func content(raw json.RawMessage) (string, []part) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []part
	_ = json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n"), parts
}

// userSteps: a prompt (none for injected context), and function responses
// no call carried (with the file of an edit tool's call).
func userSteps(text string, parts []part, at time.Time, tr tracker) []agents.Step {
	var steps []agents.Step
	if s, ok := agents.TextStep(agents.StepPrompt, text, at); ok && !strings.HasPrefix(strings.TrimSpace(text), "<session_context>") {
		steps = append(steps, s)
	}
	for _, p := range parts {
		if r := p.Response; r != nil && !tr.done[r.ID] {
			tr.done[r.ID] = true
			text, failed := responseText(r.Response)
			steps = append(steps, agents.ResultStep(r.Name, r.ID, text, failed).Timed(at))
			if e, ok := edit(tr.calls[r.ID], at); ok && !failed {
				steps = append(steps, e)
			}
		}
	}
	return steps
}

// modelSteps: the answer's text, then its tool calls (from toolCalls, with
// their results; from functionCall parts for calls it lacks).
func (m message) modelSteps(text string, parts []part, at time.Time, tr tracker) []agents.Step {
	var steps []agents.Step
	if s, ok := agents.TextStep(agents.StepAssistant, text, at); ok {
		steps = append(steps, s)
	}
	for _, p := range parts {
		if c := p.Call; c != nil && !slices.ContainsFunc(m.ToolCalls, func(tc toolCall) bool { return tc.ID == c.ID }) {
			tr.calls[c.ID] = *c
			steps = append(steps, agents.CallStep(c.Name, c.ID, c.Args).Timed(at))
		}
	}
	for _, tc := range m.ToolCalls {
		steps = append(steps, tc.steps(at, tr)...)
	}
	return steps
}

// steps are a tool call's: the call, its result once it has one, and the
// file a successful edit tool wrote.
func (tc toolCall) steps(at time.Time, tr tracker) []agents.Step {
	steps := []agents.Step{agents.CallStep(tc.Name, tc.ID, tc.Args).Timed(at)}
	if !tc.hasResult() {
		return steps
	}
	tr.done[tc.ID] = true
	done := agents.ParseTime(tc.Timestamp)
	failed := tc.Status == "error" || tc.Status == "cancelled"
	steps = append(steps, agents.ResultStep(tc.Name, tc.ID, tc.resultText(), failed).Timed(done))
	if e, ok := edit(callPart{ID: tc.ID, Name: tc.Name, Args: tc.Args}, done); ok && !failed {
		steps = append(steps, e)
	}
	return steps
}

// edit is the edit step of a call of an edit tool, naming its file_path.
func edit(c callPart, at time.Time) (agents.Step, bool) {
	var a struct {
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(c.Args, &a)
	if a.FilePath == "" || !slices.Contains(editTools, c.Name) {
		return agents.Step{}, false
	}
	return agents.EditStep(c.Name, c.ID, a.FilePath).Timed(at), true
}

// resultText is what a call gave back: its display text when it is one,
// else the function response.
func (tc toolCall) resultText() string {
	var s string
	if json.Unmarshal(tc.ResultDisplay, &s) == nil && s != "" {
		return s
	}
	for _, p := range tc.Result {
		if p.Response != nil {
			text, _ := responseText(p.Response.Response)
			return text
		}
	}
	return ""
}

// responseText is a function response: its output, or its error (failed),
// else its JSON.
func responseText(raw json.RawMessage) (string, bool) {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	_ = json.Unmarshal(raw, &r)
	switch {
	case r.Output != nil:
		return *r.Output, false
	case r.Error != nil:
		return *r.Error, true
	}
	return string(raw), false
}
