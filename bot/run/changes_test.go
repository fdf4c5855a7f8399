package run

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// commitAs makes an empty commit in work as name <email> and returns its id.
func commitAs(t *testing.T, work, name, email, subject string) string {
	t.Helper()
	cmd := exec.Command("git", "commit", "--quiet", "--allow-empty", "-m", subject)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME="+name, "GIT_AUTHOR_EMAIL="+email, "GIT_COMMITTER_NAME="+name, "GIT_COMMITTER_EMAIL="+email)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	return run(t, work, "git", "rev-parse", "HEAD")
}

// TestChangesSince: with real git, the commits of the branch since the
// bot's last head, newest first, without the bot's own; none when the head
// did not move; the newest of a rewritten branch; bounded, the rest
// counted; a recorded head that is not a commit id is refused.
func TestChangesSince(t *testing.T) {
	const bot = "alfred@localhost"
	for _, c := range []struct {
		name string
		// work makes the history after the bot's head and returns the
		// head the bot recorded (default: the one before).
		work          func(t *testing.T, work, botHead string) string
		want          []string // subjects
		more          int
		rewritten, no bool
	}{
		{name: "a person's commits", work: func(t *testing.T, work, botHead string) string {
			commitAs(t, work, "Bob", "bob@x", "Say hello in French")
			commitAs(t, work, "Alfred", bot, "fix: address review feedback (#7)")
			commitAs(t, work, "Carol", "carol@x", "Fix the test")
			return botHead
		}, want: []string{"Fix the test", "Say hello in French"}},
		{name: "no change", work: func(t *testing.T, work, botHead string) string { return botHead }, no: true},
		{name: "only the bot's", work: func(t *testing.T, work, botHead string) string {
			commitAs(t, work, "Alfred", bot, "fix: make CI pass (#7)")
			return botHead
		}, no: true},
		{name: "rewritten", work: func(t *testing.T, work, botHead string) string {
			run(t, work, "git", "reset", "--quiet", "--hard", "HEAD~1")
			commitAs(t, work, "Bob", "bob@x", "Start over")
			return botHead
		}, want: []string{"Start over", "initial"}, rewritten: true},
		{name: "bounded", work: func(t *testing.T, work, botHead string) string {
			for i := range MaxChangedCommits + 3 {
				commitAs(t, work, "Bob", "bob@x", fmt.Sprintf("step %d", i))
			}
			return botHead
		}, more: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			work, bare := t.TempDir(), filepath.Join(t.TempDir(), "cache.git")
			run(t, work, "git", "init", "--quiet", "--initial-branch=agent/issue-7")
			commitAs(t, work, "Alice", "alice@x", "initial")
			since := commitAs(t, work, "Alfred", bot, "feat: a greeting (#7)")
			since = c.work(t, work, since)
			run(t, "", "git", "clone", "--quiet", "--bare", work, bare)
			w := &Worktree{Branch: "alfred/run-1", source: "agent/issue-7", cache: bare, start: run(t, work, "git", "rev-parse", "HEAD"), onBranch: true}
			ch, err := w.changesSince(context.Background(), since, bot)
			if err != nil {
				t.Fatal(err)
			}
			if c.no {
				if ch != nil {
					t.Fatalf("changes %+v, want none", ch)
				}
				return
			}
			if ch == nil {
				t.Fatal("no changes")
			}
			var got []string
			for _, cm := range ch.Commits {
				got = append(got, cm.Subject)
			}
			if c.want != nil && strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("subjects %q, want %q", got, c.want)
			}
			if ch.More != c.more || ch.Rewritten != c.rewritten || ch.Since != since || ch.Head != w.start || ch.Branch != "agent/issue-7" {
				t.Errorf("changes %+v: want more %d, rewritten %v", ch, c.more, c.rewritten)
			}
			if c.more > 0 && len(ch.Commits) != MaxChangedCommits {
				t.Errorf("%d commits listed, want %d", len(ch.Commits), MaxChangedCommits)
			}
		})
	}
	w := &Worktree{cache: t.TempDir(), start: strings.Repeat("a", 40)}
	if _, err := w.changesSince(context.Background(), "HEAD --output=/tmp/x", bot); err == nil {
		t.Error("a recorded head that is not a commit id was used")
	}
}
