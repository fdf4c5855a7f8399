package bot

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

func entry(n int) journalEntry {
	return journalEntry{Delivery: fmt.Sprintf("d-%d", n), ReceivedAt: time.Unix(int64(n), 0).UTC(),
		Event: &forges.Event{Type: forges.EventCommentCreated, DeliveryID: fmt.Sprintf("d-%d", n)}}
}

func TestJournalKeepsWhatWasAcknowledged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.journal")
	j, got, err := openJournal(path)
	if err != nil || len(got) != 0 {
		t.Fatalf("new journal: %v %v", got, err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.append(entry(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	j.close()

	// A crash in the middle of a write leaves a torn last line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"delivery_id":"d-torn","received_at":"2026-`)
	f.Close()

	j, got, err = openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("%d entries recovered, want 50", len(got))
	}
	seen := map[string]bool{}
	for _, e := range got {
		seen[e.Delivery] = true
		if e.Event == nil || e.Event.DeliveryID != e.Delivery {
			t.Errorf("entry %+v", e)
		}
	}
	if len(seen) != 50 || seen["d-torn"] {
		t.Errorf("deliveries %v", seen)
	}
	// New appends go after the good entries, not after the torn bytes.
	if err := j.append(entry(99)); err != nil {
		t.Fatal(err)
	}
	j.close()
	if _, got, _ = openJournal(path); len(got) != 51 || got[50].Delivery != "d-99" {
		t.Fatalf("after the torn tail: %d entries", len(got))
	}
}

func TestJournalEmptiesWhenAllDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.journal")
	j, _, _ := openJournal(path)
	for i := range 3 {
		j.append(entry(i))
	}
	j.done()
	j.done()
	if fi, _ := os.Stat(path); fi.Size() == 0 {
		t.Fatal("emptied with an event still open")
	}
	j.done()
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("not emptied: %d bytes", fi.Size())
	}
	j.append(entry(7))
	j.close()
	_, got, _ := openJournal(path)
	if len(got) != 1 || got[0].Delivery != "d-7" {
		t.Fatalf("after emptying: %+v", got)
	}
}

// flakyFile is a journal file whose writes and syncs fail on demand, as on
// a full disk (a write may land half before it fails).
type flakyFile struct {
	*os.File
	failWrite, failSync bool
}

func (f *flakyFile) Write(b []byte) (int, error) {
	if f.failWrite {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(b)
}

func (f *flakyFile) Sync() error {
	if f.failSync {
		return syscall.ENOSPC
	}
	return f.File.Sync()
}

func TestJournalTakesEventsAgainAfterAFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.journal")
	j, _, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyFile{File: j.f.(*os.File)}
	j.f = flaky
	var acked []string
	for i, tt := range []struct {
		failWrite, failSync, wantErr bool
	}{
		{false, false, false},
		{true, false, true}, // no space for the line: half of it lands
		{true, false, true},
		{false, true, true}, // the line is written, its sync fails
		{false, false, false},
		{false, false, false},
	} {
		flaky.failWrite, flaky.failSync = tt.failWrite, tt.failSync
		err := j.append(entry(i))
		if (err != nil) != tt.wantErr {
			t.Fatalf("append %d: %v, want an error: %v", i, err, tt.wantErr)
		}
		if err != nil && !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("append %d: %v does not wrap ENOSPC", i, err)
		}
		if err == nil {
			acked = append(acked, fmt.Sprintf("d-%d", i))
		}
	}
	if j.open != len(acked) {
		t.Fatalf("%d events open, want the %d acknowledged", j.open, len(acked))
	}
	j.close()
	_, got, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var deliveries []string
	for _, e := range got {
		deliveries = append(deliveries, e.Delivery)
	}
	if !slices.Equal(deliveries, acked) {
		t.Fatalf("journal holds %q, want exactly the acknowledged %q", deliveries, acked)
	}
}

func TestJournalEmptiesAfterARepair(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.journal")
	j, _, _ := openJournal(path)
	flaky := &flakyFile{File: j.f.(*os.File)}
	j.f = flaky
	flaky.failSync = true
	j.append(entry(1))
	flaky.failSync = false
	if err := j.append(entry(2)); err != nil {
		t.Fatal(err)
	}
	j.done()
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("the only open event is done, yet the journal keeps %d bytes", fi.Size())
	}
}

// TestRecordPaceBacksOffAndLogsOnce is the flush of handled events' records
// on a disk full for 20 s, ticking every flushEvery: the tries back off up
// to maxRecordWait, and the log says it twice (failing, then recorded
// again), where it said it at every tick (200 ERROR lines).
func TestRecordPaceBacksOffAndLogsOnce(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var p recordPace
	start := time.Unix(0, 0)
	tries, full := 0, 20*time.Second
	var last time.Time
	for now := start; now.Sub(start) <= full+maxRecordWait; now = now.Add(flushEvery) {
		if !p.due(now) {
			continue
		}
		tries++
		if now.Sub(start) < full {
			if tries > 1 && now.Sub(last) > maxRecordWait+flushEvery {
				t.Fatalf("waited %s between tries, over the cap", now.Sub(last))
			}
			last = now
			p.failed(log, now, 7, syscall.ENOSPC)
			continue
		}
		p.succeeded(log, now, 7)
		break
	}
	if tries < 6 || tries > 12 {
		t.Fatalf("%d tries in 20 s, want a backoff (about 9)", tries)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=ERROR") || !strings.Contains(lines[1], "recorded again") {
		t.Fatalf("log over a 20 s outage:\n%s", logged.String())
	}
	t.Logf("20 s of failing writes: %d tries, %d log lines", tries, len(lines))
}
