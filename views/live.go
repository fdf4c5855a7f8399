package views

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/internal/redact"
)

// LiveRuns follows the output of the runs in progress: the engine.
type LiveRuns interface {
	// Follow returns the live output of a run in progress here; false when
	// the run is not followed (finished, not launched yet, or unknown).
	Follow(runID string) (*live.Output, bool)
}

// The live stream's pace: a comment line keeps a quiet stream open through
// proxies, and each write may take this long before the connection is dropped
// (the server's own WriteTimeout would cut a long stream).
const (
	liveHeartbeat   = 15 * time.Second
	liveWriteWindow = 2 * liveHeartbeat
)

// liveRetry is how long a browser waits before it reconnects a dropped
// stream (it resumes after the last lines it got).
const liveRetry = 3 * time.Second

// runLive streams a run's output as server-sent events, behind the same
// access check as the run page: the lines so far, then new lines as they
// come (one "message" event per batch, its id the index to resume from,
// each data line one typed line as JSON: eventStream.lines),
// then an "end" event with the outcome ({"status":..,"outcome":..}). A run
// recorded as in progress but not followed here answers 204, which tells the
// browser not to reconnect; the page then refreshes itself.
func (d Deps) runLive(w http.ResponseWriter, r *http.Request) {
	v, ok := readable(d, w, r, d.locateRun)
	if !ok {
		return
	}
	var out *live.Output
	followed := false
	if d.Live != nil {
		out, followed = d.Live.Follow(v.Run.ID)
	}
	switch {
	case followed:
		d.follow(r.Context(), newEventStream(w, liveWriteWindow), out, lastEventID(r), liveHeartbeat)
	case v.Live:
		w.WriteHeader(http.StatusNoContent)
	default: // ended before the stream began: its record says how
		s := newEventStream(w, liveWriteWindow)
		if err := s.end(d.redactEnd(live.End{Status: string(v.Run.Status), Outcome: v.Run.Outcome})); err != nil {
			d.Logger.Debug("live stream", "run", v.Run.ID, "err", err)
		}
	}
}

// follow sends out's lines from index from until its end, the client leaves,
// or the server stops; a comment line goes out at every heartbeat.
func (d Deps) follow(ctx context.Context, s *eventStream, out *live.Output, from int, heartbeat time.Duration) {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		snap := out.Read(from)
		if err := s.lines(snap, d.Secrets); err != nil {
			d.Logger.Debug("live stream", "err", err)
			return
		}
		from = snap.Next
		if snap.End != nil {
			if err := s.end(d.redactEnd(*snap.End)); err != nil {
				d.Logger.Debug("live stream", "err", err)
			}
			return
		}
		select {
		case <-snap.Changed:
		case <-tick.C:
			if err := s.write(": keep-alive\n\n"); err != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-d.Stopping: // nil: never
			return
		}
	}
}

func (d Deps) redactEnd(e live.End) live.End {
	e.Outcome = redact.Secrets(e.Outcome, d.Secrets)
	return e
}

// lastEventID is where a reconnecting browser resumes (0: from the start).
func lastEventID(r *http.Request) int {
	n, err := strconv.Atoi(r.Header.Get("Last-Event-ID"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// eventStream writes server-sent events, each flushed at once.
type eventStream struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	window time.Duration
}

// newEventStream answers 200 with the event-stream headers.
func newEventStream(w http.ResponseWriter, window time.Duration) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w), window: window}
	_ = s.write(fmt.Sprintf("retry: %d\n\n", liveRetry.Milliseconds())) // a failure shows at the next write
	return s
}

// lines sends the lines of snap, redacted again, as one message whose id is
// the index to resume from; nothing when there is nothing new. Each data
// line is one line as JSON ({"kind","text","tool","args","path","failed",
// "partial"}: live.Line), which the page renders as text only; a note says how many
// lines the bound dropped.
func (s *eventStream) lines(snap live.Snapshot, secrets []string) error {
	if len(snap.Lines) == 0 && snap.Skipped == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "id: %d\n", snap.Next)
	if snap.Skipped > 0 {
		snap.Lines = append([]live.Line{{Kind: live.KindNote, Text: fmt.Sprintf("[%d earlier lines not kept]", snap.Skipped)}}, snap.Lines...)
	}
	for _, l := range snap.Lines {
		l.Text = redact.Secrets(l.Text, secrets)
		l.Tool = redact.Secrets(l.Tool, secrets)
		l.Args = redact.Secrets(l.Args, secrets)
		l.Path = redact.Secrets(l.Path, secrets)
		data, err := json.Marshal(l) // one line: newlines and \r are escaped
		if err != nil {
			return fmt.Errorf("live line: %w", err)
		}
		b.WriteString("data: " + string(data) + "\n")
	}
	b.WriteString("\n")
	return s.write(b.String())
}

// end sends the "end" event.
func (s *eventStream) end(e live.End) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("live end: %w", err)
	}
	return s.write("event: end\ndata: " + string(data) + "\n\n")
}

// write sends text now, giving it the stream's window to go out.
func (s *eventStream) write(text string) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.window)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("live stream deadline: %w", err)
	}
	if _, err := io.WriteString(s.w, text); err != nil {
		return fmt.Errorf("live stream: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("live stream flush: %w", err)
	}
	return nil
}

// livePage is the head of a page that may follow a run live: without
// JavaScript it refreshes itself, as any page of a run in progress does.
func livePage(title string, refresh, stream bool) map[string]any {
	return map[string]any{"Title": title, "Refresh": refresh, "Stream": stream}
}
