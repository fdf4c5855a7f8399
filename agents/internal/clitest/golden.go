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

// GoldenInvocation is the development-phase invocation without session of
// the golden argv tests: a prompt with dashes and lines, for provider and
// model.
func GoldenInvocation(provider, model string) agents.Invocation {
	return agents.Invocation{Mode: agents.ModeNone, Prompt: "Fix issue #7.\n--- context ---\n-rf", Phase: agents.PhaseDevelopment,
		Provider: provider, Model: model, Workdir: sandbox.WorkspacePath}
}

// ArgvGolden checks a resumable CLI's argv for the three modes against
// testdata/golden/{none,fresh,resume}.json (rewritten with -update): the
// GoldenInvocation of provider and model, then fresh (freshID) and resume
// (resumeID) under one session name. The prompt must be on stdin, never in
// argv, and fresh and resume may only add session flags to the no-session
// argv.
func ArgvGolden(t *testing.T, cli agents.CLI, provider, model, freshID, resumeID string) {
	t.Helper()
	base, name := GoldenInvocation(provider, model), "agent/issue-7-fix-login"
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

// Testdata reads testdata/name, or fails t.
func Testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ArgvByPhase checks a CLI whose argv depends on the phase against
// testdata/golden/argv.json (rewritten with -update): its verified range
// and session state path, and its argv for a writing and a text-only phase
// in each mode, with model and a prompt that spans lines. A fresh
// invocation carries id only when the CLI takes a caller-chosen id, a
// resume always.
func ArgvByPhase(t *testing.T, cli agents.CLI, model, id string) {
	t.Helper()
	d := cli.Descriptor()
	base := agents.Invocation{Prompt: "Fix the bug.\n-- full context --", Model: model}
	name := "agent/issue-7-add-a-name"
	golden := map[string]any{"verified_range": d.VerifiedRange, "session_state_path": d.SessionStatePath}
	for _, phase := range []agents.Phase{agents.PhaseDevelopment, agents.PhaseAnalysis} {
		for _, mode := range []agents.Mode{agents.ModeNone, agents.ModeFresh, agents.ModeResume} {
			inv := base
			inv.Mode, inv.Phase = mode, phase
			if mode != agents.ModeNone {
				inv.SessionName = name
			}
			if mode == agents.ModeResume || (mode == agents.ModeFresh && d.TakesSessionID) {
				inv.SessionID = id
			}
			golden[string(phase)+"/"+string(mode)] = cli.Argv(inv)
		}
	}
	GoldenJSON(t, filepath.Join("testdata", "golden", "argv.json"), golden)
}
