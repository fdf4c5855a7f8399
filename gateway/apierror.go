package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ErrorShape is the JSON shape of a provider API's errors. The gateway's
// own answers on a provider's behalf (a refused path, the budget reached)
// take it, so that the provider's CLI shows their message.
type ErrorShape string

// The error shapes of the usual providers.
const (
	// ErrorShapeAnthropic: {"type":"error","error":{"type":…,"message":…}}.
	ErrorShapeAnthropic ErrorShape = "anthropic"
	// ErrorShapeOpenAI: {"error":{"message":…,"type":…,"param":null,"code":…}}
	// (OpenAI, and xAI's OpenAI-compatible API).
	ErrorShapeOpenAI ErrorShape = "openai"
	// ErrorShapeGoogle: {"error":{"code":403,"message":…,"status":"PERMISSION_DENIED"}}.
	ErrorShapeGoogle ErrorShape = "google"
	// ErrorShapeGitHub: {"message":…,"documentation_url":…,"status":"403"}
	// (the GitHub REST API).
	ErrorShapeGitHub ErrorShape = "github-rest"
)

// apiError is one kind of answer the gateway gives on a provider's behalf.
type apiError struct {
	status int
	kind   string // error.type (Anthropic, OpenAI)
	code   string // error.code (OpenAI)
	google string // error.status (Google)
}

var (
	// errRefused: a request outside the provider's model endpoints.
	errRefused = apiError{http.StatusForbidden, "permission_error", "alfred_endpoint_refused", "PERMISSION_DENIED"}
	// errBudget: the token budget is reached. 400 rather than 429:
	// every one of the CLIs retries a 429 with backoff (minutes before the
	// run ends), and shows a 400 at once.
	errBudget = apiError{http.StatusBadRequest, "invalid_request_error", "alfred_budget_reached", "FAILED_PRECONDITION"}
)

// writeAPIError answers e with msg in the provider's error shape (the
// gateway's generic one, read by Anthropic and OpenAI clients alike, for a
// provider of no known shape). Its clients are told not to retry.
func (p *provider) writeAPIError(w http.ResponseWriter, e apiError, msg string) {
	var body any
	switch p.ErrorShape {
	case ErrorShapeAnthropic:
		body = map[string]any{"type": "error", "error": map[string]any{"type": e.kind, "message": msg}}
	case ErrorShapeOpenAI:
		body = map[string]any{"error": map[string]any{"message": msg, "type": e.kind, "param": nil, "code": e.code}}
	case ErrorShapeGoogle:
		body = map[string]any{"error": map[string]any{"code": e.status, "message": msg, "status": e.google}}
	case ErrorShapeGitHub:
		body = map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(e.status)}
	default:
		w.Header().Set("X-Should-Retry", "false")
		writeError(w, e.status, e.kind, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Alfred-Gateway", "1")
	w.Header().Set("X-Should-Retry", "false") // the Stainless SDKs (Anthropic, OpenAI) honour it
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(body)
}
