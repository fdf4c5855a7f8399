// Package api owns the API adapter: one OpenAI chat-completions compatible
// HTTP call per invocation (base URL, key, model), for the text-only phases
// (analysis and answer). It never resumes sessions: each call carries the
// full phase context in its prompt, as every adapter's prompt does.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
)

// ID is the adapter id.
const ID = "api"

// Options configure the adapter.
type Options struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1; the adapter
	// posts to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token. Never logged or put in errors.
	APIKey string
	// Model is used when the request names none.
	Model string
	// Client is the HTTP client; http.DefaultClient when nil.
	Client *http.Client
}

// Adapter is the API adapter.
type Adapter struct {
	opts Options
}

var _ agents.Adapter = (*Adapter)(nil)

// New returns an API adapter.
func New(opts Options) (*Adapter, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("api adapter: no base URL")
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	return &Adapter{opts: opts}, nil
}

// ID implements agents.Adapter.
func (a *Adapter) ID() string { return ID }

// Capabilities implements agents.Adapter.
func (a *Adapter) Capabilities() agents.Capabilities {
	return agents.Capabilities{Kind: agents.KindAPI}
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Run implements agents.Adapter. The response body is kept as Stdout for the
// run log; transport and HTTP errors are a failed outcome with the reason in
// Text and Stderr.
func (a *Adapter) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	if req.Session != nil {
		return nil, errors.New("api adapter: sessions are not resumable")
	}
	if !req.Phase.TextOnly() {
		return nil, fmt.Errorf("api adapter: phase %q changes the worktree; only analysis and answer are served", req.Phase)
	}
	model := req.Model
	if model == "" {
		model = a.opts.Model
	}
	body, err := json.Marshal(chatRequest{Model: model, Messages: []chatMessage{{Role: "user", Content: req.Prompt}}})
	if err != nil {
		return nil, fmt.Errorf("api adapter: encode request: %w", err)
	}
	start := time.Now()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.opts.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("api adapter: build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if a.opts.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+a.opts.APIKey)
	}

	res := &agents.Result{Outcome: agents.OutcomeFailed}
	finish := func(msg string) (*agents.Result, error) {
		if msg != "" {
			res.Text, res.Stderr = msg, []byte(msg+"\n")
		}
		res.Duration = time.Since(start)
		return res, nil
	}
	resp, err := a.opts.Client.Do(hreq)
	if err != nil {
		return finish(a.transportError(ctx, res, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	res.Stdout = raw
	if err != nil {
		return finish(a.transportError(ctx, res, err))
	}
	var cr chatResponse
	decodeErr := json.Unmarshal(raw, &cr)
	if resp.StatusCode/100 != 2 {
		msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
		if cr.Error != nil && cr.Error.Message != "" {
			msg += ": " + cr.Error.Message
		}
		return finish(msg)
	}
	if decodeErr != nil || len(cr.Choices) == 0 {
		return finish("unreadable chat completion response")
	}
	res.Outcome = agents.OutcomeSucceeded
	res.Text = cr.Choices[0].Message.Content
	res.InputTokens, res.OutputTokens = cr.Usage.PromptTokens, cr.Usage.CompletionTokens
	return finish("")
}

// transportError sets the outcome for a failed round trip and says why,
// without the URL's query or any header.
func (a *Adapter) transportError(ctx context.Context, res *agents.Result, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Outcome = agents.OutcomeTimeout
		return "timed out"
	case ctx.Err() != nil:
		res.Outcome = agents.OutcomeCanceled
		return "canceled"
	}
	var uerr interface{ Unwrap() error }
	if errors.As(err, &uerr) && uerr.Unwrap() != nil {
		err = uerr.Unwrap()
	}
	return "request failed: " + err.Error()
}
