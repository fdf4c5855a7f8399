package bot

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
