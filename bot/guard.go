package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// PanicError is a panic recovered while handling one event or run: it fails
// that event or run alone, never the process.
type PanicError struct {
	Value string // the panic's value, redacted
	Stack []byte
}

func (p *PanicError) Error() string { return "panic: " + p.Value }

// safely runs f and turns a panic into a *PanicError, logged with its stack
// and attrs (the event or run it concerned).
func (e *Engine) safely(what string, f func() error, attrs ...any) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		p := &PanicError{Value: e.redact(fmt.Sprint(v)), Stack: debug.Stack()}
		e.cfg.Metrics.PanicRecovered(what)
		e.log.Error("panic recovered", append([]any{"in", what, "panic", p.Value, "stack", string(p.Stack)}, attrs...)...)
		err = p
	}()
	return f()
}

// quarantine sets aside an event whose handling failed every time it was
// tried: its record says so (journal replay skips it), and its mailbox lists
// it, in the status comment too, until ai::retry handles it again.
func (e *Engine) quarantine(ctx context.Context, key string, m message, cause error) {
	e.cfg.Metrics.EventQuarantined()
	e.log.Error("event quarantined", "mailbox", key, "delivery", m.event.DeliveryID, "event", m.event.Type, "err", e.redact(cause.Error()))
	mb, err := e.mailbox(key)
	if err != nil {
		return // the record and the log say it
	}
	fresh := mb == nil
	if fresh && (!isMailboxKey(key) || m.event.Target.Kind != forges.TargetIssue) {
		return // no issue to show it on: the record and the log say it
	}
	if fresh {
		// The issue's first event failed (its start): a mailbox that only
		// holds it, shown in the thread, so that ai::retry finds it.
		p := m.event.Target.Project
		mb = &state.Mailbox{ID: key, Forge: p.Forge, Owner: p.Owner, Project: p.Name, Kind: state.KindIssue, IID: m.event.Target.Number}
		if is := m.event.Issue; is != nil {
			mb.Title, mb.IssueURL, mb.Author = is.Title, is.URL, is.Author
		}
	}
	mb.Quarantined = append(mb.Quarantined, state.QuarantinedEvent{Delivery: m.event.DeliveryID, Type: string(m.event.Type),
		Path: m.eventPath, Error: e.redact(cause.Error()), At: e.now()})
	err = e.safely("quarantine", func() error {
		if fresh {
			// Kept only once the thread shows it: an issue the forge no
			// longer has gets no mailbox.
			if err := e.updateStatusComment(ctx, mb); err != nil {
				return err
			}
			return e.save(ctx, mb)
		}
		if err := e.save(ctx, mb); err != nil {
			return err
		}
		return e.updateStatusComment(ctx, mb)
	}, "mailbox", key)
	if err != nil {
		e.log.Warn("show a quarantined event", "mailbox", key, "err", err)
	}
}

// release hands the mailbox's quarantined events to its worker again, in
// their order, after the ones queued now; ai::retry does this.
func (e *Engine) release(ctx context.Context, mb *state.Mailbox) error {
	if len(mb.Quarantined) == 0 {
		return nil
	}
	for _, q := range mb.Quarantined {
		rec, err := e.eventRecord(q.Path)
		if err != nil || rec.Event == nil {
			e.log.Warn("a quarantined event has no record: not handled again", "mailbox", mb.ID, "delivery", q.Delivery, "err", err)
			continue
		}
		e.inbox.post(mb.ID, message{event: rec.Event, eventPath: q.Path, received: rec.ReceivedAt})
	}
	n := len(mb.Quarantined)
	mb.Quarantined = nil
	e.log.Info("quarantined events released", "mailbox", mb.ID, "events", n)
	if err := e.save(ctx, mb); err != nil {
		return err
	}
	return e.updateStatusComment(ctx, mb)
}

// eventRecord reads the record of the event at path, or, while it waits for
// its batch to be written (flushEvents), the event as handled.
func (e *Engine) eventRecord(path string) (eventRecord, error) {
	e.events.finMu.Lock()
	for _, f := range slices.Concat(e.events.flushing, e.events.finished) {
		if f.m.eventPath == path {
			e.events.finMu.Unlock()
			return eventRecord{Event: f.m.event, ReceivedAt: f.m.received}, nil
		}
	}
	e.events.finMu.Unlock()
	var rec eventRecord
	raw, err := e.store.Get(path)
	if err == nil {
		err = json.Unmarshal(raw, &rec)
	}
	return rec, err
}
