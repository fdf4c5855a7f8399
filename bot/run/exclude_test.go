package run

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/internal/gitcmd"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/forges"
)

// excludeStub is an adapter that only declares worktree files.
type excludeStub struct{ patterns []string }

func (excludeStub) ID() string { return "stub-cli" }

func (s excludeStub) Capabilities() agents.Capabilities {
	return agents.Capabilities{Kind: agents.KindLocal, WorktreeFiles: s.patterns}
}

func (excludeStub) Run(context.Context, agents.Request) (*agents.Result, error) {
	return nil, errors.New("excludeStub does not run")
}

// projectGitignore is the project's own .gitignore in every test repository.
const projectGitignore = "/build/\n"

// excludeCheckout seeds a local repository holding README.md, the project's
// .gitignore and tracked, fetches it into a Repos and checks out a write
// branch, as a run does.
func excludeCheckout(t *testing.T, tracked map[string]string) *Worktree {
	t.Helper()
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "demo.git")
	run(t, "", "git", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	work := t.TempDir()
	run(t, work, "git", "init", "--quiet", "--initial-branch=main")
	files := map[string]string{"README.md": "demo\n", ".gitignore": projectGitignore}
	for name, body := range tracked {
		files[name] = body
	}
	writeFiles(t, work, files)
	run(t, work, "git", "add", "--all")
	run(t, work, "git", "commit", "--quiet", "-m", "initial")
	run(t, work, "git", "push", "--quiet", bare, "main")

	p := forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"}
	remote := Remote{URL: bare}
	repos := &Repos{Base: t.TempDir(), Name: "Alfred", Email: "alfred@example.invalid"}
	if _, err := repos.Fetch(ctx, p, remote); err != nil {
		t.Fatal(err)
	}
	wt, err := repos.Checkout(ctx, p, remote, "run-1", "agent/issue-13-x", "main", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wt.Remove() })
	return wt
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExcludeAgentFiles: the declared patterns are excluded before the agent
// runs, so CommitAll commits the change and nothing of the CLI's, while the
// project's .gitignore and tracked files keep their meaning.
func TestExcludeAgentFiles(t *testing.T) {
	tests := []struct {
		name      string
		patterns  []string
		tracked   map[string]string // committed in the project before the run
		agent     map[string]string // what the agent CLI leaves in the worktree
		committed []string          // what CommitAll must commit
	}{
		{
			name:      "a CLI's settings file stays out",
			patterns:  []string{"/.grok/settings.json"},
			agent:     map[string]string{".grok/settings.json": `{"model":"grok-code-fast-1"}`, "feature.go": "package demo\n"},
			committed: []string{"feature.go"},
		},
		{
			name:      "an anchored file pattern leaves the same name elsewhere",
			patterns:  []string{"/.grok/settings.json"},
			agent:     map[string]string{".grok/settings.json": "{}", "docs/.grok/settings.json": "{}", ".grok/GROK.md": "Be brief.\n"},
			committed: []string{".grok/GROK.md", "docs/.grok/settings.json"},
		},
		{
			name:      "a folder pattern at any depth",
			patterns:  []string{".agent-cache/"},
			agent:     map[string]string{".agent-cache/a/b.json": "{}", "sub/.agent-cache/x": "x", "main.go": "package main\n"},
			committed: []string{"main.go"},
		},
		{
			name:      "no patterns: everything the agent left is committed",
			agent:     map[string]string{".grok/settings.json": "{}", "feature.go": "package demo\n"},
			committed: []string{".grok/settings.json", "feature.go"},
		},
		{
			name:      "a file the project tracks stays the project's",
			patterns:  []string{"/.grok/settings.json"},
			tracked:   map[string]string{".grok/settings.json": `{"model":"a"}`},
			agent:     map[string]string{".grok/settings.json": `{"model":"b"}`},
			committed: []string{".grok/settings.json"},
		},
		{
			name:      "the project's .gitignore still applies",
			patterns:  []string{"/.grok/settings.json"},
			agent:     map[string]string{"build/out.bin": "bin", ".grok/settings.json": "{}", "x.go": "package x\n"},
			committed: []string{"x.go"},
		},
		{
			name:     "only the CLI's files: nothing to commit",
			patterns: []string{"/.grok/settings.json"},
			agent:    map[string]string{".grok/settings.json": "{}"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			wt := excludeCheckout(t, tt.tracked)
			excludePath := filepath.Join(wt.Dir, ".git", "info", "exclude")
			before, _ := os.ReadFile(excludePath)

			if err := agents.ExcludeWorktreeFiles(wt.Dir, excludeStub{tt.patterns}); err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(excludePath)
			if len(tt.patterns) == 0 && (err != nil || !bytes.Equal(after, before)) {
				t.Fatalf("no patterns, yet info/exclude changed: %q -> %q (%v)", before, after, err)
			}
			if !bytes.HasPrefix(after, before) {
				t.Fatalf("info/exclude lost its content: %q -> %q", before, after)
			}
			lines := strings.Split(string(after), "\n")
			for _, p := range tt.patterns {
				if !slices.Contains(lines, p) {
					t.Fatalf("info/exclude %q lacks the line %q", after, p)
				}
			}

			wt.Excludes = tt.patterns // as Runner.Run sets them (runner.go)
			writeFiles(t, wt.Dir, tt.agent)
			changed, err := wt.CommitAll(ctx, "the change")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if changed {
				out, err := git(ctx, gitcmd.Cmd{GitDir: wt.private}, "show", "--name-only", "--format=", wt.head)
				if err != nil {
					t.Fatal(err)
				}
				got = strings.Fields(out)
			}
			if want := tt.committed; !slices.Equal(got, want) {
				t.Fatalf("committed %q, want %q", got, want)
			}
			if gi, err := os.ReadFile(filepath.Join(wt.Dir, ".gitignore")); err != nil || string(gi) != projectGitignore {
				t.Fatalf("the project's .gitignore is %q (%v), want it untouched: %q", gi, err, projectGitignore)
			}
			for name := range tt.agent {
				if _, err := os.Stat(filepath.Join(wt.Dir, filepath.FromSlash(name))); err != nil {
					t.Fatalf("the agent's file %s is gone: %v", name, err)
				}
			}
		})
	}
}

// TestExcludeAgentFilesFailure: when info/exclude cannot be written the run
// stops there, with an error naming the adapter.
func TestExcludeAgentFilesFailure(t *testing.T) {
	wt := excludeCheckout(t, nil)
	excludePath := filepath.Join(wt.Dir, ".git", "info", "exclude")
	if err := os.RemoveAll(excludePath); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(excludePath, "blocker"), 0o755); err != nil { // a folder where the file goes
		t.Fatal(err)
	}
	err := agents.ExcludeWorktreeFiles(wt.Dir, excludeStub{[]string{"/.grok/settings.json"}})
	if err == nil || !strings.Contains(err.Error(), "exclude the stub-cli agent's files") {
		t.Fatalf("ExcludeWorktreeFiles = %v, want an error naming the adapter", err)
	}
}
