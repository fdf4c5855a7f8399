package forges

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxWebhookBody caps a webhook body; a longer delivery is answered 413.
const MaxWebhookBody = 5 << 20

// Sink receives each verified, parsed, non-ignored event. An error makes the
// handler answer 500 so that the forge delivers again later; the engine drops
// redeliveries by Event.DeliveryID.
type Sink func(ctx context.Context, ev *Event) error

// NewWebhookHandler serves one configured forge's webhook endpoint (POST
// /webhooks/{name}). It reads at most MaxWebhookBody bytes, verifies the
// delivery against secrets before parsing anything, parses it with hooks, sets
// Target.Project.Forge to name and hands the event to sink. Answers, each with
// a one-line text reason:
//
//	405 not a POST
//	413 body larger than MaxWebhookBody
//	400 body unreadable or malformed
//	401 signature or token missing or wrong
//	200 "ignored: <reason>" for a delivery the bot has no use for
//	500 the sink failed (the forge redelivers)
//	202 "accepted" once the sink has taken the event
//
// Refused says what it refused for a wrong signature or token, for the
// health notes: the forge's webhook secret and ALFRED_WEBHOOK_SECRETS
// disagree, which nobody would see otherwise.
func NewWebhookHandler(name string, hooks Hooks, secrets []string, sink Sink, logger *slog.Logger) *WebhookHandler {
	if logger == nil {
		logger = slog.Default()
	}
	return &WebhookHandler{name: name, hooks: hooks, secrets: secrets, sink: sink, log: logger.With("forge", name)}
}

// WebhookHandler is one forge's webhook endpoint (NewWebhookHandler).
type WebhookHandler struct {
	name    string
	hooks   Hooks
	secrets []string
	sink    Sink
	log     *slog.Logger

	mu      sync.Mutex
	refused Refusals
}

// Refusals are the deliveries a handler refused for their signature or
// token since it started.
type Refusals struct {
	Count       int
	First, Last time.Time
	Reason      string // the last one's
}

// Refused says the deliveries refused for their signature or token.
func (h *WebhookHandler) Refused() Refusals {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

func (h *WebhookHandler) refuse(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if h.refused.Count == 0 {
		h.refused.First = now
	}
	h.refused.Count++
	h.refused.Last, h.refused.Reason = now, reason
}

func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "method not allowed: webhooks are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.log.Warn("webhook refused", "status", 413, "reason", "body too large")
			reply(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxWebhookBody))
			return
		}
		reply(w, http.StatusBadRequest, "cannot read body: "+oneLine(err.Error()))
		return
	}
	if err := h.hooks.Verify(r.Header, body, h.secrets); err != nil {
		h.log.Warn("webhook refused", "status", 401, "reason", err.Error())
		h.refuse(oneLine(err.Error()))
		reply(w, http.StatusUnauthorized, oneLine(err.Error()))
		return
	}
	ev, err := h.hooks.Parse(r.Header, body)
	if err == nil && ev == nil {
		err = fmt.Errorf("%w: parser returned no event", ErrMalformed)
	}
	if err != nil {
		h.log.Warn("webhook refused", "status", 400, "reason", err.Error())
		reply(w, http.StatusBadRequest, oneLine(err.Error()))
		return
	}
	ev.Target.Project.Forge = h.name
	log := h.log.With("delivery", ev.DeliveryID, "type", string(ev.Type))
	if ev.Type == EventIgnored {
		log.Debug("webhook ignored", "reason", ev.Reason)
		reply(w, http.StatusOK, "ignored: "+oneLine(ev.Reason))
		return
	}
	if err := h.sink(r.Context(), ev); err != nil {
		log.Error("webhook not handled", "err", err)
		reply(w, http.StatusInternalServerError, "not handled, deliver again later")
		return
	}
	log.Info("webhook accepted", "project", ev.Target.Project.FullName(), "number", ev.Target.Number)
	reply(w, http.StatusAccepted, "accepted")
}

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
