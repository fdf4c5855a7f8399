package takeover

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/codex"
	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/agents/grok"
	"github.com/alchemic-studio/alfred/agents/opencode"
	botrun "github.com/alchemic-studio/alfred/bot/run"
)

var update = flag.Bool("update", false, "rewrite testdata/commands.txt")

// locals are Alfred's local CLIs, by their constructors.
var locals = []func() (*agents.Local, error){claudecode.New, codex.New, opencode.New, copilot.New, gemini.New, grok.New}

// TestGoldenCommands: the command each CLI's takeover prints, compared
// with testdata/commands.txt (go test ./takeover -run TestGoldenCommands
// -update rewrites it); a CLI without sessions has none.
func TestGoldenCommands(t *testing.T) {
	var b strings.Builder
	for _, newCLI := range locals {
		l, err := newCLI()
		if err != nil {
			t.Fatal(err)
		}
		s := Session{Mailbox: mailbox, Descriptor: l.Descriptor(), NativeID: "6f1c-id"}
		cmd, err := Command(s, FileName(s))
		b.WriteString("# " + l.ID() + "\n")
		if err != nil {
			b.WriteString("error: " + err.Error() + "\n\n")
			continue
		}
		b.WriteString(cmd + "\n")
		if n := l.Descriptor().Takeover.Note; n != "" {
			b.WriteString("note: " + n + "\n")
		}
		b.WriteString("\n")
	}
	path := filepath.Join("testdata", "commands.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: write it with -update", err)
	}
	if string(want) != b.String() {
		t.Errorf("%s changed; if meant, rewrite it with -update. Got:\n%s", path, b.String())
	}
}

// TestQuoted: what came from a record is one word for the shell, whatever
// it holds.
func TestQuoted(t *testing.T) {
	for in, want := range map[string]string{
		"agent/issue-7-x": "agent/issue-7-x", "6f1c-id": "6f1c-id", "": "''",
		"a b": "'a b'", "$(rm -rf ~)": "'$(rm -rf ~)'", "it's": `'it'\''s'`, "a;b": "'a;b'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestCommandUnpacks runs the command with real git, tar and sh, in a clone
// of a real repository, up to the CLI's own resume (its last step): the
// issue branch is checked out, and the session's transcript is where the
// CLI looks for the sessions of the clone's directory.
func TestCommandUnpacks(t *testing.T) {
	for _, c := range []struct {
		newCLI func() (*agents.Local, error)
		file   string // the transcript in the session folder
		want   func(home, clone string) string
	}{
		{claudecode.New, "-workspace/6f1c-id.jsonl", func(home, clone string) string {
			slug := strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '-'
			}, clone)
			return filepath.Join(home, ".claude", "projects", slug, "6f1c-id.jsonl")
		}},
		{codex.New, "2026/12/04/rollout-6f1c-id.jsonl", func(home, _ string) string {
			return filepath.Join(home, ".codex", "sessions", "2026", "12", "04", "rollout-6f1c-id.jsonl")
		}},
	} {
		l, err := c.newCLI()
		if err != nil {
			t.Fatal(err)
		}
		t.Run(l.ID(), func(t *testing.T) {
			base, home, work := t.TempDir(), t.TempDir(), t.TempDir()
			clone := filepath.Join(work, "my demo")
			remote := gitRemote(t, work, mailbox.BranchName)
			sh(t, work, home, "git clone --quiet "+shellQuote(remote)+" "+shellQuote(clone))
			dir, err := botrun.SessionStore{Base: base}.Ensure(mailbox, l.ID(), os.Getuid(), os.Getgid())
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, c.file, `{"session":"6f1c-id"}`+"\n")
			s := Session{Mailbox: mailbox, Descriptor: l.Descriptor(), NativeID: "6f1c-id"}
			var buf bytes.Buffer
			if _, err := (Exporter{Sessions: botrun.SessionStore{Base: base}}).Write(context.Background(), &buf, s); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(clone, FileName(s)), buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd, err := Command(s, FileName(s))
			if err != nil {
				t.Fatal(err)
			}
			steps := strings.Split(cmd, " && ")
			if last := steps[len(steps)-1]; !strings.HasPrefix(last, l.Descriptor().Executable+" ") || !strings.Contains(last, "6f1c-id") {
				t.Fatalf("the command ends with %q, not the CLI's resume of the session", last)
			}
			sh(t, clone, home, strings.Join(steps[:len(steps)-1], " && "))
			if got := strings.TrimSpace(sh(t, clone, home, "git branch --show-current")); got != mailbox.BranchName {
				t.Errorf("on branch %q, want %s", got, mailbox.BranchName)
			}
			if b, err := os.ReadFile(c.want(home, clone)); err != nil || !strings.Contains(string(b), "6f1c-id") {
				t.Errorf("the transcript is not where %s looks: %v", l.ID(), err)
			}
		})
	}
}

// gitRemote makes a bare repository with a main branch and branch.
func gitRemote(t *testing.T, work, branch string) string {
	t.Helper()
	remote := filepath.Join(work, "remote.git")
	src := filepath.Join(work, "src")
	home := t.TempDir()
	sh(t, work, home, "git init --quiet --bare remote.git && git init --quiet -b main src")
	sh(t, src, home, "git commit --quiet --allow-empty -m init && git switch --quiet -c "+shellQuote(branch)+
		" && git commit --quiet --allow-empty -m work && git push --quiet "+shellQuote(remote)+" main "+shellQuote(branch))
	return remote
}

// sh runs script with sh in dir, HOME at home, and returns its output.
func sh(t *testing.T, dir, home, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}
