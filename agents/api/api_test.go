package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		mock    mockllm.Options
		timeout time.Duration
		want    agents.Outcome
		text    string
	}{
		{"answer", mockllm.Options{Reply: "the plan"}, time.Minute, agents.OutcomeSucceeded, "the plan"},
		{"unauthorized", mockllm.Options{Status: http.StatusUnauthorized}, time.Minute, agents.OutcomeFailed, "HTTP 401: invalid x-api-key"},
		{"server error", mockllm.Options{Status: http.StatusInternalServerError}, time.Minute, agents.OutcomeFailed, "HTTP 500: mockllm: status 500"},
		{"timeout", mockllm.Options{Delay: time.Minute}, 50 * time.Millisecond, agents.OutcomeTimeout, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mock := mockllm.Start(tt.mock)
			defer mock.Close()
			a, err := New(Options{BaseURL: mock.URL + "/v1/", APIKey: "sk-secret-value", Model: "default-model"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(context.Background(), agents.Request{Prompt: "analyse issue 7", Phase: agents.PhaseAnalysis, Timeout: tt.timeout})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want || res.Text != tt.text {
				t.Fatalf("result = %s %q, want %s %q", res.Outcome, res.Text, tt.want, tt.text)
			}
			if strings.Contains(string(res.Stderr)+res.Text, "sk-secret-value") {
				t.Fatal("the API key leaked into the result")
			}
			reqs := mock.Requests()
			if len(reqs) != 1 || reqs[0].API != mockllm.APIChat || reqs[0].Model != "default-model" ||
				reqs[0].Messages != 1 || reqs[0].LastUserText != "analyse issue 7" || reqs[0].Header.Get("Authorization") != "Bearer [redacted]" {
				t.Fatalf("mock saw %+v", reqs)
			}
			if tt.want == agents.OutcomeSucceeded && (res.InputTokens != 10 || res.OutputTokens != 1 || len(res.Stdout) == 0) {
				t.Fatalf("usage %d/%d stdout %q", res.InputTokens, res.OutputTokens, res.Stdout)
			}
		})
	}
}

func TestRefuses(t *testing.T) {
	a, err := New(Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Capabilities(); c.Kind != agents.KindAPI || c.ResumableSessions || c.Validate() != nil {
		t.Fatalf("capabilities = %+v", c)
	}
	if _, err := a.Run(context.Background(), agents.Request{Prompt: "p", Phase: agents.PhaseAnswer, Session: &agents.SessionRef{Name: "b"}}); err == nil {
		t.Error("a session reference was accepted")
	}
	if _, err := a.Run(context.Background(), agents.Request{Prompt: "p", Phase: agents.PhaseDevelopment}); err == nil {
		t.Error("the development phase was accepted")
	}
	res, err := a.Run(context.Background(), agents.Request{Prompt: "p", Phase: agents.PhaseAnswer, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeFailed || !strings.HasPrefix(res.Text, "request failed: ") {
		t.Fatalf("unreachable API: %s %q", res.Outcome, res.Text)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without a base URL: no error")
	}
}
