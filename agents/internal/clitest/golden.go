package clitest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
