package state

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// gitCLI runs the git CLI in repo and fails the test when it is missing or fails.
func gitCLI(t testing.TB, repo string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git CLI is required (apt-get install git): %v", err)
	}
	cmd := exec.Command("git", append([]string{"--git-dir", repo}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// fsck checks the repository with git fsck --strict and that the branch has
// a linear history (every commit but the root has exactly one parent).
func fsck(t testing.TB, repo string) {
	t.Helper()
	gitCLI(t, repo, "fsck", "--strict", "--no-dangling", "--no-progress")
	for _, line := range strings.Split(strings.TrimSpace(gitCLI(t, repo, "rev-list", "--parents", string(RefName))), "\n") {
		if f := strings.Fields(line); len(f) > 2 {
			t.Fatalf("commit %s has %d parents, want a linear history", f[0], len(f)-1)
		}
	}
}

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

func testMailbox(iid int64) Mailbox {
	return Mailbox{Forge: "forgejo", Owner: "acme", Project: "widget", Kind: KindIssue, IID: iid,
		Title: "Add a thing", Status: "functional_analysis", Phase: "analysis", Labels: []string{"type::task"},
		IssueURL: "http://forge.test/acme/widget/issues/1", CreatedAt: time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)}
}
