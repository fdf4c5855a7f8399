package state

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

var (
	propFor  = flag.Duration("state.prop", 2*time.Second, "how long TestRandomTransactions runs")
	propSeed = flag.Uint64("state.seed", 0, "seed of TestRandomTransactions (0: a new one, logged)")
)

// propModel is what the store should hold: generic records by path (their
// JSON) and mailboxes by issue number (their LLMRetries).
type propModel struct {
	generic   map[string]string
	mailboxes map[int64]int
}

// propTx is one random transaction's writes, applied to the model if the
// store answers nil.
type propTx struct {
	puts      map[string]string
	dels      map[string]bool
	mbPuts    map[int64]int
	mbDels    map[int64]bool
	fail      bool // the function returns an error after its writes
	panicking bool // the function panics after its writes
}

const propWorkers = 4

// TestRandomTransactions: random transactions, up to four at once (so they
// share journal frames), against a store with Options.Journal and a map;
// half the mailboxes written are finished, so that they go cold (at Close
// and in the background) and come back warm; some fail or panic after
// writing and must leave nothing. The store is compared with the map after
// every step, reopened at random points, half of them without folding the
// journal (as a crash leaves it: Open replays it), then compared again, as
// is a read-only store opened next to it (which reads the journal too),
// and checked by git fsck at the end.
// -state.prop sets how long it runs, -state.seed replays a run:
// go test ./state -run TestRandomTransactions -args -state.prop=5m
func TestRandomTransactions(t *testing.T) {
	defer func(at int) { coldFreezeAt = at }(coldFreezeAt)
	coldFreezeAt = 3
	seed := *propSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -state.seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := filepath.Join(t.TempDir(), "state.git")
	open := func() *Store {
		s, err := Open(context.Background(), dir, Options{MergeAt: 4, Journal: true})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	}
	s := open()
	defer func() { s.Close() }()
	model := propModel{generic: map[string]string{}, mailboxes: map[int64]int{}}
	steps, reopens := 0, 0
	for deadline := time.Now().Add(*propFor); time.Now().Before(deadline); steps++ {
		txs := make([]propTx, 1+rng.IntN(propWorkers))
		for g := range txs {
			txs[g] = randomTx(rng, g)
		}
		errs := runConcurrently(s, txs)
		for g, tx := range txs {
			switch {
			case tx.fail || tx.panicking:
				if errs[g] == nil {
					t.Fatalf("step %d: a failing transaction committed", steps)
				}
			case errs[g] != nil:
				t.Fatalf("step %d: update: %v", steps, errs[g])
			default:
				model.apply(tx)
			}
		}
		compareStore(t, s, model, fmt.Sprintf("step %d", steps))
		if rng.IntN(10) == 0 {
			// Half the reopens leave the journal unfolded, as a crash would:
			// the next Open replays it.
			if err := s.shut(rng.IntN(2) == 0); err != nil {
				t.Fatalf("close: %v", err)
			}
			s = open()
			reopens++
			compareStore(t, s, model, fmt.Sprintf("step %d, reopened", steps))
			ro, err := Open(context.Background(), dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("open read-only: %v", err)
			}
			compareStore(t, ro, model, fmt.Sprintf("step %d, read-only", steps))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	fsck(t, dir)
	t.Logf("%d steps, %d reopens, %d records at the end", steps, reopens, len(model.generic)+len(model.mailboxes))
}

// randomTx draws a transaction of worker g: it touches only the keys of
// that worker, so concurrent transactions commute.
func randomTx(rng *rand.Rand, g int) propTx {
	tx := propTx{puts: map[string]string{}, dels: map[string]bool{}, mbPuts: map[int64]int{}, mbDels: map[int64]bool{}}
	for range 1 + rng.IntN(5) {
		key := rng.IntN(12)*propWorkers + g
		path := fmt.Sprintf("events/%c/%d.json", 'a'+rune(key%3), key)
		iid := int64(key + 1)
		switch rng.IntN(4) {
		case 0:
			tx.puts[path] = fmt.Sprintf(`{"format_version":1,"v":%d}`, rng.IntN(1000))
			delete(tx.dels, path)
		case 1:
			tx.dels[path] = true
			delete(tx.puts, path)
		case 2:
			tx.mbPuts[iid] = rng.IntN(1000)
			delete(tx.mbDels, iid)
		case 3:
			tx.mbDels[iid] = true
			delete(tx.mbPuts, iid)
		}
	}
	switch rng.IntN(12) {
	case 0:
		tx.fail = true
	case 1:
		tx.panicking = true
	}
	return tx
}

var errPropFail = errors.New("the transaction fails on purpose")

// runConcurrently runs each transaction in its own Update, all at once.
func runConcurrently(s *Store, txs []propTx) []error {
	errs := make([]error, len(txs))
	var wg sync.WaitGroup
	for g, ptx := range txs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = s.Update(context.Background(), func(tx *Tx) error { return ptx.run(tx) })
		}()
	}
	wg.Wait()
	return errs
}

func (p propTx) run(tx *Tx) error {
	for path, raw := range p.puts {
		if err := tx.PutRaw(path, []byte(raw)); err != nil {
			return err
		}
	}
	for path := range p.dels {
		if err := tx.Delete(path); err != nil {
			return err
		}
	}
	for iid, retries := range p.mbPuts {
		m := testMailbox(iid)
		m.LLMRetries = retries
		if retries%2 == 0 { // finished: Close and the background freezes make it cold, a write warm again
			m.Status, m.Phase = MailboxDone, "done"
		}
		if err := tx.PutMailbox(m); err != nil {
			return err
		}
	}
	for iid := range p.mbDels {
		if err := tx.DeleteMailbox(testMailbox(iid).Key()); err != nil {
			return err
		}
	}
	// The transaction reads its own writes.
	for path, raw := range p.puts {
		if got, err := tx.Get(path); err != nil || string(got) != raw {
			return fmt.Errorf("tx.Get(%s) = %s, %v; want its own write %s", path, got, err, raw)
		}
	}
	for iid, retries := range p.mbPuts {
		if got, err := tx.Mailbox(testMailbox(iid).Key()); err != nil || got.LLMRetries != retries {
			return fmt.Errorf("tx.Mailbox(%d) = %d, %v; want its own write %d", iid, got.LLMRetries, err, retries)
		}
	}
	switch {
	case p.fail:
		return errPropFail
	case p.panicking:
		panic("the transaction panics on purpose")
	}
	return nil
}

func (m propModel) apply(tx propTx) {
	maps.Copy(m.generic, tx.puts)
	for path := range tx.dels {
		delete(m.generic, path)
	}
	maps.Copy(m.mailboxes, tx.mbPuts)
	for iid := range tx.mbDels {
		delete(m.mailboxes, iid)
	}
}

// compareStore fails the test unless s holds exactly what model holds.
func compareStore(t *testing.T, s *Store, model propModel, when string) {
	t.Helper()
	want := slices.Sorted(maps.Keys(model.generic))
	if got := s.List("events"); !slices.Equal(got, want) {
		t.Fatalf("%s: List(events) = %v, want %v", when, got, want)
	}
	for path, raw := range model.generic {
		if got, err := s.Get(path); err != nil || string(got) != raw {
			t.Fatalf("%s: Get(%s) = %s, %v; want %s", when, path, got, err, raw)
		}
	}
	mbs, err := s.Mailboxes()
	if err != nil {
		t.Fatalf("%s: mailboxes: %v", when, err)
	}
	if len(mbs) != len(model.mailboxes) {
		t.Fatalf("%s: %d mailboxes, want %d", when, len(mbs), len(model.mailboxes))
	}
	for iid, retries := range model.mailboxes {
		got, err := s.Mailbox(testMailbox(iid).Key())
		if err != nil || got.LLMRetries != retries {
			t.Fatalf("%s: mailbox %d: retries %d, %v; want %d", when, iid, got.LLMRetries, err, retries)
		}
	}
	if n := s.Len(); n != len(model.generic)+len(model.mailboxes) {
		t.Fatalf("%s: %d records, want %d", when, n, len(model.generic)+len(model.mailboxes))
	}
}
