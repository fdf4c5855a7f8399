package bot

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/state"
)

// TestBudgetInTheGateway: the engine hands the issue's token budget to the
// run's gateway session (meterBudget), so the model requests of a run past
// it are refused while the run goes, and the session says so.
func TestBudgetInTheGateway(t *testing.T) {
	mock := mockllm.Start(mockllm.Options{Reply: "ok"}) // 11 tokens an answer
	t.Cleanup(mock.Close)
	g, _ := testGateway(t, gateway.Anthropic(mock.URL, "sk-provider-key-0123456789"))
	h := newHarness(t, func(s *setup) { s.settings = append(s.settings, projectSetting("AGENT_BUDGET_TOKENS", "20")) })
	mb := &state.Mailbox{ID: "forgejo/alice/demo/issue/5", Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 5}
	s, err := g.Open("run-budget")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := h.engine.meterBudget(mb, s); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.SocketPath())
	}}}
	var codes []int
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, "http://gateway/anthropic/v1/messages",
			strings.NewReader(`{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("x-api-key", s.Token())
		req.Header.Set("content-type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// The agent reads its answer before it asks again: the gateway
		// counts an answer's tokens before its last bytes go out.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] == 200 || !s.BudgetReached() {
		t.Fatalf("answers %v, budget reached %v; want two through, the third refused", codes, s.BudgetReached())
	}
	if n := len(mock.Requests()); n != 2 {
		t.Fatalf("the model got %d requests, want 2", n)
	}
}
