package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// eventRecord is a handled webhook event in the state branch, at
// events/{day}/{received}-{delivery hash}.json, with what handling made of
// it. Records are kept for eventRetention, so that redeliveries are
// recognised after a restart, then pruned. (Before it is handled, an event is
// in the journal: see journal.go.)
type eventRecord struct {
	FormatVersion int           `json:"format_version"`
	Delivery      string        `json:"delivery_id"`
	ReceivedAt    time.Time     `json:"received_at"`
	Event         *forges.Event `json:"event"`
	Done          bool          `json:"done"`
	Outcome       string        `json:"outcome,omitempty"` // what handling did, or why it ignored it
}

// quarantinedOutcome starts the outcome of an event handling gave up on.
const quarantinedOutcome = "quarantined: "

const (
	eventsDir      = "events"
	eventRetention = 7 * 24 * time.Hour
)

func eventPath(received time.Time, delivery string) string {
	sum := sha256.Sum256([]byte(delivery))
	return fmt.Sprintf("%s/%s/%020d-%s.json", eventsDir, received.UTC().Format("2006-01-02"),
		received.UnixNano(), hex.EncodeToString(sum[:6]))
}

// message is one thing a mailbox's worker handles: a recorded forge event, or
// the end of one of its runs, or a poll of its merge request.
type message struct {
	event     *forges.Event
	eventPath string    // where the event is recorded once handled
	received  time.Time // when the webhook brought it
	journaled bool      // the journal holds it until it is recorded
	routeErr  error     // the index could not route the event: handling fails at once
	runDone   string    // run id
	poll      bool
}

// inbox serializes the work of each mailbox: one worker goroutine per
// mailbox with pending messages, handling them in arrival order, so two
// events of one mailbox never race; different mailboxes proceed in parallel.
// A message stays at the head of its queue while it is handled (see waiting).
type inbox struct {
	handle func(ctx context.Context, key string, m message)

	mu      sync.Mutex
	queues  map[string][]message
	wg      sync.WaitGroup
	ctx     context.Context
	closing bool
}

func newInbox(ctx context.Context, handle func(context.Context, string, message)) *inbox {
	return &inbox{handle: handle, queues: map[string][]message{}, ctx: ctx}
}

// post queues m for the mailbox key and starts its worker when idle. It
// returns false once the inbox is closing (the message stays recorded and is
// picked up at the next start).
func (in *inbox) post(key string, m message) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closing {
		return false
	}
	q, busy := in.queues[key]
	in.queues[key] = append(q, m)
	if !busy {
		in.wg.Add(1)
		go in.work(key)
	}
	return true
}

func (in *inbox) work(key string) {
	defer in.wg.Done()
	for {
		in.mu.Lock()
		q := in.queues[key]
		if len(q) == 0 || in.closing {
			delete(in.queues, key)
			in.mu.Unlock()
			return
		}
		m := q[0]
		in.mu.Unlock()
		in.handle(in.ctx, key, m)
		in.mu.Lock()
		in.queues[key] = in.queues[key][1:]
		in.mu.Unlock()
	}
}

// close stops taking messages and waits for the handlers in progress.
func (in *inbox) close() {
	in.mu.Lock()
	in.closing = true
	in.mu.Unlock()
	in.wg.Wait()
}

// Intake records ev durably and queues it for its mailbox. It is the sink
// of the webhook handlers: once it returns nil the event survives a crash
// (it is in the journal), so the webhook can be answered. A redelivery (same
// delivery id) is dropped.
func (e *Engine) Intake(ctx context.Context, ev *forges.Event) error {
	if ev.DeliveryID == "" {
		ev.DeliveryID = syntheticDelivery(ev)
	}
	e.events.seenMu.Lock()
	if _, dup := e.events.seen[ev.DeliveryID]; dup {
		e.events.seenMu.Unlock()
		e.log.Info("redelivery dropped", "delivery", ev.DeliveryID, "type", ev.Type)
		return nil
	}
	now := e.now()
	e.events.seen[ev.DeliveryID] = now
	e.events.seenMu.Unlock()

	if err := e.events.journal.append(journalEntry{Delivery: ev.DeliveryID, ReceivedAt: now, Event: ev}); err != nil {
		e.events.seenMu.Lock()
		delete(e.events.seen, ev.DeliveryID)
		e.events.seenMu.Unlock()
		return fmt.Errorf("record event %s: %w", ev.DeliveryID, err)
	}
	e.postEvent(message{event: ev, eventPath: eventPath(now, ev.DeliveryID), received: now, journaled: true})
	return nil
}

// syntheticDelivery names an event that came without a delivery id (a
// poller's), from its content.
func syntheticDelivery(ev *forges.Event) string {
	b, _ := json.Marshal(ev)
	sum := sha256.Sum256(b)
	return "synthetic-" + hex.EncodeToString(sum[:8])
}

// finishEvent queues a handled event for the state branch, with what
// handling made of it. Records are written in batches (flushEvents), so that
// a stream of webhooks costs few commits; until its record is written an
// event stays in the journal, and a crash hands it over to the next start
// (handling is idempotent).
func (e *Engine) finishEvent(m message, outcome string) {
	e.events.finMu.Lock()
	e.events.finished = append(e.events.finished, finished{m: m, outcome: outcome})
	n := len(e.events.finished)
	e.events.finMu.Unlock()
	if n >= flushBatch {
		select {
		case e.events.flushNow <- struct{}{}:
		default:
		}
	}
}

type finished struct {
	m       message
	outcome string
}

const (
	flushEvery = 100 * time.Millisecond
	flushBatch = 256
	pruneEvery = 24 * time.Hour
)

// flushLoop writes the records of handled events until the engine closes,
// then once more.
func (e *Engine) flushLoop() {
	defer close(e.events.flushed)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-t.C:
		case <-prune.C:
			if err := e.pruneEvents(e.ctx); err != nil {
				e.log.Warn("prune events", "err", err)
			}
		case <-e.events.flushNow:
		case <-e.events.stopFlush:
			e.flushEvents()
			return
		}
		if e.events.journal.records.due(time.Now()) { // paced while writes fail (journal.go)
			e.safely("flush", func() error { e.flushEvents(); return nil })
		}
	}
}

func (e *Engine) flushEvents() {
	e.events.finMu.Lock()
	batch := e.events.finished
	e.events.finished, e.events.flushing = nil, batch
	e.events.finMu.Unlock()
	defer func() {
		e.events.finMu.Lock()
		e.events.flushing = nil
		e.events.finMu.Unlock()
	}()
	if len(batch) == 0 {
		return
	}
	err := e.store.Update(context.Background(), func(tx *state.Tx) error {
		for _, f := range batch {
			rec := eventRecord{FormatVersion: 1, Delivery: f.m.event.DeliveryID, ReceivedAt: f.m.received, Event: f.m.event, Done: true, Outcome: f.outcome}
			if err := tx.Put(f.m.eventPath, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// The journal keeps them; try again once the pace allows.
		e.events.journal.records.failed(e.log, time.Now(), len(batch), err)
		e.events.finMu.Lock()
		e.events.finished = append(batch, e.events.finished...)
		e.events.finMu.Unlock()
		return
	}
	e.events.journal.records.succeeded(e.log, time.Now(), len(batch))
	for _, f := range batch {
		if f.m.journaled {
			e.events.journal.done()
		}
	}
}

// recoverEvents loads the handled events of the state branch into the
// redelivery filter and queues again, in the order they arrived, the
// journaled events the branch does not record as handled: the work a stopped
// or killed process left.
func (e *Engine) recoverEvents(journaled []journalEntry) {
	paths := e.store.List(eventsDir)
	sort.Strings(paths) // day, then received time
	var pending []message
	for _, p := range paths {
		raw, err := e.store.Get(p)
		if err != nil {
			e.log.Warn("unreadable event record", "path", p, "err", err)
			continue
		}
		var rec eventRecord
		if err := json.Unmarshal(raw, &rec); err != nil || rec.Event == nil {
			e.log.Warn("unreadable event record", "path", p, "err", err)
			continue
		}
		e.events.seen[rec.Delivery] = rec.ReceivedAt
		if !rec.Done { // recorded before the journal existed
			pending = append(pending, message{event: rec.Event, eventPath: p, received: rec.ReceivedAt})
		}
	}
	for _, j := range journaled {
		if _, handled := e.events.seen[j.Delivery]; handled {
			e.events.journal.done()
			continue
		}
		e.events.seen[j.Delivery] = j.ReceivedAt
		pending = append(pending, message{event: j.Event, eventPath: eventPath(j.ReceivedAt, j.Delivery), received: j.ReceivedAt, journaled: true})
	}
	for _, m := range pending {
		e.log.Info("resuming recorded event", "delivery", m.event.DeliveryID, "type", m.event.Type)
		e.postEvent(m)
	}
}

// pruneEvents forgets the events received before the retention: their
// records in the state branch (whole days at a time) and their delivery ids
// in the redelivery filter. It runs at start and every day after.
func (e *Engine) pruneEvents(ctx context.Context) error {
	cutoff := e.now().Add(-eventRetention)
	e.events.seenMu.Lock()
	for id, at := range e.events.seen {
		if at.Before(cutoff) {
			delete(e.events.seen, id)
		}
	}
	e.events.seenMu.Unlock()
	lastDay := eventsDir + "/" + cutoff.UTC().Format("2006-01-02")
	var stale []string
	for _, p := range e.store.List(eventsDir) {
		if p < lastDay { // days before the cutoff's day
			stale = append(stale, p)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	err := e.store.Update(ctx, func(tx *state.Tx) error {
		for _, p := range stale {
			if err := tx.Delete(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("prune old events: %w", err)
	}
	return nil
}

// postEvent queues m for the mailbox its event belongs to. An event the
// index cannot route is logged, counted and queued where its own target
// says, to fail there at once: handled anywhere, it could act on the wrong
// mailbox; failed, it is quarantined and its record says why.
func (e *Engine) postEvent(m message) {
	key, err := e.route(m.event)
	e.postRouted(m, key, err)
}

// postRouted queues m for key, where routing its event placed it, or failed
// to with err.
func (e *Engine) postRouted(m message, key string, err error) {
	if err != nil {
		p := m.event.Target.Project
		e.cfg.Metrics.RoutingError(p.Forge)
		e.log.Error("event not routed: it fails", "delivery", m.event.DeliveryID, "event", m.event.Type,
			"forge", p.Forge, "project", p.FullName(), "mailbox", key, "err", err)
		m.routeErr = err
	}
	e.inbox.post(key, m)
}

// route names the mailbox an event belongs to. Merge request events of a
// merge request the bot opened for an issue, and branch and CI events of an
// issue branch, go to that issue's mailbox, so everything about one issue is
// handled in order. When the index names a mailbox it cannot read, route
// returns the key the event's own target gives, and the error.
func (e *Engine) route(ev *forges.Event) (string, error) {
	return routeEvent(ev, e.store.Routed)
}

// routeEvent is route with the index lookup given.
func routeEvent(ev *forges.Event, routed func(state.Route) (state.Mailbox, bool, error)) (string, error) {
	p := ev.Target.Project
	key := func(kind state.Kind, n int64) string {
		return state.MailboxKey{Forge: p.Forge, Owner: p.Owner, Project: p.Name, Kind: kind, IID: n}.ID()
	}
	if ev.Target.Kind == forges.TargetIssue && ev.Target.Number > 0 {
		return key(state.KindIssue, ev.Target.Number), nil
	}
	own := "project:" + p.Forge + "/" + p.FullName()
	if ev.Target.Kind == forges.TargetMergeRequest && ev.Target.Number > 0 {
		own = key(state.KindMR, ev.Target.Number)
	}
	var routes []state.Route
	via := func(by state.RouteKind, v string) {
		routes = append(routes, state.Route{Forge: p.Forge, Owner: p.Owner, Project: p.Name, By: by, Value: v})
	}
	switch {
	case ev.Target.Kind == forges.TargetMergeRequest && ev.Target.Number > 0:
		via(state.ByMergeRequest, strconv.FormatInt(ev.Target.Number, 10))
	case ev.Target.Number == 0 && ev.Branch != "":
		via(state.ByBranch, ev.Branch)
	}
	if ev.Target.Number == 0 && ev.SHA != "" {
		via(state.ByHead, ev.SHA)
	}
	for _, rt := range routes {
		mb, ok, err := routed(rt)
		if err != nil {
			return own, fmt.Errorf("route by %s %q: %w", rt.By, rt.Value, err)
		}
		if ok {
			return mb.ID, nil
		}
	}
	return own, nil
}

// isMailboxKey tells a mailbox key from a project-wide one.
func isMailboxKey(key string) bool { return !strings.HasPrefix(key, "project:") }

var errNoMailbox = errors.New("no mailbox")
