package bot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// journal is the durable intake queue: each webhook event is appended as one
// JSON line and synced before the webhook is answered (fdatasync and a
// pre-zeroed file measured no faster here than fsync). Concurrent appends share
// one sync. Once handled, an event is recorded in the state branch (its
// history and the redelivery filter); when no journaled event is left
// unhandled, the file is emptied. At start, the lines whose events the branch
// does not record as done are handled again; a torn last line was never
// acknowledged and is dropped.
//
// A failed write or sync (a full disk) fails the appends in flight, whose
// webhooks are answered 500 so that the forge delivers them again; the next
// append first cuts the file back to what was synced before, so the journal
// takes events again as soon as the disk does. records paces the writes of
// the handled events' records while those fail.
type journal struct {
	mu      sync.Mutex
	synced  *sync.Cond
	f       journalFile
	written int64   // bytes appended
	durable int64   // bytes known synced
	pending []int64 // end offsets of the lines appended and not yet synced
	syncing bool
	err     error // the failure the next append repairs first
	open    int   // events appended and not yet done

	records recordPace
}

// journalFile is what the journal needs of its file (tests inject failures).
type journalFile interface {
	Write([]byte) (int, error)
	Sync() error
	Truncate(int64) error
	Seek(int64, int) (int64, error)
	Close() error
}

// journalEntry is one line.
type journalEntry struct {
	Delivery   string        `json:"delivery_id"`
	ReceivedAt time.Time     `json:"received_at"`
	Event      *forges.Event `json:"event"`
}

// openJournal opens (or creates) the journal at path and returns the entries
// it holds, without a torn last line, which it cuts off.
func openJournal(path string) (*journal, []journalEntry, error) {
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("read event journal: %w", err)
	}
	var entries []journalEntry
	good := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e journalEntry
		if good+len(line) >= len(raw) || json.Unmarshal(line, &e) != nil || e.Event == nil {
			break // no newline after it, or unreadable: torn by a crash
		}
		entries = append(entries, e)
		good += len(line) + 1
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open event journal: %w", err)
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("cut the torn end of the event journal: %w", err)
	}
	if _, err := f.Seek(int64(good), 0); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("event journal: %w", err)
	}
	j := &journal{f: f, written: int64(good), durable: int64(good), open: len(entries)}
	j.synced = sync.NewCond(&j.mu)
	return j, entries, nil
}

// append writes e and returns once it is on disk.
func (j *journal) append(e journalEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	line = append(line, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.repair(); err != nil {
		return err
	}
	if _, err := j.f.Write(line); err != nil {
		j.fail(fmt.Errorf("append to the event journal: %w", err))
		return j.err
	}
	j.written += int64(len(line))
	j.open++
	j.pending = append(j.pending, j.written)
	mine := j.written
	for j.durable < mine && j.err == nil {
		if j.syncing {
			j.synced.Wait()
			continue
		}
		// This caller syncs for everyone who wrote before the sync starts.
		j.syncing = true
		upto := j.written
		j.mu.Unlock()
		err := j.f.Sync()
		j.mu.Lock()
		j.syncing = false
		if err != nil {
			j.fail(fmt.Errorf("sync the event journal: %w", err))
		} else if upto > j.durable {
			j.durable = upto
			for len(j.pending) > 0 && j.pending[0] <= upto {
				j.pending = j.pending[1:]
			}
		}
		j.synced.Broadcast()
	}
	return j.err
}

// fail records err: every line not synced yet belongs to an append that
// returns err, so none of them is open any more.
func (j *journal) fail(err error) {
	j.err = err
	j.open -= len(j.pending)
	j.pending = nil
}

// repair makes a failed journal take appends again: it cuts the file back
// to what was synced before the failure (the lines after it were refused)
// and syncs that. It keeps the failure while a sync is in flight, or when
// the cut fails too.
func (j *journal) repair() error {
	if j.err == nil {
		return nil
	}
	if j.syncing {
		return j.err
	}
	if err := j.f.Truncate(j.durable); err != nil {
		return fmt.Errorf("%w (and cutting the journal back failed: %w)", j.err, err)
	}
	if _, err := j.f.Seek(j.durable, 0); err != nil {
		return fmt.Errorf("%w (and cutting the journal back failed: %w)", j.err, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("%w (and syncing the journal after the cut failed: %w)", j.err, err)
	}
	j.written, j.err = j.durable, nil
	return nil
}

// done notes that one journaled event is handled and recorded in the state
// branch; the last one empties the file.
func (j *journal) done() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.open--
	if j.open > 0 || j.syncing || j.err != nil {
		return
	}
	if err := j.f.Truncate(0); err != nil {
		j.err = fmt.Errorf("empty the event journal: %w", err)
		return
	}
	if _, err := j.f.Seek(0, 0); err != nil {
		j.err = fmt.Errorf("empty the event journal: %w", err)
		return
	}
	j.written, j.durable = 0, 0
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// maxRecordWait caps the wait between two tries at writing the records of
// handled events while they fail (the first wait is flushEvery).
const maxRecordWait = 5 * time.Second

// recordPace paces the writes of the handled events' records while they
// fail (a full disk): the wait doubles from flushEvery up to maxRecordWait,
// and the log says it once when the writes start failing and once when
// they succeed again, not at every try. The events stay in the journal
// meanwhile.
type recordPace struct {
	mu       sync.Mutex
	wait     time.Duration // 0 while the writes succeed
	next     time.Time     // no try before
	failures int
	since    time.Time
}

// due tells whether a write may be tried at now.
func (p *recordPace) due(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wait == 0 || !now.Before(p.next)
}

// failed notes a failed write of events records at now.
func (p *recordPace) failed(log *slog.Logger, now time.Time, events int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures++
	if p.wait == 0 {
		p.wait, p.since = flushEvery, now
		log.Error("recording handled events fails: they stay in the journal and are tried again with backoff (logged again once it succeeds)",
			"events", events, "err", err, "retry_in", p.wait)
	} else {
		p.wait = min(2*p.wait, maxRecordWait)
		log.Debug("recording handled events failed again", "events", events, "failures", p.failures, "err", err, "retry_in", p.wait)
	}
	p.next = now.Add(p.wait)
}

// succeeded notes a successful write at now.
func (p *recordPace) succeeded(log *slog.Logger, now time.Time, events int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wait == 0 {
		return
	}
	log.Info("handled events recorded again", "events", events, "failures", p.failures, "for", now.Sub(p.since).Round(time.Millisecond))
	p.wait, p.failures = 0, 0
}
