package bot

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
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
