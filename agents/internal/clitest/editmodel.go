package clitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Edit is a file edit the model asks a CLI for with the CLI's own edit
// tool, once per conversation, before anything the mock model does: Tool
// is the tool's name and Args its arguments. It is answered in the OpenAI
// chat completions and Gemini formats (Claude Code gets its Write from
// mockllm.Options.WriteDir, and Codex edits through apply_patch in a shell
// command, which it runs as a patch).
type Edit struct {
	Tool string
	Args map[string]any
}

// editCallID is the id of the edit call, by which its result is known again.
const editCallID = "call_mock_edit"

// WithEdit puts a model in front of m's mock that asks for e on the first
// request offering e.Tool and passes every other request on to the mock,
// which logs it as usual. Call it before pointing the CLI at m.Mock.URL,
// which it replaces with its own.
func WithEdit(t testing.TB, m *Mocked, e Edit) {
	t.Helper()
	target, err := url.Parse(m.Mock.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	srv := httptest.NewServer(editModel{edit: e, next: proxy})
	t.Cleanup(srv.Close)
	m.Mock.URL = srv.URL
}

// editModel answers the edit call, or passes the request on.
type editModel struct {
	edit Edit
	next http.Handler
}

func (e editModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p := r.URL.Path
	switch {
	case r.Method != http.MethodPost:
	case strings.HasSuffix(p, "/chat/completions") && e.wants(chatTools(body), chatDone(body)):
		e.chat(w, body)
		return
	case strings.HasSuffix(strings.ToLower(p), "generatecontent") && e.wants(geminiTools(body), geminiDone(body, e.edit.Tool)):
		e.gemini(w, strings.HasSuffix(p, ":streamGenerateContent"))
		return
	}
	e.next.ServeHTTP(w, r)
}

// wants tells whether a request offering tools and carrying done (the edit
// call's result) gets the edit call.
func (e editModel) wants(tools []string, done bool) bool {
	return !done && slices.Contains(tools, e.edit.Tool)
}

// chatTools are the tool names of a chat completions request.
func chatTools(body []byte) []string {
	var b struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &b)
	var names []string
	for _, t := range b.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// chatDone tells whether a chat completions request carries the edit's result.
func chatDone(body []byte) bool {
	var b struct {
		Messages []struct {
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &b)
	return slices.ContainsFunc(b.Messages, func(m struct {
		ToolCallID string `json:"tool_call_id"`
	}) bool {
		return m.ToolCallID == editCallID
	})
}

// geminiTools are the function names of a Gemini request.
func geminiTools(body []byte) []string {
	var b struct {
		Tools []struct {
			Declarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &b)
	var names []string
	for _, t := range b.Tools {
		for _, d := range t.Declarations {
			names = append(names, d.Name)
		}
	}
	return names
}

// geminiDone tells whether a Gemini request carries a response of tool.
func geminiDone(body []byte, tool string) bool {
	var b struct {
		Contents []struct {
			Parts []struct {
				Response *struct {
					Name string `json:"name"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	_ = json.Unmarshal(body, &b)
	for _, c := range b.Contents {
		for _, p := range c.Parts {
			if p.Response != nil && p.Response.Name == tool {
				return true
			}
		}
	}
	return false
}

// chat answers a chat completions request with the edit call, streamed
// when the request asks for it.
func (e editModel) chat(w http.ResponseWriter, body []byte) {
	var b struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &b)
	args, _ := json.Marshal(e.edit.Args)
	call := map[string]any{"index": 0, "id": editCallID, "type": "function",
		"function": map[string]any{"name": e.edit.Tool, "arguments": string(args)}}
	msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
	base := map[string]any{"id": "chatcmpl-mock-edit", "created": time.Now().Unix(), "model": "mock-model"}
	if !b.Stream {
		base["object"], base["usage"] = "chat.completion", usage
		base["choices"] = []any{map[string]any{"index": 0, "message": msg, "finish_reason": "tool_calls"}}
		writeEvents(w, "application/json", base)
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		for k, v := range base {
			c[k] = v
		}
		if finish != nil {
			c["usage"] = usage
		}
		return c
	}
	writeEvents(w, "text/event-stream", chunk(msg, nil), chunk(map[string]any{}, "tool_calls"), "[DONE]")
}

// gemini answers a Gemini request with the edit call.
func (e editModel) gemini(w http.ResponseWriter, stream bool) {
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": e.edit.Tool, "args": e.edit.Args}}}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
		"modelVersion":  "mock-model",
	}
	if !stream {
		writeEvents(w, "application/json", resp)
		return
	}
	writeEvents(w, "text/event-stream", resp)
}

// writeEvents writes one JSON value (contentType application/json) or
// server-sent events, one a value ("[DONE]" as it is).
func writeEvents(w http.ResponseWriter, contentType string, values ...any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	for _, v := range values {
		b, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		if contentType == "application/json" {
			_, _ = w.Write(b)
			continue
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}
