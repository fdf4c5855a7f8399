package forgejotest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitHost serves a bare repository over smart HTTP with the real git
// (git http-backend), at the path of the clone URL.
type gitHost struct {
	bare    string // the bare repository
	root    string // GIT_PROJECT_ROOT: a directory holding Repo+".git" -> bare
	backend string
}

// ServeGit hosts the bare repository at bare at CloneURL(), so that git clones,
// fetches and pushes over HTTP as with Forgejo: any user name with the bot's
// token as password (fetching needs no credentials, like a public repository).
// The fake's branches then follow the repository's refs: after each push it
// updates them and delivers what Forgejo 7 sends (create for a new branch,
// push, delete for a removed one, pull_request_sync "synchronized" for open pull
// requests from a pushed branch). It needs the git CLI and git http-backend.
func (s *Server) ServeGit(bare string) error {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return fmt.Errorf("serve git: the git CLI is needed: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return fmt.Errorf("serve git: git http-backend is needed: %w", err)
	}
	root, err := os.MkdirTemp("", "forgejotest-git-")
	if err != nil {
		return fmt.Errorf("serve git: %w", err)
	}
	abs, err := filepath.Abs(bare)
	if err != nil {
		return fmt.Errorf("serve git: %w", err)
	}
	if err := os.Symlink(abs, filepath.Join(root, Repo+".git")); err != nil {
		return fmt.Errorf("serve git: %w", err)
	}
	refs, err := readRefs(abs)
	if err != nil {
		return fmt.Errorf("serve git: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.git = &gitHost{bare: abs, root: root, backend: backend}
	for name, sha := range refs {
		s.branches[name] = sha
	}
	return nil
}

func (s *Server) gitPrefix() string { return "/" + Owner + "/" + Repo + ".git/" }

// serveGit answers a git smart HTTP request; it is called without s.mu held.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, g *gitHost) {
	push := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
	user, pass, ok := r.BasicAuth()
	if push && (!ok || pass != BotToken) {
		w.Header().Set("WWW-Authenticate", `Basic realm="Gitea"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	if user == "" {
		user = Bot
	}
	h := &cgi.Handler{
		Path: g.backend,
		Root: "/" + Owner,
		Env:  []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + Bot},
	}
	h.ServeHTTP(w, r)
	if push && r.Method == http.MethodPost {
		s.syncRefs(g)
	}
}

// syncRefs brings the fake's branches in line with the repository after a
// push and queues the webhooks Forgejo would send.
func (s *Server) syncRefs(g *gitHost) {
	refs, err := readRefs(g.bare)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	zero := strings.Repeat("0", 40)
	for name, sha := range refs {
		before, ok := s.branches[name]
		if ok && before == sha {
			continue
		}
		s.branches[name] = sha
		if !ok {
			before = zero
			o := hookObject("hook-create.json")
			o["ref"], o["ref_type"], o["sha"] = "refs/heads/"+name, "branch", sha
			o["repository"], o["sender"] = s.repoJSON(), s.userJSON(Bot)
			s.enqueue("create", "create", o)
		}
		s.hookPush(name, before, sha, Bot)
		for _, is := range s.pullsByState("open") {
			if is.pull.head == name {
				s.moved(is, sha)
				s.enqueue("pull_request", "pull_request_sync", s.pullPayload(is, "synchronized", Bot, nil))
			}
		}
	}
	for name := range s.branches {
		if _, ok := refs[name]; !ok && name != DefaultBranch {
			delete(s.branches, name)
			s.hookDelete(name, Bot)
		}
	}
}

func readRefs(bare string) (map[string]string, error) {
	cmd := exec.Command("git", "-C", bare, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("read refs of %s: %w: %s", bare, err, strings.TrimSpace(stderr.String()))
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if ok {
			refs[strings.TrimPrefix(ref, "refs/heads/")] = sha
		}
	}
	return refs, nil
}
