package clitest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

var record = flag.Bool("record", false, "record real transcripts into testdata/transcript")

// Recording tells whether the test binary runs with -record: the real
// transcript tests then also write what they recorded into testdata.
func Recording() bool { return *record }

// TranscriptShell is the command the mock model has a CLI run in a
// recorded transcript (mockllm.Options.Shell): three lines of output.
const TranscriptShell = "printf 'one\\ntwo\\nthree\\n'"

// TranscriptPrompts are the prompts of a recorded transcript when
// Transcript.Prompts is empty.
var TranscriptPrompts = []string{"Count to three, then write a greeting.", "Anything left to do?"}

// Transcript records a real session for a transcript reader: Prompts run in
// turn in one session through the shared flow, the first fresh, each next
// one resuming the native id the previous one reported, in a working copy
// at /workspace, as the engine runs them.
type Transcript struct {
	Mocked
	// Phase of every run; PhaseDevelopment when empty.
	Phase agents.Phase
	// Prompts run in turn; TranscriptPrompts when empty.
	Prompts []string
	// Dir is the working copy; a new Workspace when empty.
	Dir string
}

// Workspace is a GitWorktree in a folder named workspace, as the sandbox's
// /workspace is: CLIs that name their project folders after the working
// directory's base name (Gemini) then name them as they do in the sandbox.
func Workspace(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "workspace")
	if err := os.Rename(GitWorktree(t), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Session is a recorded session: the host folder that was mounted at the
// adapter's SessionStatePath, the native id, and the host paths the
// recording holds in place of the sandbox's.
type Session struct {
	State, ID string
	// Dir is the working copy (the sandbox's /workspace), Home the folder
	// that played /home/agent.
	Dir, Home string
}

// Record runs the prompts and fails t unless each run succeeded and each
// resume resumed.
func (tr Transcript) Record(t *testing.T) Session {
	t.Helper()
	if tr.Phase == "" {
		tr.Phase = agents.PhaseDevelopment
	}
	if tr.Timeout == 0 {
		tr.Timeout = 2 * time.Minute
	}
	if tr.Dir == "" {
		tr.Dir = Workspace(t)
	}
	if len(tr.Prompts) == 0 {
		tr.Prompts = TranscriptPrompts
	}
	s := Session{State: t.TempDir(), Dir: tr.Dir, Home: tr.Runner.Home}
	for i, prompt := range tr.Prompts {
		ref := &agents.SessionRef{Name: "agent/issue-19-read-transcripts", ResumeID: s.ID, HostStateDir: s.State}
		if i == 0 {
			ref.FreshReason = agents.FallbackNoPriorSession
		}
		res := tr.run(t, prompt, ref)
		if i > 0 && !res.Resumed {
			t.Fatalf("run %d: id %q not resumed (fallback %q)", i+1, res.NativeSessionID, res.ResumeFallback)
		}
		s.ID = res.NativeSessionID
	}
	return s
}

// run runs one prompt and fails t unless it succeeded.
func (tr Transcript) run(t *testing.T, prompt string, ref *agents.SessionRef) *agents.Result {
	t.Helper()
	req := agents.Request{Prompt: prompt, Phase: tr.Phase, Timeout: tr.Timeout, Runner: tr.Runner, Session: ref}
	req.Sandbox = sandbox.Spec{
		Workdir:  sandbox.WorkspacePath,
		Worktree: &sandbox.Mount{Host: tr.Dir, Container: sandbox.WorkspacePath},
		Env:      tr.Env,
	}
	ctx, cancel := context.WithTimeout(context.Background(), tr.Timeout+time.Minute)
	defer cancel()
	res, err := tr.Adapter.Run(ctx, req)
	if err != nil {
		t.Fatalf("run %q: %v", prompt, err)
	}
	t.Logf("run %q: outcome=%s id=%s resumed=%v text=%q", prompt, res.Outcome, res.NativeSessionID, res.Resumed, res.Text)
	if res.Outcome != agents.OutcomeSucceeded {
		t.Fatalf("run %q: outcome %s, want succeeded\nstdout: %s\nstderr: %s\nmock unhandled: %v",
			prompt, res.Outcome, res.Stdout, res.Stderr, tr.Mock.Unhandled())
	}
	return res
}

// Replacements are the host paths of s and what a recording holds in
// their place: the paths inside the sandbox (/workspace, /home/agent and
// statePath), each also as Claude Code's project slug. Longest first, so
// that a path is replaced before its parent.
func (s Session) Replacements(statePath string) []string {
	pairs := [][2]string{
		{s.Dir, sandbox.WorkspacePath}, {s.State, statePath}, {s.Home, agents.AgentHome},
	}
	for _, p := range slices.Clone(pairs) {
		if resolved, err := filepath.EvalSymlinks(p[0]); err == nil && resolved != p[0] {
			pairs = append(pairs, [2]string{resolved, p[1]})
		}
	}
	for _, p := range slices.Clone(pairs) {
		pairs = append(pairs, [2]string{Slug(p[0]), Slug(p[1])})
	}
	slices.SortStableFunc(pairs, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	var out []string
	for _, p := range pairs {
		out = append(out, p[0], p[1])
	}
	return out
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

// Slug is how Claude Code names a project folder after its cwd: every
// character but letters and digits becomes a dash.
func Slug(p string) string { return nonAlnum.ReplaceAllString(p, "-") }

// Save copies the session's state folder into dst (emptied first), its host
// paths replaced by the sandbox's in file names and in the contents of the
// files for which text says so (the others are copied as they are). dst is
// then what a mailbox's session folder holds after the runs, minus the
// machine.
func (s Session) Save(t *testing.T, dst, statePath string, text func(rel string) bool) {
	t.Helper()
	r := strings.NewReplacer(s.Replacements(statePath)...)
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(s.State, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(s.State, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if text(rel) {
			b = []byte(r.Replace(string(b)))
		}
		out := filepath.Join(dst, r.Replace(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatalf("save the recorded session into %s: %v", dst, err)
	}
}

// TranscriptDir is where a CLI package keeps its recorded transcripts:
// <name>/ (the session folder as the mailbox holds it), <name>.id (the
// native session id), <name>.golden.json (the steps its reader makes of
// them) and a README.md saying how they were recorded.
const TranscriptDir = "testdata/transcript"

// SaveRecording writes s as the recording name into TranscriptDir (see
// Session.Save), with its id and a README.md saying how it was recorded:
// cli's detected version, and how, what the mock model had it do.
func SaveRecording(t *testing.T, cli agents.CLI, s Session, name string, text func(rel string) bool, how string) {
	t.Helper()
	d := cli.Descriptor()
	inst := agents.Detect(context.Background(), Host(t), sandbox.Spec{Env: Env(Bin(t, d.Executable), nil)}, []agents.CLI{cli}, nil)
	if len(inst) != 1 || inst[0].Version == "" {
		t.Fatalf("detect the version of %s: %+v", d.ID, inst)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	readme := fmt.Sprintf(readmeText, name, d.ID, inst[0].Version, d.SessionStatePath, filepath.Base(wd), how)
	s.Save(t, filepath.Join(TranscriptDir, name), d.SessionStatePath, text)
	for file, content := range map[string]string{name + ".id": s.ID + "\n", "README.md": readme} {
		if err := os.WriteFile(filepath.Join(TranscriptDir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const readmeText = `# Recorded transcripts

%[1]s/ is the session folder of a real %[2]s %[3]s session, as the mailbox
holds it after the runs (the folder mounted at %[4]s);
%[1]s.id is the session's native id, and %[1]s.golden.json the steps
ReadTranscript makes of it.

Recorded offline by TestRealTranscript against the loopback mock model
(agents/mockllm), through the shared flow (agents.Local) with the working
copy at /workspace: two prompts in one session, the first fresh, the second
resumed. %[6]s

Host paths are replaced by the sandbox's (the working copy by /workspace,
the home by /home/agent, the session folder by %[4]s).
To record again and regenerate the golden file:

    set -a; . /tmp/clis.env; set +a   # ALFRED_AGENT_CLIS_BIN (scripts/agent-clis.sh)
    go test ./agents/%[5]s -run TestRealTranscript -record
    go test ./agents/%[5]s -run TestTranscript -update
`

// RecordedTranscript is the recording name in TranscriptDir: its folder
// and id.
func RecordedTranscript(t testing.TB, name string) (dir, id string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(TranscriptDir, name+".id"))
	if err != nil {
		t.Fatalf("recorded transcript %s (record it with -record): %v", name, err)
	}
	return filepath.Join(TranscriptDir, name), strings.TrimSpace(string(b))
}

// GoldenTranscript reads the recording name with r and compares the steps
// with <name>.golden.json (rewritten under -update); it returns them.
func GoldenTranscript(t *testing.T, r agents.TranscriptReader, name string) []agents.Step {
	t.Helper()
	dir, id := RecordedTranscript(t, name)
	steps, err := r.ReadTranscript(dir, id)
	if err != nil {
		t.Fatalf("read the recorded transcript %s: %v", name, err)
	}
	GoldenJSON(t, filepath.Join(TranscriptDir, name+".golden.json"), steps)
	return steps
}

// TranscriptCase is a recording of a real transcript: the name it is saved as,
// the kinds of steps it must hold in order (CheckKinds), and what
// SaveRecording writes under -record (the files kept as text, and how the
// mock model had the CLI act).
type TranscriptCase struct {
	Name  string
	Kinds []agents.StepKind
	Text  func(rel string) bool
	How   string
}

// ReaderCLI is a CLI that reads its transcripts back.
type ReaderCLI interface {
	agents.CLI
	agents.TranscriptReader
}

// RecordAndCheck records tr, reads the session back with cli's reader,
// checks its steps hold rec.Kinds in order and, under -record, saves it as
// rec.Name. It returns the session (for what a CLI adds to its recording).
func (tr Transcript) RecordAndCheck(t *testing.T, cli ReaderCLI, rec TranscriptCase) Session {
	t.Helper()
	s := tr.Record(t)
	steps, err := cli.ReadTranscript(s.State, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	CheckKinds(t, steps, rec.Kinds...)
	if Recording() {
		SaveRecording(t, cli, s, rec.Name, rec.Text, rec.How)
	}
	return s
}

// CheckKinds fails t unless steps hold, in this order (others between),
// steps of the given kinds.
func CheckKinds(t testing.TB, steps []agents.Step, kinds ...agents.StepKind) {
	t.Helper()
	i := 0
	for _, s := range steps {
		if i < len(kinds) && s.Kind == kinds[i] {
			i++
		}
	}
	if i < len(kinds) {
		var got []agents.StepKind
		for _, s := range steps {
			got = append(got, s.Kind)
		}
		t.Fatalf("transcript steps %q lack %q in order %q:\n%+v", got, kinds[i], kinds, steps)
	}
}

// CopyDir copies the folder src into a new temporary folder and returns it,
// for a test that changes a recording.
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// Tolerance checks that a JSON Lines transcript reader never fails on what
// a transcript holds: a line of an unknown entry type and a line that is
// not JSON each add one other step and leave the rest as recorded, a last
// line torn by a kill is dropped, and a session folder without the session
// is ErrNoTranscript.
type Tolerance struct {
	Reader agents.TranscriptReader
	// Name is the recording (see TranscriptDir); File a glob, relative to
	// its folder, of the transcript file the lines are added to (the
	// largest match).
	Name, File string
	// Unknown is a line of an entry type the reader does not know.
	Unknown string
}

// Check runs the cases.
func (tl Tolerance) Check(t *testing.T) {
	dir, id := RecordedTranscript(t, tl.Name)
	want, err := tl.Reader.ReadTranscript(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		edit       func(lines []string) []string
		wantOthers int
	}{
		{"unknown entry type", func(l []string) []string { return slices.Insert(l, len(l)/2, tl.Unknown) }, 1},
		{"unreadable line", func(l []string) []string { return slices.Insert(l, len(l)/2, `{"type": not json`) }, 1},
		{"torn last line", func(l []string) []string { return append(l, l[len(l)-1][:len(l[len(l)-1])/2]) }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tl.Reader.ReadTranscript(tl.edited(t, dir, c.edit), id)
			if err != nil {
				t.Fatalf("ReadTranscript: %v, want the steps", err)
			}
			if added, ok := newOthers(got, want); !ok || len(added) != c.wantOthers {
				t.Fatalf("got %d steps, want the %d recorded ones and %d more other steps:\n%+v", len(got), len(want), c.wantOthers, got)
			}
		})
	}
	t.Run("missing session", func(t *testing.T) {
		if _, err := tl.Reader.ReadTranscript(t.TempDir(), id); !errors.Is(err, agents.ErrNoTranscript) {
			t.Fatalf("ReadTranscript of an empty folder: %v, want ErrNoTranscript", err)
		}
	})
}

// edited copies the recording and rewrites the lines of its file with edit
// (the last line ends without a newline, as a torn write does).
func (tl Tolerance) edited(t *testing.T, dir string, edit func([]string) []string) string {
	t.Helper()
	cp := CopyDir(t, dir)
	matches, _ := filepath.Glob(filepath.Join(cp, tl.File))
	file, size := "", int64(-1)
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Size() > size {
			file, size = m, fi.Size()
		}
	}
	if file == "" {
		t.Fatalf("no transcript file %s in %s", tl.File, dir)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := edit(strings.Split(strings.TrimRight(string(b), "\n"), "\n"))
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return cp
}

// newOthers returns the steps got has beyond want, and whether got is
// want with only other steps added.
func newOthers(got, want []agents.Step) ([]agents.Step, bool) {
	var added []agents.Step
	i := 0
	for _, s := range got {
		switch {
		case i < len(want) && s == want[i]:
			i++
		case s.Kind == agents.StepOther:
			added = append(added, s)
		default:
			return nil, false
		}
	}
	return added, i == len(want)
}

// SeedLines seeds f with each line of the recorded files in dir, and with
// the whole of each.
func SeedLines(f *testing.F, dir string) {
	f.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.Add(b)
		for line := range strings.SplitSeq(string(b), "\n") {
			f.Add([]byte(line))
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
}
