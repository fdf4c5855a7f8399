package opencode

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
)

// TestTranscriptReadsTheLog: the reader reads a copy of the database, and
// the copy takes the write-ahead log: rows OpenCode wrote since its last
// checkpoint (a CLI killed before it closed the database) are read, and
// the session folder is left as it was.
func TestTranscriptReadsTheLog(t *testing.T) {
	dir, id := clitest.RecordedTranscript(t, recording)
	want, err := CLI{}.ReadTranscript(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	cp := clitest.CopyDir(t, dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(cp, "opencode.db")+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close() // open while read: the rows are in the log only
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
		SELECT 'prt_zzzzzzzzzzzzzzzzzzzzzzzzzz', message_id, session_id, time_created, time_updated, '{"type":"mystery"}' FROM part
		WHERE session_id = ? ORDER BY id DESC LIMIT 1`, id); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(cp, "opencode.db-wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("no write-ahead log: %v, %v", fi, err)
	}
	before := listing(t, cp)
	got, err := CLI{}.ReadTranscript(cp, id)
	if err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1]; len(got) != len(want)+1 || last.Kind != agents.StepOther || last.Text != "assistant/mystery" {
		t.Fatalf("got %d steps ending with %+v, want the %d recorded ones and the row of the log", len(got), last, len(want))
	}
	if after := listing(t, cp); after != before {
		t.Errorf("the session folder changed: %s, then %s", before, after)
	}
}

// listing is the names and sizes of dir's files.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintf("%s %d %s; ", e.Name(), fi.Size(), fi.ModTime())
	}
	return s
}
