package bot

import "github.com/alchemic-studio/alfred/bot/lifecycle"

// Waiting states of the events whose mailbox has no status to give.
const (
	waitingNew        = "new"        // a mailbox key with no mailbox yet (an issue just assigned)
	waitingProject    = "project"    // about the project, not one issue or merge request
	waitingNone       = "none"       // a mailbox whose status is empty
	waitingUnreadable = "unreadable" // a mailbox whose record cannot be read
)

// waitingStates are the states Waiting always reports, at 0 when no event
// waits in them: the statuses of the label catalogue and the waiting* ones.
func waitingStates() []string {
	states := []string{waitingNew, waitingProject, waitingNone, waitingUnreadable}
	for _, s := range lifecycle.Statuses() {
		states = append(states, string(s))
	}
	return states
}

// Waiting counts the events accepted and not yet handled, the ones being
// handled included, by the status of their mailbox (or one of the waiting*
// states); every state of waitingStates is there, at 0 when none waits. It
// costs one pass over the queued messages under the inbox's lock, then one
// in-memory read per mailbox outside it.
func (e *Engine) Waiting() map[string]int {
	out := map[string]int{}
	for _, s := range waitingStates() {
		out[s] = 0
	}
	if e.inbox == nil {
		return out
	}
	for key, n := range e.inbox.waiting() {
		out[e.waitingState(key)] += n
	}
	return out
}

// waitingState is what Waiting files the events of key under.
func (e *Engine) waitingState(key string) string {
	if !isMailboxKey(key) {
		return waitingProject
	}
	mb, err := e.mailbox(key)
	switch {
	case err != nil:
		return waitingUnreadable
	case mb == nil:
		return waitingNew
	case mb.Status == "":
		return waitingNone
	}
	return mb.Status
}

// waiting counts the events queued by key, with the one being handled, which
// stays at the head of its queue until its handling ends.
func (in *inbox) waiting() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := map[string]int{}
	for key, q := range in.queues {
		for _, m := range q {
			if m.event != nil {
				out[key]++
			}
		}
	}
	return out
}
