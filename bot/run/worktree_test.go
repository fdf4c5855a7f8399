package run

import (
	"context"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

// gitForge serves bare repositories over git's smart HTTP protocol with the
// real git http-backend, behind basic auth, as a forge does.
type gitForge struct {
	root     string
	srv      *httptest.Server
	refusals atomic.Int32
}

func newGitForge(t testing.TB, user, token string) *gitForge {
	t.Helper()
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend is missing (install git): %v", err)
	}
	g := &gitForge{root: t.TempDir()}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1"}}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != token {
			g.refusals.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=alice", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=alice", "GIT_COMMITTER_EMAIL=a@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// head is the commit of branch in owner/name.git, "" when it does not exist.
func (g *gitForge) head(owner, name, branch string) string {
	out, err := exec.Command("git", "--git-dir", filepath.Join(g.root, owner, name+".git"), "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// seed makes owner/name.git with one commit on main.
func (g *gitForge) seed(t testing.TB, owner, name string) string {
	t.Helper()
	bare := filepath.Join(g.root, owner, name+".git")
	run(t, "", "git", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	run(t, bare, "git", "config", "http.receivepack", "true")
	work := t.TempDir()
	run(t, work, "git", "init", "--quiet", "--initial-branch=main")
	os.WriteFile(filepath.Join(work, "README.md"), []byte("demo\n"), 0o644)
	run(t, work, "git", "add", ".")
	run(t, work, "git", "commit", "--quiet", "-m", "initial")
	run(t, work, "git", "push", "--quiet", bare, "main")
	return bare
}

func TestReposCheckoutCommitPush(t *testing.T) {
	ctx := context.Background()
	g := newGitForge(t, "alfred", "tok-s3cret")
	bare := g.seed(t, "alice", "demo")
	p := forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"}
	remote := Remote{URL: g.srv.URL + "/alice/demo.git", Username: "alfred", Password: "tok-s3cret"}
	repos := &Repos{Base: t.TempDir(), Name: "Alfred", Email: "alfred@example.invalid"}

	if _, err := repos.Fetch(ctx, p, Remote{URL: remote.URL, Username: "alfred", Password: "wrong"}); err == nil {
		t.Fatal("fetch with a wrong token succeeded")
	} else if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("the error shows the token: %v", err)
	}
	if _, err := repos.Fetch(ctx, p, remote); err != nil {
		t.Fatal(err)
	}

	// A read-only phase before the branch exists: a temporary branch, never pushed.
	ro, err := repos.Checkout(ctx, p, remote, "run-1", "agent/issue-7-x", "main", false)
	if err != nil {
		t.Fatal(err)
	}
	if ro.Branch != "alfred/run-run-1" {
		t.Errorf("read-only branch %q", ro.Branch)
	}
	if err := ro.Push(ctx); err == nil {
		t.Error("a read-only working copy pushed")
	}
	ro.Remove()

	// A write phase: the issue branch from main, the agent's change committed as the bot, pushed.
	wt, err := repos.Checkout(ctx, p, remote, "run-2", "agent/issue-7-x", "main", true)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := wt.CommitAll(ctx, "nothing"); err != nil || changed {
		t.Fatalf("commit of a clean tree: %v %v", changed, err)
	}
	os.WriteFile(filepath.Join(wt.Dir, "feature.go"), []byte("package demo\n"), 0o644)
	if changed, err := wt.CommitAll(ctx, "feat: add the feature"); err != nil || !changed {
		t.Fatalf("commit: %v %v", changed, err)
	}
	if ahead, err := wt.Ahead(ctx); err != nil || !ahead {
		t.Fatalf("ahead: %v %v", ahead, err)
	}
	if err := wt.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := run(t, bare, "git", "log", "-1", "--format=%an <%ae>|%s", "agent/issue-7-x"); got != "Alfred <alfred@example.invalid>|feat: add the feature" {
		t.Errorf("forge branch head: %q", got)
	}
	if cfg, _ := os.ReadFile(filepath.Join(wt.Dir, ".git", "config")); strings.Contains(string(cfg), "tok-s3cret") {
		t.Error("the token was written to the working copy's config")
	}
	wt.Remove()

	// The next run starts from the pushed branch, and a read-only phase now uses it too.
	if _, err := repos.Fetch(ctx, p, remote); err != nil {
		t.Fatal(err)
	}
	if !repos.BranchExists(ctx, p, "agent/issue-7-x") {
		t.Fatal("the cache does not see the pushed branch")
	}
	next, err := repos.Checkout(ctx, p, remote, "run-3", "agent/issue-7-x", "main", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(next.Dir, "feature.go")); err != nil {
		t.Errorf("the next run does not start from the issue branch: %v", err)
	}
	if ahead, _ := next.Ahead(ctx); ahead {
		t.Error("a fresh checkout of the branch is not ahead")
	}
}
