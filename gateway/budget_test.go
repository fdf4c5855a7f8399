package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// budgetUpstream answers every request with usage of 50 input and 10
// output tokens (60), in the shape of the named provider's API; a request
// whose query has hold=1 sends its first line, then waits for release.
func budgetUpstream(t *testing.T, name string, release <-chan struct{}) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	body := `{"usage":{"input_tokens":50,"output_tokens":10}}`
	switch name {
	case "openai", "xai":
		body = `{"usage":{"prompt_tokens":50,"completion_tokens":10}}`
	case "gemini":
		body = `{"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":10}}`
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Query().Get("hold") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"type\":\"ping\"}\n\n")
			w.(http.Flusher).Flush()
			<-release
			_, _ = io.WriteString(w, "data: "+body+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	return up, &n
}

// waitTokens waits until the session has metered want tokens: they count
// when the proxy reads the end of an answer, a moment after the client got it.
func waitTokens(t *testing.T, s *Session, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		u := s.Usage()
		if u.InputTokens+u.OutputTokens == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage %+v, want %d tokens", u, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// budgetShape reads the message of a budget refusal in each provider's
// error shape.
var budgetShape = map[string]func(t *testing.T, body string) string{
	"anthropic": func(t *testing.T, body string) string {
		var b struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if json.Unmarshal([]byte(body), &b) != nil || b.Type != "error" || b.Error.Type != "invalid_request_error" {
			t.Errorf("not Anthropic's error shape: %s", body)
		}
		return b.Error.Message
	},
	"openai": budgetOpenAIShape,
	"xai":    budgetOpenAIShape,
	"gemini": func(t *testing.T, body string) string {
		var b struct {
			Error struct {
				Code            int
				Message, Status string
			}
		}
		if json.Unmarshal([]byte(body), &b) != nil || b.Error.Code != 400 || b.Error.Status != "FAILED_PRECONDITION" {
			t.Errorf("not Google's error shape: %s", body)
		}
		return b.Error.Message
	},
}

func budgetOpenAIShape(t *testing.T, body string) string {
	var b struct {
		Error struct{ Message, Type, Code string }
	}
	if json.Unmarshal([]byte(body), &b) != nil || b.Error.Code != "alfred_budget_reached" || b.Error.Type != "invalid_request_error" {
		t.Errorf("not OpenAI's error shape: %s", body)
	}
	return b.Error.Message
}

// TestBudget: for each provider, with a budget of 100 tokens and answers
// of 60, the first two requests go through (the second crosses the
// budget), the third is refused (400, in the provider's shape, with the
// figures and how to go on) without reaching the upstream, recorded, and
// BudgetReached says so.
func TestBudget(t *testing.T) {
	for name, c := range endpointCases {
		t.Run(name, func(t *testing.T) {
			up, got := budgetUpstream(t, name, nil)
			g, _ := newGateway(t, Options{Providers: []Provider{c.provider(up.URL, realKey)}})
			s := open(t, g, "run")
			s.SetBudget(Budget{Limit: 100})
			cl := socketClient(s.SocketPath())
			auth := map[string]string{"Authorization": "Bearer " + s.Token()}
			for i := range 2 {
				if code, _, body := do(t, cl, http.MethodPost, "http://gateway/"+name+c.gen, "{}", auth); code != 200 {
					t.Fatalf("request %d: status %d %s", i+1, code, body)
				}
				waitTokens(t, s, int64(60*(i+1)))
				if s.BudgetReached() {
					t.Fatalf("request %d: BudgetReached before any refusal", i+1)
				}
			}
			code, h, body := do(t, cl, http.MethodPost, "http://gateway/"+name+c.gen, "{}", auth)
			if code != http.StatusBadRequest || h.Get("X-Should-Retry") != "false" {
				t.Fatalf("the third request: status %d %v %s, want 400", code, h, body)
			}
			want := "Alfred: the issue's token budget is reached (120 of 100 tokens); a person can add the ai::budget_step label to grant one more step"
			if msg := budgetShape[name](t, body); msg != want {
				t.Errorf("message %q, want %q", msg, want)
			}
			if n := got.Load(); n != 2 {
				t.Errorf("the upstream got %d requests, want 2", n)
			}
			if !s.BudgetReached() {
				t.Error("BudgetReached is false")
			}
			ref := s.Refused()
			if len(ref) != 1 || ref[0].Path != c.gen || ref[0].Reason != "the issue's token budget is reached (120 of 100 tokens)" {
				t.Errorf("refusals %v", ref)
			}
			if u := s.Usage(); u.Requests != 2 {
				t.Errorf("usage %+v: a refused request counted", u)
			}
		})
	}
}

// TestBudgetSpentAndNone: the earlier spending counts against the
// limit; no budget, or a zero one, is no limit.
func TestBudgetSpentAndNone(t *testing.T) {
	up, got := budgetUpstream(t, "anthropic", nil)
	g, _ := newGateway(t, Options{Providers: []Provider{Anthropic(up.URL, realKey)}})
	auth := func(s *Session) map[string]string { return map[string]string{"x-api-key": s.Token()} }

	spent := open(t, g, "run-spent")
	spent.SetBudget(Budget{Limit: 100, Spent: 50})
	c := socketClient(spent.SocketPath())
	if code, _, body := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", "{}", auth(spent)); code != 200 {
		t.Fatalf("status %d %s", code, body)
	}
	waitTokens(t, spent, 60)
	if code, _, body := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", "{}", auth(spent)); code != 400 || !strings.Contains(body, "(110 of 100 tokens)") {
		t.Errorf("status %d %s, want 400 with 110 of 100", code, body)
	}

	for _, b := range []*Budget{nil, {}, {Limit: 0, Spent: 1000}} {
		s, err := g.Open("run-free")
		if err != nil {
			t.Fatal(err)
		}
		if b != nil {
			s.SetBudget(*b)
		}
		c := socketClient(s.SocketPath())
		for i := range 5 {
			if code, _, body := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", "{}", auth(s)); code != 200 {
				t.Fatalf("budget %v, request %d: status %d %s", b, i+1, code, body)
			}
			waitTokens(t, s, int64(60*(i+1)))
		}
		if s.BudgetReached() || s.RefusedTotal() != 0 {
			t.Errorf("budget %v: reached %v, refusals %v", b, s.BudgetReached(), s.Refused())
		}
		_ = s.Close()
	}
	if n := got.Load(); n != 1+3*5 {
		t.Errorf("the upstream got %d requests", n)
	}
}

// TestBudgetInFlight: a request forwarded before the budget is reached is
// not cut when another one crosses it; it ends, and its tokens count.
func TestBudgetInFlight(t *testing.T) {
	release := make(chan struct{})
	up, got := budgetUpstream(t, "anthropic", release)
	g, _ := newGateway(t, Options{Providers: []Provider{Anthropic(up.URL, realKey)}})
	s := open(t, g, "run")
	s.SetBudget(Budget{Limit: 100})
	c := socketClient(s.SocketPath())
	auth := map[string]string{"x-api-key": s.Token()}

	br, line := heldStream(t, c, s.Token())
	if !strings.Contains(line, "ping") {
		t.Fatalf("first line %q", line)
	}
	for i := range 2 { // 60, then 120: crossed
		if code, _, body := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", "{}", auth); code != 200 {
			t.Fatalf("status %d %s", code, body)
		}
		waitTokens(t, s, int64(60*(i+1)))
	}
	if code, _, _ := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", "{}", auth); code != 400 {
		t.Errorf("over the budget: status %d, want 400", code)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), `"output_tokens":10`) {
		t.Fatalf("the request in flight was cut: %q %v", rest, err)
	}
	waitTokens(t, s, 180)
	if n := got.Load(); n != 3 || !s.BudgetReached() {
		t.Errorf("the upstream got %d requests, BudgetReached %v", n, s.BudgetReached())
	}
}
