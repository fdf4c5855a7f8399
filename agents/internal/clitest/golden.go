package clitest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Golden compares got with the file at path, or rewrites it under -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking the change):\n got: %s\nwant: %s", path, got, want)
	}
}

// Recorded reads a recorded process run: dir/name.stdout, .stderr and .rc.
func Recorded(t testing.TB, dir, name string) *sandbox.Result {
	t.Helper()
	read := func(ext string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name+ext))
		if err != nil {
			t.Fatalf("recorded output: %v", err)
		}
		return b
	}
	rc, err := strconv.Atoi(strings.TrimSpace(string(read(".rc"))))
	if err != nil {
		t.Fatalf("recorded rc of %s: %v", name, err)
	}
	return &sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: rc, Stdout: read(".stdout"), Stderr: read(".stderr")}
}

// Result is a finished process with the given exit code and output.
func Result(rc int, stdout, stderr string) *sandbox.Result {
	return &sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: rc, Stdout: []byte(stdout), Stderr: []byte(stderr)}
}

// GoldenJSON compares v, as indented JSON, with the file at path.
func GoldenJSON(t testing.TB, path string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	Golden(t, path, buf.Bytes())
}

// ArgvGolden checks a resumable CLI's argv for the three modes against
// testdata/golden/{none,fresh,resume}.json (rewritten with -update). base is
// a ModeNone invocation; freshID and resumeID are the session ids of the
// other two. The prompt must be on stdin, never in argv, and fresh and resume
// may only add session flags to the no-session argv.
func ArgvGolden(t *testing.T, cli agents.CLI, base agents.Invocation, name, freshID, resumeID string) {
	t.Helper()
	if !cli.Descriptor().PromptOnStdin {
		t.Fatal("the CLI does not read the prompt on stdin")
	}
	none := base
	none.Mode = agents.ModeNone
	fresh := base
	fresh.Mode, fresh.SessionName, fresh.SessionID = agents.ModeFresh, name, freshID
	resume := base
	resume.Mode, resume.SessionName, resume.SessionID = agents.ModeResume, name, resumeID
	argv := map[agents.Mode][]string{}
	for _, inv := range []agents.Invocation{none, fresh, resume} {
		got := cli.Argv(inv)
		if slices.Contains(got, inv.Prompt) {
			t.Fatalf("%s: the prompt is in argv, it goes to stdin: %q", inv.Mode, got)
		}
		GoldenJSON(t, filepath.Join("testdata", "golden", string(inv.Mode)+".json"), got)
		argv[inv.Mode] = got
	}
	n, f, r := argv[agents.ModeNone], argv[agents.ModeFresh], argv[agents.ModeResume]
	if len(f) < len(n) || len(r) < len(n) || !slices.Equal(f[:len(n)], n) || !slices.Equal(r[:len(n)], n) {
		t.Fatalf("modes differ beyond session flags:\n%q\n%q\n%q", n, f, r)
	}
}
