package bot

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
)

// TestPanicIsQuarantined: a panic in the handling of one event fails that
// event alone: the engine lives, other mailboxes go on, the event is set
// aside (recorded, listed on its mailbox and in the status comment), a
// restart does not replay it, and ai::retry handles it again.
func TestPanicIsQuarantined(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var boom atomic.Bool
	var tries atomic.Int32
	boom.Store(true)
	hook := func(ev *forges.Event) {
		if ev.Comment != nil && ev.Comment.Body == "boom" {
			tries.Add(1)
			if boom.Load() {
				panic("injected for the test")
			}
		}
	}
	h.engine.beforeEvent = hook
	h.assign(7)
	h.waitStatus(7, lifecycle.StatusWaitingValidation)

	bad := h.send(forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: h.issueTarget(7),
		Comment: &forges.Comment{ID: 500, Author: "alice", Body: "boom"}})
	h.assign(8) // another mailbox meanwhile
	rec := h.handled(bad.DeliveryID)
	if !strings.HasPrefix(rec.Outcome, "quarantined: panic: injected for the test") {
		t.Fatalf("event record: %+v", rec)
	}
	if n := tries.Load(); n != retryTries {
		t.Errorf("the panicking event was tried %d times, want %d", n, retryTries)
	}
	h.waitStatus(8, lifecycle.StatusWaitingValidation)
	mb := h.mailbox(7)
	if len(mb.Quarantined) != 1 || mb.Quarantined[0].Delivery != bad.DeliveryID {
		t.Fatalf("quarantined on the mailbox: %+v", mb.Quarantined)
	}
	waitUntil(t, func() bool {
		return strings.Contains(h.statusComment(7), "Alfred could not process the event comment_created (delivery "+bad.DeliveryID+"): panic: injected for the test; add `ai::retry`")
	})

	// A restart does not replay it.
	cfg := h.engine.cfg
	h.engine.Close()
	before := tries.Load()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.beforeEvent = hook
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.engine = e
	t.Cleanup(e.Close)
	h.assign(9)
	h.waitStatus(9, lifecycle.StatusWaitingValidation)
	if n := tries.Load(); n != before {
		t.Fatalf("the quarantined event was handled again after the restart (%d tries, %d before)", n, before)
	}

	// ai::retry: handled again, now that it no longer panics.
	boom.Store(false)
	h.command(7, lifecycle.CommandRetry)
	waitUntil(t, func() bool {
		return !strings.HasPrefix(h.eventRecord(bad.DeliveryID).Outcome, "quarantined")
	})
	if got := h.mailbox(7); len(got.Quarantined) != 0 || got.Status != string(lifecycle.StatusWaitingValidation) {
		t.Errorf("after ai::retry: status %s, quarantined %+v", got.Status, got.Quarantined)
	}
	if tries.Load() != before+1 {
		t.Errorf("ai::retry handled the event %d times, want once", tries.Load()-before)
	}
	waitUntil(t, func() bool { return !strings.Contains(h.statusComment(7), "could not process") })
}

// statusComment is the body of the mailbox's status comment.
func (h *harness) statusComment(iid int64) string {
	cs, _ := h.forge.Comments(context.Background(), h.issueTarget(iid))
	for _, c := range cs {
		if _, k, _ := forges.ParseMarker(c.Body); k == lifecycle.KindSession {
			return c.Body
		}
	}
	return ""
}
