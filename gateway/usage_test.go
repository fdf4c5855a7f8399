package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// mockGateway is a gateway in front of the mock model server, with the four
// providers the CLIs use.
func mockGateway(t testing.TB, mock *mockllm.Server) *Gateway {
	t.Helper()
	g, _ := newGateway(t, Options{Providers: []Provider{
		Anthropic(mock.URL, realKey), OpenAI(mock.URL, realKey), Gemini(mock.URL, realKey), XAI(mock.URL, realKey),
	}})
	return g
}

// mockCall is one request in each API shape, as the CLIs send it.
type mockCall struct {
	name, path, body string
	hdr              func(tok string) map[string]string
}

var mockCalls = func() []mockCall {
	xAPI := func(tok string) map[string]string {
		return map[string]string{"x-api-key": tok, "anthropic-version": "2023-06-01"}
	}
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	goog := func(tok string) map[string]string { return map[string]string{"x-goog-api-key": tok} }
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	var calls []mockCall
	for _, stream := range []bool{false, true} {
		st := fmt.Sprint(stream)
		gem := "/gemini/v1beta/models/gemini-x:generateContent"
		if stream {
			gem = "/gemini/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
		}
		calls = append(calls,
			mockCall{"anthropic stream=" + st, "/anthropic/v1/messages", `{"model":"claude-x","stream":` + st + `,` + msgs + `}`, xAPI},
			mockCall{"responses stream=" + st, "/openai/v1/responses", `{"model":"gpt-x","stream":` + st + `,"input":"hi"}`, bearer},
			mockCall{"chat stream=" + st, "/openai/v1/chat/completions", `{"model":"gpt-x","stream":` + st + `,` + msgs + `}`, bearer},
			mockCall{"grok chat stream=" + st, "/xai/v1/chat/completions", `{"model":"grok-x","stream":` + st + `,` + msgs + `}`, bearer},
			mockCall{"gemini stream=" + st, gem, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, goog},
		)
	}
	return calls
}()

// TestUsageMock: every API shape of the mock model, streamed or not, is
// metered (the mock says 10 input tokens and 1 output token each time), and
// the session sums them.
func TestUsageMock(t *testing.T) {
	mock := mockllm.Start(mockllm.Options{Reply: "hello from the mock"})
	defer mock.Close()
	g := mockGateway(t, mock)
	s := open(t, g, "run")
	c := socketClient(s.SocketPath())
	for i, mc := range mockCalls {
		t.Run(mc.name, func(t *testing.T) {
			before := s.Usage()
			code, _, body := do(t, c, http.MethodPost, "http://gateway"+mc.path, mc.body, mc.hdr(s.Token()))
			if code != 200 || !strings.Contains(body, "hello from the mock") {
				t.Fatalf("status %d %s", code, body)
			}
			after := s.Usage()
			if d := (Usage{after.Requests - before.Requests, after.InputTokens - before.InputTokens, after.OutputTokens - before.OutputTokens}); d != (Usage{1, 10, 1}) {
				t.Errorf("this request counted %+v, want 1 request, 10 in, 1 out", d)
			}
			reqs := mock.Requests()
			if len(reqs) != i+1 {
				t.Fatalf("the mock got %d requests", len(reqs))
			}
			last := reqs[i]
			if last.Header.Get("Authorization")+last.Header.Get("X-Api-Key")+last.Header.Get("X-Goog-Api-Key") == "" {
				t.Errorf("the mock got no credential: %v", last.Header)
			}
		})
	}
	n := int64(len(mockCalls))
	if u := s.Usage(); u != (Usage{Requests: n, InputTokens: 10 * n, OutputTokens: n}) {
		t.Errorf("session usage %+v", u)
	}
	if miss := mock.Unhandled(); len(miss) > 0 {
		t.Errorf("the mock did not know %v", miss)
	}
}

// usageShapes are the answers of TestUsageShapes and what they cost.
var usageShapes = []struct {
	name    string
	ctype   string
	chunks  []string
	status  int
	in, out int64
}{
	{
		name:  "anthropic message with cache",
		ctype: "application/json",
		chunks: []string{`{"type":"message","content":[],"usage":{"input_tokens":5,"cache_creation_input_tokens":100,` +
			`"cache_read_input_tokens":200,"output_tokens":30}}`},
		in: 305, out: 30,
	},
	{
		name:  "anthropic stream",
		ctype: "text/event-stream",
		chunks: []string{
			"event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":50,\"output_tokens\":1}}}\r\n\r\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"usage is high\"}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":12}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":42}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		},
		in: 55, out: 42,
	},
	{
		name:  "chat stream with usage chunk",
		ctype: "text/event-stream; charset=utf-8",
		chunks: []string{
			"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":null}\n\n",
			"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}],\"usage\":null}\n\n",
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":123,\"completion_tokens\":45,\"total_tokens\":168}}\n\n",
			"data: [DONE]\n\n",
		},
		in: 123, out: 45,
	},
	{
		name:  "responses stream",
		ctype: "text/event-stream",
		chunks: []string{
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n",
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":900,\"input_tokens_details\":{\"cached_tokens\":800},\"output_tokens\":70}}}\n\n",
		},
		in: 900, out: 70,
	},
	{
		name:  "gemini stream, cumulative with thoughts",
		ctype: "text/event-stream",
		chunks: []string{
			"data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":11,\"candidatesTokenCount\":2}}\n\n",
			"data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":11,\"candidatesTokenCount\":8,\"thoughtsTokenCount\":5}}\n\n",
		},
		in: 11, out: 13,
	},
	{
		name:  "gemini json array",
		ctype: "application/json",
		chunks: []string{
			`[{"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":1}},`,
			`{"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":6}}]`,
		},
		in: 4, out: 6,
	},
	{
		name:   "sse split byte by byte",
		ctype:  "text/event-stream",
		chunks: strings.Split("data: {\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n", ""),
		in:     3, out: 2,
	},
	{
		name:  "openai batch output, JSON Lines, a line split across writes",
		ctype: "application/jsonl",
		chunks: []string{
			`{"id":"batch_req_1","custom_id":"a","response":{"status_code":200,"body":{"id":"chatcmpl-1","usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}},"error":null}` + "\n" +
				`{"id":"batch_req_2","custom_id":"b","response":{"status_code":200,"body":{"usage":{"prompt_`,
			`tokens":20,"completion_tokens":3}}},"error":null}` + "\r\n",
			`{"id":"batch_req_3","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"not done"}}` + "\n",
		},
		in: 30, out: 5,
	},
	{
		name:  "anthropic batch results, x-ndjson, the last line without its newline",
		ctype: "application/x-ndjson",
		chunks: []string{
			`{"custom_id":"a","result":{"type":"succeeded","message":{"id":"msg_1","usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}}` + "\n\n",
			`{"custom_id":"b","result":{"type":"succeeded","message":{"usage":{"input_tokens":7,"output_tokens":2}}}}`,
		},
		in: 112, out: 3,
	},
	{
		name:  "gemini batch output, JSON Lines",
		ctype: "application/jsonl; charset=utf-8",
		chunks: []string{
			`{"key":"a","response":{"candidates":[],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":1,"thoughtsTokenCount":2}}}` + "\n",
			`{"key":"b","response":{"candidates":[],"usageMetadata":{"promptTokenCount":6,"candidatesTokenCount":3}}}` + "\n",
		},
		in: 10, out: 6,
	},
	{
		name:   "JSON Lines split byte by byte",
		ctype:  "application/x-ndjson",
		chunks: strings.Split(`{"response":{"body":{"usage":{"prompt_tokens":1,"completion_tokens":1}}}}`+"\n"+`{"usage":{"prompt_tokens":2,"completion_tokens":2}}`+"\n", ""),
		in:     3, out: 3,
	},
	{
		name:  "a batch output file served as octet-stream: one answer a line",
		ctype: "application/octet-stream",
		chunks: []string{
			`{"custom_id":"a","response":{"body":{"usage":{"input_tokens":8,"output_tokens":4}}}}` + "\n",
			`{"custom_id":"b","response":{"body":{"usage":{"input_tokens":9,"output_tokens":5}}}}` + "\n",
		},
		in: 17, out: 9,
	},
	{
		name:   "error without usage",
		ctype:  "application/json",
		status: 429,
		chunks: []string{`{"error":{"message":"rate limited"}}`},
	},
	{
		name:   "not json",
		ctype:  "text/plain",
		chunks: []string{"usage: lots"},
	},
}

// TestUsageShapes: the usage fields of each provider, where the mock does
// not send them: Anthropic cache tokens and cumulative message_delta, OpenAI
// streamed usage chunks (null until the last), Responses events, Gemini
// cumulative usageMetadata with thinking tokens, SSE lines split across
// writes, JSON Lines batch results (each line an answer, summed), errors
// without usage.
func TestUsageShapes(t *testing.T) {
	for _, tc := range usageShapes {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(max(tc.status, 200))
				for _, c := range tc.chunks {
					_, _ = io.WriteString(w, c)
					w.(http.Flusher).Flush()
				}
			}))
			defer up.Close()
			g, _ := newGateway(t, Options{Providers: []Provider{OpenAI(up.URL, realKey)}})
			s := open(t, g, "run")
			code, _, body := do(t, socketClient(s.SocketPath()), http.MethodPost, "http://gateway/openai/v1/chat/completions", "{}", map[string]string{"Authorization": "Bearer " + s.Token()})
			if code != max(tc.status, 200) || body != strings.Join(tc.chunks, "") {
				t.Errorf("status %d, body %q: want the answer untouched", code, body)
			}
			if u := s.Usage(); u != (Usage{Requests: 1, InputTokens: tc.in, OutputTokens: tc.out}) {
				t.Errorf("usage %+v, want %d in, %d out", u, tc.in, tc.out)
			}
		})
	}
}

// TestConcurrentSessions: sessions used at once keep their own tokens,
// usage and refusals.
func TestConcurrentSessions(t *testing.T) {
	mock := mockllm.Start(mockllm.Options{})
	defer mock.Close()
	g := mockGateway(t, mock)
	const runs, perRun = 8, 10
	sessions := make([]*Session, runs)
	for i := range sessions {
		sessions[i] = open(t, g, fmt.Sprintf("run-%d", i))
	}
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			c := socketClient(s.SocketPath())
			other := sessions[(i+1)%runs]
			for j := range perRun {
				mc := mockCalls[(i+j)%len(mockCalls)]
				if code, _, body := do(t, c, http.MethodPost, "http://gateway"+mc.path, mc.body, mc.hdr(s.Token())); code != 200 {
					t.Errorf("run %d: status %d %s", i, code, body)
				}
				// The neighbour's token on this socket, and this token on the neighbour's.
				if code, _, _ := do(t, c, http.MethodPost, "http://gateway"+mc.path, mc.body, mc.hdr(other.Token())); code != http.StatusUnauthorized {
					t.Errorf("run %d accepted run %d's token: %d", i, (i+1)%runs, code)
				}
				if code, _, _ := do(t, socketClient(other.SocketPath()), http.MethodPost, "http://gateway"+mc.path, mc.body, mc.hdr(s.Token())); code != http.StatusUnauthorized {
					t.Errorf("run %d's socket accepted run %d's token: %d", (i+1)%runs, i, code)
				}
			}
			if i%2 == 0 {
				pc := socketClient(s.SocketPath())
				pc.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL("http://gateway"))
				do(t, pc, http.MethodGet, fmt.Sprintf("http://run-%d.attacker.example/", i), "", nil)
			}
		})
	}
	wg.Wait()
	for i, s := range sessions {
		if u := s.Usage(); u != (Usage{Requests: perRun, InputTokens: 10 * perRun, OutputTokens: perRun}) {
			t.Errorf("run %d: usage %+v", i, u)
		}
		ref := s.Refused()
		switch {
		case i%2 == 1 && len(ref) != 0:
			t.Errorf("run %d: refusals %v", i, ref)
		case i%2 == 0 && (len(ref) != 1 || ref[0].Host != fmt.Sprintf("run-%d.attacker.example", i)):
			t.Errorf("run %d: refusals %v", i, ref)
		}
	}
	if n := len(mock.Requests()); n != runs*perRun {
		t.Errorf("the mock got %d requests, want %d", n, runs*perRun)
	}
}

// chunked gives its chunks one Read each, and io.EOF only on the Read after
// the last: as a proxy reads an answer whose last bytes it forwards before
// it learns that the answer ended.
type chunked struct{ chunks []string }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

func (c *chunked) Close() error { return nil }

// TestMeterCountsBeforeTheEnd: the meter adds an answer's tokens as soon as
// it has read the bytes that carry them, before the Read that says the
// answer ended: an agent that has its whole answer and asks again finds
// the answer counted (the budget reads the counts). A JSON answer of
// unknown length is counted at its end.
func TestMeterCountsBeforeTheEnd(t *testing.T) {
	json := `{"usage":{"input_tokens":7,"output_tokens":3}}`
	for _, tc := range []struct {
		name, ctype string
		size        int64
		chunks      []string
		early       bool // counted before EOF
	}{
		{"json, its length known", "application/json", int64(len(json)), []string{json[:10], json[10:]}, true},
		{"json, its length unknown", "application/json", -1, []string{json[:10], json[10:]}, false},
		{"sse", "text/event-stream", -1, []string{"event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":7}}}\n\n", "data: {\"usage\":{\"output_tokens\":3}}\n\n"}, true},
		{"json lines", "application/x-ndjson", -1, []string{json + "\n"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var added [2]int64
			var done []int64
			m := newMeter(&chunked{chunks: slices.Clone(tc.chunks)}, tc.ctype, tc.size,
				func(in, out int64) { added[0] += in; added[1] += out },
				func(in, out int64) { done = append(done, in, out) })
			buf := make([]byte, 4096)
			for range tc.chunks {
				if _, err := m.Read(buf); err != nil {
					t.Fatal(err)
				}
			}
			if got := added == [2]int64{7, 3}; got != tc.early {
				t.Errorf("before the end: added %v; counted %v, want %v", added, got, tc.early)
			}
			if _, err := m.Read(buf); err != io.EOF {
				t.Fatalf("want EOF, got %v", err)
			}
			_ = m.Close()
			if added != [2]int64{7, 3} || len(done) != 2 || done[0] != 7 || done[1] != 3 {
				t.Errorf("at the end: added %v, done %v; want 7 in, 3 out, once", added, done)
			}
		})
	}
}
