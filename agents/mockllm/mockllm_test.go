package mockllm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestFormats(t *testing.T) {
	s := Start(Options{Reply: "hi"})
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not loopback", s.URL)
	}
	tests := []struct {
		name, path, body string
		api              API
		messages         int
		stream           bool
		contains         []string
	}{
		{"anthropic stream", "/v1/messages", `{"model":"c","stream":true,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"q"}]}]}`,
			APIAnthropic, 3, true, []string{"event: message_start", `"text":"hi"`, "event: message_stop"}},
		{"anthropic", "/v1/messages", `{"model":"c","messages":[{"role":"user","content":"q"}]}`,
			APIAnthropic, 1, false, []string{`"type":"message"`, `"text":"hi"`}},
		{"responses stream", "/v1/responses", `{"model":"m","stream":true,"input":[{"type":"message","role":"developer","content":[]},{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}]}`,
			APIResponses, 2, true, []string{"event: response.created", `"delta":"hi"`, "event: response.completed"}},
		{"responses string input", "/v1/responses", `{"model":"m","input":"q"}`,
			APIResponses, 1, false, []string{`"output_text"`, `"text":"hi"`}},
		{"chat stream", "/v1/chat/completions", `{"model":"g","stream":true,"messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}]}`,
			APIChat, 2, true, []string{`"content":"hi"`, "data: [DONE]"}},
		{"chat", "/v1/chat/completions", `{"model":"g","messages":[{"role":"user","content":"q"}]}`,
			APIChat, 1, false, []string{`"chat.completion"`, `"content":"hi"`}},
		{"gemini", "/v1beta/models/gemini-x:generateContent", `{"contents":[{"role":"user","parts":[{"text":"q"}]}]}`,
			APIGemini, 1, false, []string{`"text":"hi"`, `"finishReason":"STOP"`}},
		{"gemini stream", "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]},{"role":"user","parts":[{"text":"q"}]}]}`,
			APIGemini, 3, true, []string{"data: {", `"text":"hi"`}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, s.URL+tt.path, tt.body)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			for _, c := range tt.contains {
				if !strings.Contains(body, c) {
					t.Errorf("body lacks %q:\n%s", c, body)
				}
			}
			r := s.Requests()[i]
			if r.API != tt.api || r.Messages != tt.messages || r.Stream != tt.stream || r.LastUserText != "q" {
				t.Fatalf("logged %+v, want api %s messages %d stream %v last user text q", r, tt.api, tt.messages, tt.stream)
			}
		})
	}
	if status, _ := post(t, s.URL+"/v1/unknown", "{}"); status != http.StatusNotFound {
		t.Fatalf("unknown route status %d", status)
	}
	if got := s.Unhandled(); len(got) != 1 || got[0] != "POST /v1/unknown" {
		t.Fatalf("Unhandled = %v", got)
	}
}

func TestStatus(t *testing.T) {
	s := Start(Options{Status: http.StatusUnauthorized})
	defer s.Close()
	status, body := post(t, s.URL+"/v1/messages", `{"messages":[]}`)
	if status != http.StatusUnauthorized || !strings.Contains(body, "authentication_error") {
		t.Fatalf("status %d body %s", status, body)
	}
	if len(s.Requests()) != 1 {
		t.Fatal("a rejected request was not logged")
	}
}

// TestWrite: with WriteDir, a prompt that asks for changes gets one Write
// tool use, the request with its result gets the reply, a later prompt (the
// CLI may merge it into the message with the old results) writes again, and
// a read-only prompt or a request without the Write tool never writes.
func TestWrite(t *testing.T) {
	s := Start(Options{Reply: "done", WriteDir: "/workspace", ReadOnlyPhrase: "Do not change any file"})
	defer s.Close()
	const tools = `"tools":[{"name":"Read"},{"name":"Write"}]`
	ask := func(messages string) (toolID string, text bool) {
		t.Helper()
		status, body := post(t, s.URL+"/v1/messages", `{"model":"c",`+tools+`,"messages":[`+messages+`]}`)
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		var m struct {
			Content []struct {
				Type  string         `json:"type"`
				ID    string         `json:"id"`
				Name  string         `json:"name"`
				Input map[string]any `json:"input"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil || len(m.Content) != 1 {
			t.Fatalf("answer %s: %v", body, err)
		}
		c := m.Content[0]
		if c.Type == "tool_use" {
			if c.Name != "Write" || !strings.HasPrefix(c.Input["file_path"].(string), "/workspace/greeting-") || c.Input["content"] == "" {
				t.Fatalf("tool use %+v", c)
			}
			return c.ID, false
		}
		return "", c.Type == "text"
	}
	user := `{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"Implement the plan."}]}`
	id, _ := ask(user)
	if id == "" {
		t.Fatal("a prompt asking for changes got no Write")
	}
	use := `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"Write","input":{}}]}`
	if _, text := ask(user + `,` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}`); !text {
		t.Fatal("the Write's result did not get the reply")
	}
	// Resumed: the old result and the new prompt in one message, even the same text.
	for _, next := range []string{"Fix CI.", "Implement the plan."} {
		merged := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"},{"type":"text","text":"` + next + `"}]}`
		if again, _ := ask(user + `,` + use + `,` + merged); again == "" || again == id {
			t.Fatalf("the next prompt %q wrote nothing new: %q", next, again)
		}
	}
	if _, text := ask(`{"role":"user","content":"Analyse. Do not change any file."}`); !text {
		t.Error("a read-only prompt got a Write")
	}
	status, body := post(t, s.URL+"/v1/messages", `{"model":"c","messages":[`+user+`]}`)
	if status != http.StatusOK || !strings.Contains(body, `"text":"done"`) {
		t.Errorf("a request without the Write tool: %d %s", status, body)
	}
}

// TestResolve: with ResolvePhrase, the Write of a conflict prompt rewrites
// the first file listed after the phrase.
func TestResolve(t *testing.T) {
	s := Start(Options{Reply: "done", WriteDir: "/workspace", ResolvePhrase: "left conflicts"})
	defer s.Close()
	for _, tc := range []struct{ prompt, want string }{
		{`Merging left conflicts. Resolve them in:\n\n- docs/greeting.txt\n- b.txt\n`, "/workspace/docs/greeting.txt"},
		{`Implement the plan.`, "/workspace/greeting-"},
		{`It left conflicts in:\n\n- ../../etc/passwd\n`, "/workspace/greeting-"},
	} {
		body := `{"model":"c","tools":[{"name":"Write"}],"messages":[{"role":"user","content":"` + tc.prompt + `"}]}`
		status, out := post(t, s.URL+"/v1/messages", body)
		var m struct {
			Content []struct {
				Input map[string]any `json:"input"`
			} `json:"content"`
		}
		if status != http.StatusOK || json.Unmarshal([]byte(out), &m) != nil || len(m.Content) != 1 {
			t.Fatalf("%q: %d %s", tc.prompt, status, out)
		}
		if got, _ := m.Content[0].Input["file_path"].(string); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: wrote %q, want %q", tc.prompt, got, tc.want)
		}
	}
}

// TestShell: with Options.Shell, a request that offers a shell tool is
// answered with a call of it running the command (as a string, or as argv
// where the schema wants an array, other required properties filled), in
// each API; the request carrying its result gets the reply, and the result
// is logged.
func TestShell(t *testing.T) {
	s := Start(Options{Reply: "done", Shell: "echo hi"})
	defer s.Close()
	str := `{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command","description"]}`
	arr := `{"type":"object","properties":{"cmd":{"type":"array"}},"required":["cmd"]}`
	tests := []struct {
		name, path, call, result string
		want                     []string // in the call's answer
	}{
		{"anthropic", "/v1/messages",
			`{"tools":[{"name":"Read","input_schema":{}},{"name":"Bash","input_schema":` + str + `}],"messages":[{"role":"user","content":"q"}]}`,
			`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_mock_shell","content":"hi\n"}]}]}`,
			[]string{`"name":"Bash"`, `"command":"echo hi"`, `"description":`}},
		{"responses stream", "/v1/responses",
			`{"stream":true,"tools":[{"type":"function","name":"shell","parameters":` + arr + `}],"input":"q"}`,
			`{"input":[{"type":"function_call_output","call_id":"call_mock_shell","output":"hi\n"}]}`,
			[]string{"response.function_call_arguments.done", `\"cmd\":[\"bash\",\"-lc\",\"echo hi\"]`}},
		{"chat", "/v1/chat/completions",
			`{"tools":[{"type":"function","function":{"name":"bash","parameters":` + str + `}}],"messages":[{"role":"user","content":"q"}]}`,
			`{"messages":[{"role":"tool","tool_call_id":"call_mock_shell","content":"hi\n"}]}`,
			[]string{`"finish_reason":"tool_calls"`, `\"command\":\"echo hi\"`}},
		{"gemini", "/v1beta/models/g:generateContent",
			`{"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":` + str + `}]}],"contents":[{"role":"user","parts":[{"text":"q"}]}]}`,
			`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"hi\n"}}}]}]}`,
			[]string{`"functionCall"`, `"command":"echo hi"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, call := post(t, s.URL+tt.path, tt.call)
			for _, w := range tt.want {
				if !strings.Contains(call, w) {
					t.Errorf("the call lacks %s:\n%s", w, call)
				}
			}
			if _, reply := post(t, s.URL+tt.path, tt.result); !strings.Contains(reply, "done") || strings.Contains(reply, "echo hi") {
				t.Errorf("after the result: %s", reply)
			}
			reqs := s.Requests()
			if last := reqs[len(reqs)-1]; !strings.Contains(last.ToolOutput, "hi") {
				t.Errorf("logged tool output %q", last.ToolOutput)
			}
		})
	}
	if _, plain := post(t, s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"q"}]}`); !strings.Contains(plain, "done") {
		t.Errorf("a request without a shell tool got %s", plain)
	}
}

// TestKey: the credential of each request is logged wherever it was.
func TestKey(t *testing.T) {
	s := Start(Options{})
	defer s.Close()
	for _, tc := range []struct {
		header, value, query string
	}{
		{"x-api-key", "k1", ""},
		{"Authorization", "Bearer k1", ""},
		{"x-goog-api-key", "k1", ""},
		{"", "", "?key=k1"},
	} {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions"+tc.query, strings.NewReader(`{"messages":[]}`))
		if tc.header != "" {
			req.Header.Set(tc.header, tc.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		reqs := s.Requests()
		if k := reqs[len(reqs)-1].Key; k != "k1" {
			t.Errorf("%s%s: logged key %q", tc.header, tc.query, k)
		}
	}
}

// TestHoldAfter: the first HoldAfter requests are answered, a later one is
// held open, logged, until its client goes away or the server closes.
func TestHoldAfter(t *testing.T) {
	s := Start(Options{HoldAfter: 1})
	if status, body := post(t, s.URL+"/v1/messages", `{"messages":[]}`); status != http.StatusOK || !strings.Contains(body, "ok") {
		t.Fatalf("first request: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages", strings.NewReader(`{"messages":[]}`))
	start := time.Now()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the second request was answered: %d", resp.StatusCode)
	}
	if held := time.Since(start); held < 250*time.Millisecond {
		t.Errorf("held only %s", held)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(`{"messages":[]}`))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, func() bool { return len(s.Requests()) == 3 })
	s.Close()
	select {
	case <-done: // answered by the close, with an error or an empty answer
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a held request open")
	}
}

// TestHoldFor: a held request is answered once HoldFor has passed.
func TestHoldFor(t *testing.T) {
	s := Start(Options{HoldAfter: 1, HoldFor: 200 * time.Millisecond})
	defer s.Close()
	post(t, s.URL+"/v1/messages", `{"messages":[]}`)
	start := time.Now()
	if status, body := post(t, s.URL+"/v1/messages", `{"messages":[]}`); status != http.StatusOK || !strings.Contains(body, "ok") {
		t.Fatalf("held request: %d %s", status, body)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("answered after %s, want HoldFor", d)
	}
}

// waitFor waits for cond, at most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in time")
}
