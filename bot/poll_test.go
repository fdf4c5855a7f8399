package bot

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/state"
)

// TestFinishedIsDone holds state's finished status equal to the
// lifecycle's terminal ones: the statuses that wait for nobody.
func TestFinishedIsDone(t *testing.T) {
	if got := lifecycle.StatusesWaiting(lifecycle.WaitsNobody); !slices.Equal(got, []string{state.MailboxDone}) {
		t.Fatalf("terminal statuses %v, state.MailboxDone %q", got, state.MailboxDone)
	}
	for _, r := range lifecycle.DispatchRows() {
		if r.On == lifecycle.IntentCI && (len(r.From) == 0 || slices.Contains(r.From, lifecycle.StatusDone)) {
			t.Fatalf("a CI row applies to finished mailboxes: %+v; pollDue reads the open ones only", r)
		}
	}
}

// pollProbe is an engine with a store, a forge the bot reached and an
// inbox that notes the mailboxes it is sent polls for.
type pollProbe struct {
	e      *Engine
	mu     sync.Mutex
	polled []string
}

func newPollProbe(t testing.TB, st *state.Store) *pollProbe {
	p := &pollProbe{e: &Engine{store: st, log: slog.New(slog.DiscardHandler), now: time.Now}}
	p.e.reach.forges = map[string]*forgeReach{"forgejo": {ForgeReach: ForgeReach{Name: "forgejo", Login: "alfred"}}}
	p.e.inbox = newInbox(context.Background(), func(_ context.Context, key string, m message) {
		if m.poll {
			p.mu.Lock()
			p.polled = append(p.polled, key)
			p.mu.Unlock()
		}
	})
	t.Cleanup(p.e.inbox.close)
	return p
}

// putMailboxes writes n issue mailboxes of project alice/demo from iid
// first, each with a merge request, in the status status(iid).
func putMailboxes(t testing.TB, st *state.Store, first, n int64, status func(int64) string) {
	t.Helper()
	for lo := first; lo < first+n; lo += 10000 {
		err := st.Update(context.Background(), func(tx *state.Tx) error {
			for iid := lo; iid < min(lo+10000, first+n); iid++ {
				m := state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: iid,
					Title: "t", Status: status(iid), MergeRequestIID: iid}
				if err := tx.PutMailbox(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestPollDueOpenOnly polls the mailboxes watching their merge request and
// reads no finished one: what pollDue and recoverRuns iterate over
// (Store.OpenMailboxes) leaves them out, through a finish and a reopen.
func TestPollDueOpenOnly(t *testing.T) {
	st := openStore(t)
	statuses := map[int64]string{1: "in_ci", 2: "in_review", 3: "done", 4: "blocked", 5: "done"}
	putMailboxes(t, st, 1, 5, func(iid int64) string { return statuses[iid] })
	id := func(iid int64) string { return fmt.Sprintf("forgejo/alice/demo/issue/%d", iid) }
	for _, c := range []struct {
		name          string
		change        map[int64]string
		polled, reads []string
	}{
		{"as written", nil, []string{id(1), id(2)}, []string{id(1), id(2), id(4)}},
		{"2 finished, 3 reopened", map[int64]string{2: "done", 3: "in_ci"}, []string{id(1), id(3)}, []string{id(1), id(3), id(4)}},
	} {
		for iid, s := range c.change {
			putMailboxes(t, st, iid, 1, func(int64) string { return s })
		}
		p := newPollProbe(t, st)
		p.e.pollDue()
		p.e.inbox.wg.Wait() // the workers of the polls posted
		sort.Strings(p.polled)
		if !slices.Equal(p.polled, c.polled) {
			t.Errorf("%s: polled %v, want %v", c.name, p.polled, c.polled)
		}
		open, err := st.OpenMailboxes()
		var reads []string
		for _, m := range open {
			reads = append(reads, m.ID)
		}
		if err != nil || !slices.Equal(reads, c.reads) {
			t.Errorf("%s: the poll reads %v (%v), want %v", c.name, reads, err, c.reads)
		}
	}
}

// BenchmarkPollDue is one poll's pass over 100k mailboxes, 1k of them
// open (half waiting on CI): read=all is the pass before the index of
// open mailboxes (every mailbox copied through Store.Mailboxes), read=open
// is pollDue.
func BenchmarkPollDue(b *testing.B) {
	st := openStore(b)
	putMailboxes(b, st, 1, 100000, func(iid int64) string {
		switch {
		case iid%200 == 0:
			return "in_ci"
		case iid%200 == 1:
			return "blocked"
		}
		return "done"
	})
	p := newPollProbe(b, st)
	e := p.e
	b.Run("read=all", func(b *testing.B) {
		for range b.N {
			mbs, _ := e.store.Mailboxes()
			for _, mb := range mbs {
				if e.meOn(mb.Forge) == "" {
					continue
				}
				if _, _, ok := lifecycle.Dispatch(lifecycle.Facts{Intent: ciIntent, Mailbox: &mb}); ok {
					e.inbox.post(mb.ID, message{poll: true})
				}
			}
		}
		e.inbox.wg.Wait()
	})
	b.Run("read=open", func(b *testing.B) {
		for range b.N {
			e.pollDue()
		}
	})
	e.inbox.wg.Wait()
}
