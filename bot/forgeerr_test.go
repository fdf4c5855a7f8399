package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/state"
)

// TestForgeFailuresAreSaidNotRetried: a forge call is retried by the forge
// client alone. A refusal (403) fails the event at once, and a forge that
// hangs frees the mailbox's worker after the call's budget; each is said in
// the thread in a sentence a person can act on, and ai::retry handles the
// event again once they have.
func TestForgeFailuresAreSaidNotRetried(t *testing.T) {
	t.Parallel()
	w := newForgejoWorld(t, forges.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		AttemptTimeout: 100 * time.Millisecond, Budget: 300 * time.Millisecond})
	w.agent.ReplyNext("## Functional analysis\n\nUsers want a greeting.\n\n## Questions\n\n- In which languages?")
	w.fj.ActOpenIssue(forges.Issue{Number: 1, Title: "Say hello", Body: "The demo should greet.", Author: forgejotest.Owner, Labels: []string{"type::task"}})
	w.accepted(w.fj.ActAssign(1, forgejotest.Bot, forgejotest.Owner))
	w.wait(lifecycle.StatusWaitingInfo)

	// 403 on the first call of the answer's handling: had the engine tried
	// the event again, the next call would have passed and nothing would be
	// set aside.
	w.fj.FailNext(403, 1)
	w.accepted(w.fj.ActComment(1, forgejotest.Owner, "English for now."))
	q := w.quarantined(1)
	if !strings.Contains(q.Error, "(403)") || !strings.Contains(q.Error, "write access") || !strings.Contains(q.Error, "@"+forgejotest.Bot) {
		t.Errorf("quarantined with %q, want the 403 said as what to do", q.Error)
	}
	w.threadSays("write access")

	// The person fixed it: ai::retry handles the answer.
	w.accepted(w.fj.ActLabel(1, forgejotest.Owner, []string{"ai::retry"}, nil))
	w.wait(lifecycle.StatusWaitingValidation)

	// A forge that never answers: the worker gives up after the budget.
	w.fj.Hang(1 << 20)
	w.accepted(w.fj.ActComment(1, forgejotest.Owner, "@"+forgejotest.Bot+" please keep it in one file"))
	q = w.quarantined(1)
	if !strings.Contains(q.Error, "did not answer in time") {
		t.Errorf("quarantined with %q, want the forge's silence said", q.Error)
	}
	w.fj.ClearFaults()
	w.threadSays("did not answer in time") // the status comment, at the next update
	w.accepted(w.fj.ActLabel(1, forgejotest.Owner, []string{"ai::retry"}, nil))
	waitUntil(t, func() bool { runs, _ := w.st.Runs(w.key.ID()); return len(runs) == 3 })
	w.wait(lifecycle.StatusWaitingValidation)
}

// quarantined waits until issue 1's mailbox sets aside n events and returns
// the last.
func (w *forgejoWorld) quarantined(n int) state.QuarantinedEvent {
	w.t.Helper()
	var mb state.Mailbox
	waitUntil(w.t, func() bool {
		mb, _ = w.st.Mailbox(w.key)
		return len(mb.Quarantined) == n
	})
	return mb.Quarantined[n-1]
}

// threadSays waits until issue 1's status comment contains s.
func (w *forgejoWorld) threadSays(s string) {
	w.t.Helper()
	waitUntil(w.t, func() bool {
		is, _ := w.fj.Issue(1)
		for _, c := range is.Comments {
			if _, k, _ := forges.ParseMarker(c.Body); k == lifecycle.KindSession && strings.Contains(c.Body, s) {
				return true
			}
		}
		return false
	})
}
