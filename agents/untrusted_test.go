package agents_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/codex"
	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/agents/opencode"
	"github.com/alchemic-studio/alfred/internal/safefs"
)

// The session folder is the sandbox's: every transcript reader reads it
// as untrusted data. A FIFO, a symlink (to a host file, to /dev/zero, to a
// folder) or an oversized file where the transcript should be gives an
// error at once, that the run's note can carry, and nothing read from
// outside the folder.

// reader is a CLI's transcript reader with its recorded session: the
// package folder holding testdata/transcript, and a glob of the
// transcript file in the recording (the largest match is the one).
type reader struct {
	name string
	agents.TranscriptReader
	pkg, file string
}

var readers = []reader{
	{"claude code", claudecode.CLI{}, "claudecode", "*/*.jsonl"},
	{"codex", codex.CLI{}, "codex", "*/*/*/rollout-*.jsonl"},
	{"copilot", copilot.CLI{}, "copilot", "*/events.jsonl"},
	{"gemini", gemini.CLI{}, "gemini", "*/chats/session-*.jsonl"},
	{"opencode", opencode.CLI{}, "opencode", "opencode.db"},
}

// recorded is the reader's recorded session: its id, and the transcript
// file's path, absolute and relative to the session folder.
func (r reader) recorded(t *testing.T) (id, abs, rel string) {
	t.Helper()
	dir := filepath.Join(r.pkg, "testdata", "transcript")
	b, err := os.ReadFile(filepath.Join(dir, "session.id"))
	if err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "session", r.file))
	size := int64(-1)
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Size() > size {
			abs, size = m, fi.Size()
		}
	}
	if abs == "" {
		t.Fatalf("no recorded transcript %s in %s", r.file, dir)
	}
	rel, err = filepath.Rel(filepath.Join(dir, "session"), abs)
	if err != nil {
		t.Fatal(err)
	}
	if abs, err = filepath.Abs(abs); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b)), abs, filepath.ToSlash(rel)
}

// planted is what a test puts where the transcript file should be.
type planted struct {
	name string
	// plant makes it at path p, given the recorded file abs.
	plant func(t *testing.T, p, abs string)
	// wantErr is the sentinel; nil: the transcript is read. reason is in
	// the error's text after the file's path.
	wantErr error
	reason  string
}

var plants = []planted{
	{"the recorded file", func(t *testing.T, p, abs string) { copyFile(t, abs, p) }, nil, ""},
	{"a FIFO", func(t *testing.T, p, _ string) {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}, safefs.ErrNotRegular, " is a FIFO, not a regular file: not read"},
	{"a symlink to a host file", func(t *testing.T, p, abs string) { link(t, abs, p) }, safefs.ErrSymlink, " is a symlink: not read"},
	{"a symlink to /dev/zero", func(t *testing.T, p, _ string) { link(t, "/dev/zero", p) }, safefs.ErrSymlink, " is a symlink: not read"},
	{"a sparse 10 GB file", func(t *testing.T, p, _ string) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, 10<<30); err != nil {
			t.Fatal(err)
		}
	}, safefs.ErrTooLarge, " is 10 GiB, over the 64 MiB limit: not read"},
}

// TestTranscriptReadersRefuseUntrusted: each reader, for each thing
// planted at its transcript's path, reads the transcript (the recorded
// file) or returns at once the error that says what the path is.
func TestTranscriptReadersRefuseUntrusted(t *testing.T) {
	for _, r := range readers {
		id, abs, rel := r.recorded(t)
		for _, pl := range plants {
			t.Run(r.name+"/"+pl.name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				pl.plant(t, p, abs)
				steps, err := readQuickly(t, r, dir, id)
				if pl.wantErr == nil {
					if err != nil || len(steps) == 0 {
						t.Fatalf("ReadTranscript of the recorded file: %d steps, %v", len(steps), err)
					}
					return
				}
				if !errors.Is(err, pl.wantErr) || steps != nil {
					t.Fatalf("ReadTranscript = %d steps, %v; want none and %v", len(steps), err, pl.wantErr)
				}
				if want := "session file " + rel + pl.reason; !strings.HasSuffix(err.Error(), want) {
					t.Errorf("error %q does not end with %q", err, want)
				}
			})
		}
	}
}

// TestTranscriptReadersSymlinkedFolder: a session file under a folder that
// is a symlink to a host folder (holding the recorded transcript) is not
// read: it is refused, or not found at all.
func TestTranscriptReadersSymlinkedFolder(t *testing.T) {
	for _, r := range readers {
		id, abs, rel := r.recorded(t)
		first, rest, ok := strings.Cut(rel, "/")
		if !ok {
			continue // the file is at the folder's top: no folder to link
		}
		t.Run(r.name, func(t *testing.T) {
			dir, host := t.TempDir(), t.TempDir()
			copyFile(t, abs, filepath.Join(host, filepath.FromSlash(rest)))
			link(t, host, filepath.Join(dir, first))
			steps, err := readQuickly(t, r, dir, id)
			if steps != nil || !(errors.Is(err, safefs.ErrSymlink) || errors.Is(err, agents.ErrNoTranscript)) {
				t.Fatalf("ReadTranscript = %d steps, %v; want none, refused or not found", len(steps), err)
			}
		})
	}
}

// TestTranscriptNote: the error of a refused transcript, as the engine
// leaves it on the run, names the adapter, the file and what it is.
func TestTranscriptNote(t *testing.T) {
	a, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "-workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "-workspace", "abc.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = agents.ReadTranscript(a, dir, "abc")
	want := "adapter " + a.ID() + ": claude code: session file -workspace/abc.jsonl is a FIFO, not a regular file: not read"
	if err == nil || err.Error() != want {
		t.Fatalf("note %q, want %q", err, want)
	}
}

// TestSessionFilesBudget: the files a reader reads of one session share
// MaxTranscriptBytes; the file that would go over it is refused.
func TestSessionFilesBudget(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(dir, name), agents.MaxTranscriptBytes*3/4); err != nil {
			t.Fatal(err)
		}
	}
	files := agents.NewSessionFiles(dir)
	if _, err := files.Read("a"); err != nil {
		t.Fatalf("first file: %v", err)
	}
	_, err := files.Read("b")
	if !errors.Is(err, safefs.ErrTooLarge) || !strings.Contains(err.Error(), "session file b would take the session's files over the 64 MiB limit: not read") {
		t.Fatalf("second file: %v, want ErrTooLarge over the session's limit", err)
	}
}

// readQuickly reads the transcript with r, failing the test if that takes
// more than 5 s (a read that blocks on a FIFO or /dev/zero).
func readQuickly(t *testing.T, r agents.TranscriptReader, dir, id string) ([]agents.Step, error) {
	t.Helper()
	type result struct {
		steps []agents.Step
		err   error
	}
	done := make(chan result, 1)
	go func() {
		steps, err := r.ReadTranscript(dir, id)
		done <- result{steps, err}
	}()
	select {
	case res := <-done:
		return res.steps, res.err
	case <-time.After(5 * time.Second):
		t.Fatal("ReadTranscript still reading after 5 s: it blocks")
		return nil, nil
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// TestOpenCodeDatabaseFiles: OpenCode's write-ahead log and rollback
// journal, copied with the database, are read as untrusted as it is.
func TestOpenCodeDatabaseFiles(t *testing.T) {
	r := readers[len(readers)-1]
	id, abs, _ := r.recorded(t)
	for _, tt := range []struct {
		file  string
		plant func(t *testing.T, p string)
		want  string
	}{
		{"opencode.db-wal", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "session file opencode.db-wal is a FIFO, not a regular file: not read"},
		{"opencode.db-journal", func(t *testing.T, p string) { link(t, "/etc/passwd", p) }, "session file opencode.db-journal is a symlink: not read"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, abs, filepath.Join(dir, "opencode.db"))
			tt.plant(t, filepath.Join(dir, tt.file))
			steps, err := readQuickly(t, r, dir, id)
			if steps != nil || err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("ReadTranscript = %d steps, %v; want none and %q", len(steps), err, tt.want)
			}
		})
	}
}
