package opencode

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// recording is the recorded session in testdata/transcript.
const recording = "session"

// TestRealTranscript records a real session, fresh then resumed, in which
// the mock model has OpenCode write a file (write) and run a command (bash)
// for the first prompt, and reads it back. Under -record it keeps the
// session database in testdata/transcript, host paths replaced.
func TestRealTranscript(t *testing.T) {
	dir := clitest.Workspace(t)
	m := clitest.Real(t, CLI{}, mockllm.Options{Reply: "done", Shell: clitest.TranscriptShell}, nil)
	clitest.WithEdit(t, &m, clitest.Edit{Tool: "write", Args: map[string]any{"filePath": dir + "/notes.txt", "content": "one\ntwo\nthree\n"}})
	onMock(&m)
	s := clitest.Transcript{Mocked: m, Dir: dir}.RecordAndCheck(t, CLI{}, clitest.TranscriptCase{Name: recording,
		Kinds: []agents.StepKind{agents.StepPrompt, agents.StepToolCall, agents.StepToolResult, agents.StepEdit,
			agents.StepToolCall, agents.StepToolResult, agents.StepAssistant, agents.StepPrompt, agents.StepAssistant},
		Text: func(string) bool { return false },
		How:  "For the first prompt the model (clitest.WithEdit in front of the mock, then the mock's Options.Shell) has the CLI write notes.txt with its write tool, then run a command with bash. Only opencode.db is kept (its WAL checkpointed, lock files left out), host paths replaced in its text columns, then vacuumed."})
	if clitest.Recording() {
		scrubDB(t, filepath.Join(clitest.TranscriptDir, recording), s.Replacements(CLI{}.Descriptor().SessionStatePath))
	}
}

// scrubDB leaves only opencode.db in dir, its WAL checkpointed, pairs
// (old, new, …) replaced in every text column, and vacuumed.
func scrubDB(t *testing.T, dir string, pairs []string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stmts []string
	for _, table := range column(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`) {
		for _, col := range column(t, db, `SELECT name FROM pragma_table_info('`+table+`') WHERE upper(type) = 'TEXT'`) {
			stmts = append(stmts, `UPDATE "`+table+`" SET "`+col+`" = replace("`+col+`", ?, ?)`)
		}
	}
	for _, stmt := range stmts {
		for i := 0; i < len(pairs); i += 2 {
			if _, err := db.Exec(stmt, pairs[i], pairs[i+1]); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	for _, stmt := range []string{"PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA journal_mode=DELETE", "VACUUM"} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "opencode.db" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// column runs a query of one text column.
func column(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rs, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestTranscript reads the recorded session (golden steps).
func TestTranscript(t *testing.T) {
	clitest.GoldenTranscript(t, CLI{}, recording)
}

// TestTranscriptTolerance: a part of an unknown type and a part that is
// not JSON are other steps, the rest as recorded; a folder without the
// database, and a database without the session, are ErrNoTranscript.
func TestTranscriptTolerance(t *testing.T) {
	dir, id := clitest.RecordedTranscript(t, recording)
	want, err := CLI{}.ReadTranscript(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, data, other string }{
		{"unknown part type", `{"type":"mystery"}`, "assistant/mystery"},
		{"unreadable part", `{"type": not json`, "unreadable entry"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cp := clitest.CopyDir(t, dir)
			exec(t, cp, `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
				SELECT 'prt_zzzzzzzzzzzzzzzzzzzzzzzzzz', message_id, session_id, time_created, time_updated, ? FROM part
				WHERE session_id = ? ORDER BY id DESC LIMIT 1`, tt.data, id)
			got, err := CLI{}.ReadTranscript(cp, id)
			if err != nil {
				t.Fatal(err)
			}
			last := got[len(got)-1]
			if len(got) != len(want)+1 || last.Kind != agents.StepOther || last.Text != tt.other {
				t.Fatalf("got %d steps ending with %+v, want the %d recorded ones and other %q", len(got), last, len(want), tt.other)
			}
		})
	}
	for _, tt := range []struct{ name, dir, id string }{
		{"no database", t.TempDir(), id},
		{"no such session", dir, "ses_00000000000000000000000000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := (CLI{}).ReadTranscript(tt.dir, tt.id); !errors.Is(err, agents.ErrNoTranscript) {
				t.Fatalf("ReadTranscript: %v, want ErrNoTranscript", err)
			}
		})
	}
}

// exec runs a statement on the database in dir.
func exec(t *testing.T, dir, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(strings.TrimSpace(stmt), args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
