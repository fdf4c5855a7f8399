package clitest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// GitWorktree makes a git working copy with one commit (README.md and a
// .gitignore of the project's own), as the engine's checkout leaves it, and
// returns its folder.
func GitWorktree(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"README.md": "# project\n", ".gitignore": "/build/\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"add", "--all"},
		{"-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "--quiet", "-m", "initial"},
	} {
		Git(t, dir, args...)
	}
	return dir
}

// Git runs git in dir with no user or system configuration and returns its
// standard output, or fails t with its standard error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return stdout.String()
}

// Status is `git status --porcelain --untracked-files=all` of dir, one entry
// per line ("?? path"), with --ignored also the ignored files ("!! path").
func Status(t testing.TB, dir string, ignored bool) []string {
	t.Helper()
	args := []string{"status", "--porcelain=v1", "--untracked-files=all"}
	if ignored {
		args = append(args, "--ignored")
	}
	var lines []string
	for _, l := range strings.Split(Git(t, dir, args...), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// CleanWorktree runs a real CLI through the shared flow in a git working
// copy, the way the engine does (worktree at /workspace, phase
// development), and checks that afterwards `git status` lists only what the
// agent was asked to change: the adapter's Capabilities.WorktreeFiles are
// written to .git/info/exclude before the first run, as the engine does.
//
// It runs once without a session and, for a resumable adapter, once fresh
// and once resumed, so that every mode's files show up. It also checks that
// every declared pattern matched a file the CLI wrote: a pattern nothing
// needs is a guess, not a fact.
type CleanWorktree struct {
	Mocked
	// Dir is the working copy (see GitWorktree); a new one when empty.
	Dir string
	// Asked are path.Match patterns of the files the agent was asked to
	// create (relative to Dir, slash-separated); each must match an
	// untracked file after the runs, and nothing else may be in the status.
	Asked []string
}

// Check runs the steps and fails t on any deviation.
func (c CleanWorktree) Check(t *testing.T) {
	t.Helper()
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.Dir == "" {
		c.Dir = GitWorktree(t)
	}
	caps := c.Adapter.Capabilities()
	if err := agents.ExcludeWorktreeFiles(c.Dir, c.Adapter); err != nil {
		t.Fatal(err)
	}
	if s := Status(t, c.Dir, true); len(s) != 0 {
		t.Fatalf("the working copy is not clean before the run: %q", s)
	}

	state := t.TempDir()
	steps := []step{{name: "no session", prompt: "first question"}}
	if caps.ResumableSessions {
		steps = append(steps,
			step{name: "fresh", prompt: "second question", session: true},
			step{name: "resume", prompt: "third question", session: true, resume: true})
	}
	prev := ""
	for _, st := range steps {
		req := agents.Request{Prompt: st.prompt, Phase: agents.PhaseDevelopment, Timeout: c.Timeout, Runner: c.Runner}
		req.Session = st.ref(prev, state)
		req.Sandbox = sandbox.Spec{
			Workdir:  sandbox.WorkspacePath,
			Worktree: &sandbox.Mount{Host: c.Dir, Container: sandbox.WorkspacePath},
			Env:      c.Env,
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.Timeout+time.Minute)
		res, err := c.Adapter.Run(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if res.Outcome != agents.OutcomeSucceeded {
			t.Fatalf("%s: outcome %s, want succeeded\nstdout: %s\nstderr: %s\nmock unhandled: %v",
				st.name, res.Outcome, res.Stdout, res.Stderr, c.Mock.Unhandled())
		}
		if st.resume && !res.Resumed {
			t.Fatalf("resume: id %q not resumed (fallback %q)", res.NativeSessionID, res.ResumeFallback)
		}
		prev = res.NativeSessionID
		t.Logf("%s: git status --ignored: %q", st.name, Status(t, c.Dir, true))
	}
	if len(c.Mock.Requests()) == 0 {
		t.Fatal("the mock model got no request")
	}
	c.checkAsked(t, Status(t, c.Dir, false))
	c.checkPatterns(t, caps.WorktreeFiles)
}

// step is one run of CleanWorktree.Check.
type step struct {
	name, prompt string
	// session runs with a SessionRef on the state folder; resume resumes
	// the previous run's native id.
	session, resume bool
}

// ref is the step's session reference, given the previous run's native id
// and the session state folder.
func (s step) ref(prev, state string) *agents.SessionRef {
	switch {
	case !s.session:
		return nil
	case s.resume:
		return &agents.SessionRef{Name: sessionName, ResumeID: prev, HostStateDir: state}
	}
	return &agents.SessionRef{Name: sessionName, HostStateDir: state, FreshReason: agents.FallbackNoPriorSession}
}

const sessionName = "agent/issue-13-keep-agent-files-out"

// checkAsked: every status entry is a new file matching Asked, and each of
// Asked matched one.
func (c CleanWorktree) checkAsked(t *testing.T, status []string) {
	t.Helper()
	used := make([]bool, len(c.Asked))
	for _, line := range status {
		file, ok := strings.CutPrefix(line, "?? ")
		i := slices.IndexFunc(c.Asked, func(p string) bool { m, _ := path.Match(p, file); return m })
		if !ok || i < 0 {
			t.Errorf("git status holds %q, which the agent was not asked to change (asked: %q; whole status %q)", line, c.Asked, status)
			continue
		}
		used[i] = true
	}
	for i, u := range used {
		if !u {
			t.Errorf("the agent was asked to create %q, git status has no such file: %q", c.Asked[i], status)
		}
	}
}

// checkPatterns fails t when a declared pattern matched none of the ignored
// paths the runs left.
func (c CleanWorktree) checkPatterns(t *testing.T, patterns []string) {
	t.Helper()
	var ignored []string
	for _, line := range Status(t, c.Dir, true) {
		if p, ok := strings.CutPrefix(line, "!! "); ok {
			ignored = append(ignored, p)
		}
	}
	matched := map[string]bool{}
	if len(ignored) > 0 {
		// source:line:pattern<TAB>path for each ignored path.
		out := Git(t, c.Dir, append([]string{"check-ignore", "--verbose", "--"}, ignored...)...)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			src, _, _ := strings.Cut(l, "\t")
			parts := strings.SplitN(src, ":", 3)
			if len(parts) == 3 && parts[0] == ".git/info/exclude" {
				matched[parts[2]] = true
			}
		}
	}
	for _, p := range patterns {
		if !matched[p] {
			t.Errorf("declared worktree pattern %q matched nothing the CLI wrote (ignored: %q)", p, ignored)
		}
	}
	t.Logf("kept out of git by the declared patterns %q: %q", patterns, ignored)
}
