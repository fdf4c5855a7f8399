package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// seedState writes a mailbox's life and a few notes into a new state
// repository and returns its folder and the mailbox's id.
func seedState(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state.git")
	st, err := state.Open(context.Background(), dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 3,
		Title: "Fix it", Status: "new", CreatedAt: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	id := m.Key().ID()
	steps := []func(tx *state.Tx) error{
		func(tx *state.Tx) error { return tx.PutMailbox(m) },
		func(tx *state.Tx) error {
			return tx.PutRun(state.Run{ID: "r-1", MailboxID: id, Phase: "analysis", Status: state.RunSucceeded, CreatedAt: m.CreatedAt})
		},
		func(tx *state.Tx) error { m.Status = "waiting_validation"; return tx.PutMailbox(m) },
	}
	for i := range 5 {
		steps = append(steps, func(tx *state.Tx) error { return tx.Put(fmt.Sprintf("notes/%d.json", i), map[string]int{"n": i}) })
	}
	for _, step := range steps {
		if err := st.Update(context.Background(), step); err != nil {
			t.Fatal(err)
		}
	}
	return dir, id
}

func TestStateMaintenanceCommands(t *testing.T) {
	dir, id := seedState(t)
	env := map[string]string{"ALFRED_STATE_DIR": dir}
	export := filepath.Join(t.TempDir(), "records.jsonl")
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{"log of the branch", []string{"state", "log", "-n", "3"}, 0, []string{"put notes/4.json"}},
		{"log of a mailbox", []string{"state", "log", "-n", "0", id}, 0,
			[]string{`~ mailbox.json: status "new" -> "waiting_validation"`, "+ runs/r-1.json", "+ mailbox.json"}},
		{"log of an unknown mailbox", []string{"state", "log", "forgejo/alice/demo/issue/999"}, 1, nil},
		{"verify", []string{"state", "verify"}, 0, []string{"7 records at commit", "0 problems"}},
		{"export", []string{"state", "export", "-o", export}, 0, nil},
		{"compact", []string{"state", "compact", "-keep", "2", "-archive"}, 0, []string{"8 commits -> 3", "refs/heads/alfred/archive/"}},
		{"verify after compacting", []string{"state", "verify"}, 0, []string{"0 problems"}},
		{"log after compacting", []string{"state", "log", "-n", "0"}, 0, []string{"compacted: 6 commits"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := alfred(t, env, tt.args...)
			if code != tt.code {
				t.Fatalf("alfred %v: exit %d, want %d\n%s%s", tt.args, code, tt.code, out, errOut)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(out, want) {
					t.Errorf("alfred %v does not say %q:\n%s", tt.args, want, out)
				}
			}
		})
	}
	raw, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var first struct {
		Path   string          `json:"path"`
		Record json.RawMessage `json:"record"`
	}
	if len(lines) != 7 || json.Unmarshal([]byte(lines[0]), &first) != nil || !strings.HasPrefix(first.Path, "mailboxes/forgejo/alice/demo/issue/0/3/") {
		t.Fatalf("export: %d lines, first %q", len(lines), lines[0])
	}
}

func TestStateVerifyAndCompactRefuse(t *testing.T) {
	dir, _ := seedState(t)
	env := map[string]string{"ALFRED_STATE_DIR": dir}
	st, err := state.Open(context.Background(), dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A run whose mailbox has no record: verify says so and fails.
	err = st.Update(context.Background(), func(tx *state.Tx) error {
		return tx.PutRun(state.Run{ID: "r-9", MailboxID: "forgejo/alice/demo/issue/404", Status: state.RunQueued})
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := alfred(t, env, "state", "verify")
	if code != 1 || !strings.Contains(out, `its mailbox "forgejo/alice/demo/issue/404" has no record`) || !strings.Contains(errOut, "1 problems") {
		t.Fatalf("verify of a dangling run: %d\n%s%s", code, out, errOut)
	}
	// The store is open, as a running server holds it: compact refuses.
	code, _, errOut = alfred(t, env, "state", "compact")
	if code != 1 || !strings.Contains(errOut, "stop the server before compacting") {
		t.Fatalf("compact beside an open store: %d %s", code, errOut)
	}
	st.Close()
}
