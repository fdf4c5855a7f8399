package forgejo_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
)

func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
		"GIT_AUTHOR_NAME=bot", "GIT_AUTHOR_EMAIL=bot@forge.test", "GIT_COMMITTER_NAME=bot", "GIT_COMMITTER_EMAIL=bot@forge.test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestFakeServesGit pushes with the real git CLI through the fake's smart
// HTTP endpoint and checks that branches and webhooks follow, as on Forgejo.
func TestFakeServesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if testing.Short() {
			t.Skip("the git CLI is not installed (apt-get install git)")
		}
		t.Fatal("the git CLI is needed for this test: apt-get install git")
	}
	var mu sync.Mutex
	var events []*forges.Event
	sink := func(_ context.Context, ev *forges.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		return nil
	}
	hook := httptest.NewServer(forges.NewWebhookHandler("fj", forgejo.Hooks{}, []string{"s3cret"}, sink, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer hook.Close()

	tmp := t.TempDir()
	bare := filepath.Join(tmp, "demo.git")
	gitCmd(t, tmp, "init", "-q", "--bare", "-b", "main", bare)
	srv := forgejotest.NewServer(t)
	if err := srv.ServeGit(bare); err != nil {
		t.Fatal(err)
	}
	srv.SetWebhook(hook.URL, "s3cret")
	f, err := forgejo.New(forgejo.Options{BaseURL: srv.URL(), Token: forgejotest.BotToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := forges.Project{Owner: forgejotest.Owner, Name: forgejotest.Repo}

	clone, err := f.CloneURL(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(clone)
	user, pass, err := f.GitCredentials(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, pass)

	work := filepath.Join(tmp, "work")
	gitCmd(t, tmp, "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "README.md"), []byte("demo\n"), 0o644)
	gitCmd(t, work, "add", ".")
	gitCmd(t, work, "commit", "-q", "-m", "first")
	gitCmd(t, work, "push", "-q", u.String(), "main")
	gitCmd(t, work, "checkout", "-q", "-b", "agent/issue-1-x")
	os.WriteFile(filepath.Join(work, "a.go"), []byte("package a\n"), 0o644)
	gitCmd(t, work, "add", ".")
	gitCmd(t, work, "commit", "-q", "-m", "a")
	gitCmd(t, work, "push", "-q", u.String(), "agent/issue-1-x")
	head := gitCmd(t, work, "rev-parse", "HEAD")

	if ok, err := f.BranchExists(ctx, p, "agent/issue-1-x"); err != nil || !ok {
		t.Fatalf("BranchExists after push = %v, %v", ok, err)
	}
	mr, err := f.CreateMergeRequest(ctx, p, forges.NewMergeRequest{Title: "x", Body: "Closes #1", SourceBranch: "agent/issue-1-x", TargetBranch: "main"})
	if err != nil || mr.HeadSHA != head {
		t.Fatalf("CreateMergeRequest = %+v, %v; want head %s", mr, err, head)
	}
	os.WriteFile(filepath.Join(work, "b.go"), []byte("package a\n"), 0o644)
	gitCmd(t, work, "add", ".")
	gitCmd(t, work, "commit", "-q", "-m", "b")
	gitCmd(t, work, "push", "-q", u.String(), "agent/issue-1-x")
	head2 := gitCmd(t, work, "rev-parse", "HEAD")
	gitCmd(t, work, "push", "-q", u.String(), ":agent/issue-1-x")

	// Pushing without the token is refused; cloning needs none.
	anon := *u
	anon.User = nil
	cmd := exec.Command("git", "push", anon.String(), "main:refs/heads/anon")
	cmd.Dir, cmd.Env = work, append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "HOME="+work)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("push without credentials succeeded: %s", out)
	}
	gitCmd(t, tmp, "clone", "-q", anon.String(), filepath.Join(tmp, "clone"))

	srv.Flush()
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, ev := range events {
		got = append(got, string(ev.Type)+":"+ev.Branch)
	}
	want := []string{"push:main", "push:agent/issue-1-x", "mr_opened:agent/issue-1-x", "push:agent/issue-1-x", "mr_updated:agent/issue-1-x", "branch_deleted:agent/issue-1-x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("events = %q, want %q", got, want)
	}
	if len(events) == len(want) && events[4].SHA != head2 {
		t.Errorf("mr_updated SHA = %s, want %s", events[4].SHA, head2)
	}
	var kinds []string
	for _, d := range srv.Deliveries() {
		kinds = append(kinds, d.EventType)
		if d.Status != 200 && d.Status != 202 {
			t.Errorf("delivery %+v was not accepted", d)
		}
	}
	// A new branch is announced with create (ignored by the bot) before its push.
	if wantKinds := "push create push pull_request push pull_request_sync delete"; strings.Join(kinds, " ") != wantKinds {
		t.Errorf("deliveries = %q, want %q", kinds, wantKinds)
	}
}
