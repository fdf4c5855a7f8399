package bot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
type journal struct {
	mu      sync.Mutex
	synced  *sync.Cond
	f       *os.File
	written int64 // bytes appended
	durable int64 // bytes known synced
	syncing bool
	err     error // a failed sync fails every append after it
	open    int   // events appended and not yet done
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
	if j.err != nil {
		return j.err
	}
	if _, err := j.f.Write(line); err != nil {
		j.err = fmt.Errorf("append to the event journal: %w", err)
		return j.err
	}
	j.written += int64(len(line))
	j.open++
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
			j.err = fmt.Errorf("sync the event journal: %w", err)
		} else if upto > j.durable {
			j.durable = upto
		}
		j.synced.Broadcast()
	}
	return j.err
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
