// Package mockllm owns a loopback mock model server for tests of the agent
// adapters. It answers a fixed text in the wire formats the agent CLIs and
// the API adapter speak, streamed (SSE) or not, as each request asks:
//
//   - Anthropic Messages:      POST /v1/messages (Claude Code; ANTHROPIC_BASE_URL=<URL>)
//   - OpenAI Responses:        POST /v1/responses (Codex; a provider with base_url <URL>/v1)
//   - OpenAI chat completions: POST /v1/chat/completions (API adapter, OpenCode, Copilot BYOK, Grok)
//   - Gemini:                  POST /v1beta/models/<model>:generateContent and
//     :streamGenerateContent (Gemini CLI; GOOGLE_GEMINI_BASE_URL=<URL>)
//
// It logs every request with how many messages (conversation items) it
// carries, which is how tests prove that a resumed session sent the earlier
// turns. With Options.WriteDir it also acts as a coding agent's model on the
// Anthropic API: it asks the CLI to Write a file, once per prompt. With
// Options.Shell it plays a model whose prompt was injected, in every API: it
// asks the CLI to run a command with its shell tool. It listens on
// 127.0.0.1 only. StartGitHub puts a TLS server playing GitHub and the
// Copilot API in front of it, for the Copilot CLI signed in.
package mockllm

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// API names a wire format.
type API string

// APIs.
const (
	APIAnthropic API = "anthropic"
	APIResponses API = "responses"
	APIChat      API = "chat"
	APIGemini    API = "gemini"
)

// Request is one logged request.
type Request struct {
	API    API
	Method string
	Path   string
	Model  string
	Stream bool
	// Messages is the number of conversation entries the request carries:
	// Anthropic and chat `messages`, Responses `input` items (1 for a
	// string input), Gemini `contents`.
	Messages int
	// LastUserText is the text of the last user entry that has text, when found.
	LastUserText string
	// UserTexts are the texts of the conversation's user entries, in order
	// (empty ones left out): what tests of a resumed session look for the
	// earlier prompts in.
	UserTexts []string
	// Tools names the tools the request offers (Anthropic).
	Tools []string
	// Prompts counts the user texts of the conversation, system reminders
	// left out; Prompt is the last of them (Anthropic).
	Prompts int
	Prompt  string
	// ToolResults are the tool_use ids the conversation has results for (Anthropic).
	ToolResults []string
	// Header keeps a few request headers (authorization redacted to its scheme).
	Header http.Header
	// Key is the credential the request carried, wherever it was
	// (x-api-key, x-goog-api-key, api-key, Authorization without its
	// scheme, or the key= query parameter): what tests of the model gateway
	// check.
	Key string
	// ToolOutput is the result of the mock's shell call (Options.Shell) the
	// conversation carries, as the CLI reported it; empty before the call.
	ToolOutput string

	tools     []tool
	shellDone bool
}

// Options configure the server.
type Options struct {
	// Reply is the assistant text; "ok" when empty.
	Reply string
	// Status, when non-zero, is returned to every model request instead of an
	// answer (e.g. 401), with an error body in the API's format.
	Status int
	// Delay holds every model answer back this long (or until the client
	// goes away), for timeout tests.
	Delay time.Duration
	// HoldAfter, when positive, answers the first HoldAfter model requests
	// and holds every later one open, sending nothing, until the client
	// goes away or the server closes: a model that stops answering in the
	// middle of a run, for stall tests (with Shell, HoldAfter 1 lets the
	// CLI make its call, then hangs on the request carrying its result).
	HoldAfter int
	// HoldFor, when positive, bounds how long HoldAfter holds a request:
	// then it is answered as usual (a model slow to answer, for tests
	// that look at a run while it goes).
	HoldFor time.Duration
	// WriteDir, when set, makes the model edit files like a coding agent
	// (Anthropic only): a request that offers the Write tool, carries no tool
	// result and whose last user text lacks ReadOnlyPhrase (outside quoted
	// lines) is answered with a
	// Write of a new file in WriteDir; the request carrying the tool's result
	// gets Reply.
	WriteDir       string
	ReadOnlyPhrase string
	// ResolvePhrase, when set, sends the Write of a prompt that contains it
	// to the first file listed after it ("- path" lines), with the conflict
	// gone, as an agent resolving a merge conflict rewrites the file.
	ResolvePhrase string
	// Shell, when set, is a command the model has the CLI run, in any API:
	// a request that offers a shell tool (see shellTools) and carries no
	// result of the mock's shell call is answered with a call of that tool
	// running Shell; once the conversation carries its result (logged as
	// Request.ToolOutput), requests get Reply.
	Shell string
	// ShellFor, when set, plays several injected prompts at once: a prompt
	// that contains a key (and not ReadOnlyPhrase) gets a call of the shell
	// tool running its command, once per conversation, as Shell does.
	ShellFor map[string]string
}

// wantsWrite tells whether req is answered with a Write tool use: once per
// prompt. The tool_use id names the prompt (its text and its place in the
// conversation), so the request that carries the Write's result, however the
// CLI arranges the messages, gets the text reply.
func (s *Server) wantsWrite(req Request) bool {
	if s.opts.WriteDir == "" || !slices.Contains(req.Tools, "Write") || req.Prompt == "" {
		return false
	}
	if s.readOnly(req.Prompt) {
		return false
	}
	mine := writeID(req)
	return !slices.ContainsFunc(req.ToolResults, func(id string) bool { return strings.HasPrefix(id, mine) })
}

// readOnly tells whether prompt asks for no change: it holds ReadOnlyPhrase
// outside quoted lines ("> "), where a handoff quotes an earlier session's
// prompts as material.
func (s *Server) readOnly(prompt string) bool {
	if s.opts.ReadOnlyPhrase == "" {
		return false
	}
	for _, line := range strings.Split(prompt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), ">") && strings.Contains(line, s.opts.ReadOnlyPhrase) {
			return true
		}
	}
	return false
}

// writeID is the prefix of the tool_use ids of the Write for req's prompt.
func writeID(req Request) string {
	h := sha256.Sum256([]byte(req.Prompt))
	return fmt.Sprintf("toolu_mock_%d_%x_", req.Prompts, h[:6])
}

// Server is a running mock.
type Server struct {
	// URL is the base URL, http://127.0.0.1:<port>, without a trailing slash.
	URL string

	srv  *httptest.Server
	opts Options

	closing   chan struct{} // closed by Close: held answers end
	closeOnce sync.Once

	mu   sync.Mutex
	log  []Request
	miss []string
}

// Start starts a server on a loopback port. Close it when done.
func Start(opts Options) *Server {
	if opts.Reply == "" {
		opts.Reply = "ok"
	}
	s := &Server{opts: opts, closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve)) // httptest listens on 127.0.0.1
	s.URL = s.srv.URL
	return s
}

// Handler is the mock as a handler, to serve on a listener of one's own (the
// end-to-end test runs it inside the agent's container).
func Handler(opts Options) http.Handler {
	if opts.Reply == "" {
		opts.Reply = "ok"
	}
	s := &Server{opts: opts, closing: make(chan struct{})}
	return http.HandlerFunc(s.serve)
}

// Close stops the server, ending the answers it holds.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.srv.Close()
}

// Requests returns the model requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// Unhandled returns "METHOD /path" of requests the mock did not recognise
// (answered 404), for debugging a CLI that calls something else.
func (s *Server) Unhandled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.miss)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	p := r.URL.Path
	api := apiOf(r.Method, p)
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 10})
		return
	case api == "":
		s.mu.Lock()
		s.miss = append(s.miss, r.Method+" "+p)
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"type": "not_found_error", "message": "mockllm: no route " + p}})
		return
	}
	req := request(api, r, body)
	s.mu.Lock()
	s.log = append(s.log, req)
	held := s.opts.HoldAfter > 0 && len(s.log) > s.opts.HoldAfter
	s.mu.Unlock()

	if held && !s.hold(r) {
		return
	}
	if s.opts.Delay > 0 {
		select {
		case <-time.After(s.opts.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if s.opts.Status != 0 {
		writeError(w, api, s.opts.Status)
		return
	}
	if t, command, ok := s.wantsShell(req); ok {
		s.shell(w, req, t, command)
		return
	}
	switch api {
	case APIAnthropic:
		s.anthropic(w, req)
	case APIResponses:
		s.responses(w, req)
	case APIChat:
		s.chat(w, req)
	case APIGemini:
		s.gemini(w, req)
	}
}

// hold holds a request (HoldAfter): false when it ended held (the client
// went away, the server closed), true when HoldFor passed and it is to be
// answered.
func (s *Server) hold(r *http.Request) bool {
	var done <-chan time.Time
	if s.opts.HoldFor > 0 {
		t := time.NewTimer(s.opts.HoldFor)
		defer t.Stop()
		done = t.C
	}
	select {
	case <-r.Context().Done():
		return false
	case <-s.closing:
		return false
	case <-done:
		return true
	}
}

// apiOf is the API a model request speaks by its method and path; "" for
// anything else.
func apiOf(method, p string) API {
	switch {
	case method != http.MethodPost:
		return ""
	case strings.HasSuffix(p, "/messages"):
		return APIAnthropic
	case strings.HasSuffix(p, "/responses"):
		return APIResponses
	case strings.HasSuffix(p, "/chat/completions"):
		return APIChat
	case strings.HasSuffix(p, ":generateContent") || strings.HasSuffix(p, ":streamGenerateContent"):
		return APIGemini
	}
	return ""
}

// request is the log entry of a model request.
func request(api API, r *http.Request, body []byte) Request {
	p := r.URL.Path
	req := parse(api, body)
	req.API, req.Method, req.Path, req.Key = api, r.Method, p, credential(r)
	req.tools = toolsOf(api, body)
	req.ToolOutput, req.shellDone = shellOutput(api, body)
	if api == APIGemini {
		req.Stream = strings.HasSuffix(p, ":streamGenerateContent")
		if i := strings.Index(p, "/models/"); i >= 0 {
			req.Model = strings.SplitN(p[i+len("/models/"):], ":", 2)[0]
		}
	}
	req.Header = http.Header{}
	for _, h := range []string{"User-Agent", "Anthropic-Version", "X-Api-Key", "Authorization", "X-Goog-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			if h == "Authorization" || h == "X-Api-Key" || h == "X-Goog-Api-Key" {
				v = strings.SplitN(v, " ", 2)[0] + " [redacted]"
			}
			req.Header.Set(h, v)
		}
	}
	return req
}

// parse reads the fields the log keeps.
func parse(api API, body []byte) Request {
	var b struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
		Input    json.RawMessage   `json:"input"`
		Contents []json.RawMessage `json:"contents"`
		Tools    []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &b)
	req := Request{Model: b.Model, Stream: b.Stream}
	if api == APIAnthropic {
		for _, t := range b.Tools {
			req.Tools = append(req.Tools, t.Name)
		}
		for _, m := range b.Messages {
			anthropicEntry(m, &req)
		}
	}
	var entries []json.RawMessage
	switch api {
	case APIAnthropic, APIChat:
		entries = b.Messages
	case APIResponses:
		var str string
		if json.Unmarshal(b.Input, &str) == nil {
			req.Messages, req.LastUserText, req.UserTexts = 1, str, []string{str}
			return req
		}
		_ = json.Unmarshal(b.Input, &entries)
	case APIGemini:
		entries = b.Contents
	}
	req.Messages = len(entries)
	for _, e := range entries {
		if t, ok := userText(e); ok && t != "" {
			req.UserTexts = append(req.UserTexts, t)
			req.LastUserText = t
		}
	}
	return req
}

// userText returns the text of a user entry in any of the formats.
func userText(raw json.RawMessage) (string, bool) {
	var e struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Parts   []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Role != "user" {
		return "", false
	}
	var sb strings.Builder
	for _, p := range e.Parts {
		sb.WriteString(p.Text)
	}
	var str string
	if json.Unmarshal(e.Content, &str) == nil {
		sb.WriteString(str)
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(e.Content, &parts) == nil {
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
	}
	return sb.String(), true
}

// anthropicEntry notes the prompts and tool results of one Anthropic message.
func anthropicEntry(raw json.RawMessage, req *Request) {
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Role != "user" {
		return
	}
	type block struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		ToolUseID string `json:"tool_use_id"`
	}
	var blocks []block
	var str string
	if json.Unmarshal(m.Content, &str) == nil {
		blocks = []block{{Type: "text", Text: str}}
	} else if json.Unmarshal(m.Content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		switch {
		case b.Type == "tool_result":
			req.ToolResults = append(req.ToolResults, b.ToolUseID)
		case b.Type == "text" && strings.TrimSpace(b.Text) != "" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>"):
			req.Prompts++
			req.Prompt = b.Text
		}
	}
}

func model(m string) string {
	if m == "" {
		return "mock-model"
	}
	return m
}

func (s *Server) anthropic(w http.ResponseWriter, req Request) {
	if s.wantsWrite(req) {
		s.anthropicWrite(w, req)
		return
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 1}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_mock", "type": "message", "role": "assistant", "model": model(req.Model),
			"content":     []any{map[string]any{"type": "text", "text": s.opts.Reply}},
			"stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
		})
		return
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_mock", "type": "message", "role": "assistant", "model": model(req.Model),
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": s.opts.Reply}})
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// listedAfter is the first "- item" line of prompt after phrase ("" when
// phrase is empty or absent).
func listedAfter(prompt, phrase string) string {
	if phrase == "" {
		return ""
	}
	_, rest, ok := strings.Cut(prompt, phrase)
	if !ok {
		return ""
	}
	for _, line := range strings.Split(rest, "\n") {
		if item, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && !strings.Contains(item, "..") {
			return strings.TrimSpace(item)
		}
	}
	return ""
}

// anthropicWrite answers with a Write tool use that creates a new file in
// WriteDir (a new name each time, so every write phase changes the tree).
func (s *Server) anthropicWrite(w http.ResponseWriter, req Request) {
	now := time.Now()
	input := map[string]any{
		"file_path": path.Join(s.opts.WriteDir, fmt.Sprintf("greeting-%d.txt", now.UnixNano())),
		"content":   fmt.Sprintf("Hello, users! Written by the agent at %s.\n", now.UTC().Format(time.RFC3339Nano)),
	}
	if f := listedAfter(req.Prompt, s.opts.ResolvePhrase); f != "" {
		input["file_path"] = path.Join(s.opts.WriteDir, f)
		input["content"] = fmt.Sprintf("Hello, users! Resolved by the agent at %s.\n", now.UTC().Format(time.RFC3339Nano))
	}
	s.anthropicTool(w, req, fmt.Sprintf("%s%d", writeID(req), now.UnixNano()), "Write", input, 20)
}

// anthropicTool answers with one tool use (id, name, input) and usage of 10
// input and out output tokens.
func (s *Server) anthropicTool(w http.ResponseWriter, req Request, id, name string, input map[string]any, out int) {
	usage := map[string]any{"input_tokens": 10, "output_tokens": out}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_mock", "type": "message", "role": "assistant", "model": model(req.Model),
			"content":     []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}},
			"stop_reason": "tool_use", "stop_sequence": nil, "usage": usage,
		})
		return
	}
	args, _ := json.Marshal(input)
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_mock", "type": "message", "role": "assistant", "model": model(req.Model),
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})
	sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

func (s *Server) responses(w http.ResponseWriter, req Request) {
	item := map[string]any{
		"id": "msg_mock", "type": "message", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": s.opts.Reply, "annotations": []any{}}},
	}
	added := map[string]any{"id": "msg_mock", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}
	part := func(typ string, more map[string]any) map[string]any {
		e := map[string]any{"type": typ, "item_id": "msg_mock", "output_index": 0, "content_index": 0}
		maps.Copy(e, more)
		return e
	}
	s.responsesReply(w, req, item, added,
		part("response.content_part.added", map[string]any{"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}),
		part("response.output_text.delta", map[string]any{"delta": s.opts.Reply}),
		part("response.output_text.done", map[string]any{"text": s.opts.Reply}),
		part("response.content_part.done", map[string]any{"part": map[string]any{"type": "output_text", "text": s.opts.Reply, "annotations": []any{}}}))
}

// responsesReply answers a Responses request whose one output is item, with
// usage of 10 input and 1 output tokens. Streamed: the response is created,
// item is added (as added), the middle events follow, then item is done
// and the response completed; the events are numbered in turn.
func (s *Server) responsesReply(w http.ResponseWriter, req Request, item, added map[string]any, middle ...map[string]any) {
	resp := map[string]any{
		"id": "resp_mock", "object": "response", "created_at": time.Now().Unix(), "status": "completed",
		"model": model(req.Model), "output": []any{item},
		"usage": map[string]any{
			"input_tokens": 10, "output_tokens": 1, "total_tokens": 11,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	inProgress := map[string]any{"id": "resp_mock", "object": "response", "status": "in_progress", "model": model(req.Model), "output": []any{}}
	events := []map[string]any{
		{"type": "response.created", "response": inProgress},
		{"type": "response.in_progress", "response": inProgress},
		{"type": "response.output_item.added", "output_index": 0, "item": added},
	}
	events = append(append(events, middle...),
		map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item},
		map[string]any{"type": "response.completed", "response": resp})
	sse := newSSE(w)
	for i, e := range events {
		e["sequence_number"] = i
		sse.event(e["type"].(string), e)
	}
}

func (s *Server) chat(w http.ResponseWriter, req Request) {
	s.chatReply(w, req, map[string]any{"role": "assistant", "content": s.opts.Reply}, "stop")
}

// chatReply answers a chat completions request with msg (streamed: as one
// delta), finish_reason finish and usage of 10 input and 1 output tokens.
func (s *Server) chatReply(w http.ResponseWriter, req Request, msg map[string]any, finish string) {
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
	now := time.Now().Unix()
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-mock", "object": "chat.completion", "created": now, "model": model(req.Model),
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	sse := newSSE(w)
	chunk := func(delta map[string]any, finish any, u any) map[string]any {
		c := map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": now, "model": model(req.Model),
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if u != nil {
			c["usage"] = u
		}
		return c
	}
	sse.data(chunk(msg, nil, nil))
	sse.data(chunk(map[string]any{}, finish, usage))
	sse.raw("[DONE]")
}

func (s *Server) gemini(w http.ResponseWriter, req Request) {
	s.geminiReply(w, req, map[string]any{"text": s.opts.Reply})
}

// geminiReply answers a Gemini request with one part and usage of 10 input
// and 1 output tokens (streamed: as one chunk).
func (s *Server) geminiReply(w http.ResponseWriter, req Request, part map[string]any) {
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
		"modelVersion":  model(req.Model),
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	newSSE(w).data(resp)
}

func writeError(w http.ResponseWriter, api API, status int) {
	msg := fmt.Sprintf("mockllm: status %d", status)
	if status == http.StatusUnauthorized {
		msg = "invalid x-api-key"
	}
	switch api {
	case APIAnthropic:
		writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": msg}})
	case APIGemini:
		writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": "UNAUTHENTICATED"}})
	default:
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": "invalid_api_key"}})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	s.flush()
}

func (s *sse) data(v any) {
	b, _ := json.Marshal(v)
	s.raw(string(b))
}

func (s *sse) raw(data string) {
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	s.flush()
}

func (s *sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// credential is the key r carries: an API key header, the Authorization
// value without its scheme, or the key= query parameter.
func credential(r *http.Request) string {
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key", "Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	if v := r.Header.Get("Authorization"); v != "" {
		if _, rest, ok := strings.Cut(v, " "); ok {
			return rest
		}
		return v
	}
	return r.URL.Query().Get("key")
}
