package opencode

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, for the session database

	"github.com/alchemic-studio/alfred/agents"
)

// OpenCode's transcript, as 1.18.33 keeps it (recorded in
// testdata/transcript): rows of the SQLite database opencode.db in the
// session folder (see DBEnv). Table "message" holds a session's messages
// (data: {"role":"user"|"assistant",…}), table "part" their parts in id
// order (data: {"type":…}): "text" (a prompt or an answer; synthetic ones
// are injected context), "tool" (a call, its state holding the input, and
// once completed or failed the output or error). Step, snapshot, patch and
// reasoning parts give no step; other part types are other steps.
//
// The database is the sandbox's, untrusted: SQLite would follow a symlink,
// block on a FIFO and read a file of any size. So the reader copies it
// first, with its write-ahead log and rollback journal when there are
// (agents.SessionFiles: regular files, within one budget), into a private
// temporary folder, and opens the copy there, for queries only.

// editTools are the tools that write the file named by their "filePath".
var editTools = []string{"write", "edit", "multiedit"}

// silentParts are the part types that give no step.
var silentParts = []string{"step-start", "step-finish", "snapshot", "patch", "reasoning"}

// dbFiles are the files of the database a copy takes: the database, its
// write-ahead log (the latest writes, when the CLI ended before a
// checkpoint) and its rollback journal (to undo a torn transaction).
var dbFiles = []string{"", "-wal", "-journal"}

// ReadTranscript implements agents.TranscriptReader: stateDir is the
// folder mounted at ~/.local/state/opencode, which holds opencode.db.
func (CLI) ReadTranscript(stateDir, id string) ([]agents.Step, error) {
	name := filepath.Base(DBEnv)
	tmp, err := os.MkdirTemp("", "alfred-opencode-*")
	if err != nil {
		return nil, fmt.Errorf("opencode: copy the session database: %w", err)
	}
	defer os.RemoveAll(tmp)
	err = copyDB(agents.NewSessionFiles(stateDir), name, tmp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("opencode: session %s: no database in %s: %w", id, stateDir, agents.ErrNoTranscript)
	}
	if err != nil {
		return nil, fmt.Errorf("opencode: %w", err)
	}
	path := filepath.Join(tmp, name)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("opencode: open %s: %w", name, err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM session WHERE id = ?`, id).Scan(&n); err != nil {
		return nil, fmt.Errorf("opencode: read %s of %s: %w", name, stateDir, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("opencode: session %s in %s: %w", id, filepath.Join(stateDir, name), agents.ErrNoTranscript)
	}
	steps, err := readSession(db, id)
	if err != nil {
		return nil, fmt.Errorf("opencode: read session %s from %s of %s: %w", id, name, stateDir, err)
	}
	return steps, nil
}

// copyDB copies the database name of the session folder, and those of
// its dbFiles that exist, into the folder dir. The error wraps
// fs.ErrNotExist when the database itself is missing.
func copyDB(files *agents.SessionFiles, name, dir string) error {
	for i, suffix := range dbFiles {
		data, err := files.Read(name + suffix)
		if i > 0 && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+suffix), data, 0o600); err != nil {
			return fmt.Errorf("copy the session database: %w", err)
		}
	}
	return nil
}

// row is a message or part row.
type row struct {
	id, messageID string
	created       int64
	data          []byte
}

// readSession reads the session's messages and parts into steps.
func readSession(db *sql.DB, id string) ([]agents.Step, error) {
	msgs, err := rows(db, `SELECT id, '', time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id`, id)
	if err != nil {
		return nil, err
	}
	parts, err := rows(db, `SELECT id, message_id, time_created, data FROM part WHERE session_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, err
	}
	var steps []agents.Step
	for _, m := range msgs {
		var info struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(m.data, &info) != nil {
			steps = append(steps, agents.UnreadableStep())
			continue
		}
		for _, p := range parts {
			if p.messageID == m.id {
				steps = append(steps, partSteps(info.Role, p)...)
			}
		}
	}
	return steps, nil
}

// rows runs a query of (id, message id, time, data) rows.
func rows(db *sql.DB, query, id string) ([]row, error) {
	rs, err := db.Query(query, id)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.id, &r.messageID, &r.created, &r.data); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// part is a part's data: a row of table part, and the part of a stream
// event (stream.go).
type part struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Tool      string `json:"tool"`
	CallID    string `json:"callID"`
	State     struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output string          `json:"output"`
		Error  string          `json:"error"`
		Time   struct {
			Start int64 `json:"start"`
			End   int64 `json:"end"`
		} `json:"time"`
	} `json:"state"`
}

// partSteps are the steps of a part of a message of role.
func partSteps(role string, r row) []agents.Step {
	at := agents.UnixMilli(r.created)
	var p part
	if json.Unmarshal(r.data, &p) != nil {
		return []agents.Step{agents.UnreadableStep()}
	}
	switch {
	case p.Type == "text" && p.Synthetic:
		return nil
	case p.Type == "text":
		kind := agents.StepAssistant
		if role == "user" {
			kind = agents.StepPrompt
		}
		if s, ok := agents.TextStep(kind, p.Text, at); ok {
			return []agents.Step{s}
		}
		return nil
	case p.Type == "tool":
		return p.toolSteps(p.times(at))
	case slices.Contains(silentParts, p.Type):
		return nil
	}
	return []agents.Step{agents.OtherStep(role+"/"+p.Type, at)}
}

// times are when the tool part's call started and ended (zero while it
// runs); at, the part's, when it records no start.
func (p part) times(at time.Time) (start, done time.Time) {
	start = at
	if p.State.Time.Start != 0 {
		start = agents.UnixMilli(p.State.Time.Start)
	}
	return start, agents.UnixMilli(p.State.Time.End)
}

// toolSteps: the call (at start), its result once over, and the file a
// completed edit tool wrote (at done); of a transcript's part, and of the
// stream's tool_use event (DecodeLine: no times).
func (p part) toolSteps(start, done time.Time) []agents.Step {
	steps := []agents.Step{agents.CallStep(p.Tool, p.CallID, p.State.Input).Timed(start)}
	switch p.State.Status {
	case "completed":
		steps = append(steps, agents.ResultStep(p.Tool, p.CallID, p.State.Output, false).Timed(done))
	case "error":
		return append(steps, agents.ResultStep(p.Tool, p.CallID, p.State.Error, true).Timed(done))
	default:
		return steps
	}
	var in struct {
		FilePath string `json:"filePath"`
	}
	_ = json.Unmarshal(p.State.Input, &in)
	if in.FilePath != "" && slices.Contains(editTools, p.Tool) {
		steps = append(steps, agents.EditStep(p.Tool, p.CallID, in.FilePath).Timed(done))
	}
	return steps
}
