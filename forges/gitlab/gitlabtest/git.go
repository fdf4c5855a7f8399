package gitlabtest

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

// gitHost serves a bare repository over smart HTTP with the real git (git
// http-backend), at the path of the project's http_url_to_repo.
type gitHost struct {
	bare    string // the bare repository
	root    string // GIT_PROJECT_ROOT: a directory holding <group>/<sub>/<project>.git -> bare
	backend string
}

// ServeGit hosts the bare repository at bare at CloneURL() (the project's
// http_url_to_repo, /<group>/<sub>/<project>.git), so that git clones,
// fetches and pushes over HTTP as with GitLab's private project: every
// request needs HTTP Basic credentials, the user "oauth2" (or the bot's
// login) with the bot's token as password; anything else is answered 401
// with GitLab's challenge. The fake's branches then follow the repository's
// refs: ServeGit reads them, and after each push they are updated and the
// webhooks GitLab sends go out: a Push Hook per branch moved (before or
// after all zeros for a branch created or deleted), then a Merge Request
// Hook "update" with oldrev for each open merge request whose source branch
// moved (its head is the new commit). It needs the git CLI and git
// http-backend; the temporary folder it makes is removed with the server.
func (f *Server) ServeGit(bare string) error {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return fmt.Errorf("serve git: the git CLI is needed: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return fmt.Errorf("serve git: git http-backend is needed: %w", err)
	}
	abs, err := filepath.Abs(bare)
	if err != nil {
		return fmt.Errorf("serve git: %w", err)
	}
	refs, err := readRefs(abs)
	if err != nil {
		return fmt.Errorf("serve git: %w", err)
	}
	root, err := os.MkdirTemp("", "gitlabtest-git-")
	if err != nil {
		return fmt.Errorf("serve git: %w", err)
	}
	link := filepath.Join(root, filepath.FromSlash(f.path)+".git")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		os.RemoveAll(root)
		return fmt.Errorf("serve git: %w", err)
	}
	if err := os.Symlink(abs, link); err != nil {
		os.RemoveAll(root)
		return fmt.Errorf("serve git: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.git != nil {
		os.RemoveAll(f.git.root)
	}
	f.git = &gitHost{bare: abs, root: root, backend: backend}
	for name, sha := range refs {
		f.branches[name] = sha
	}
	return nil
}

// removeGit removes ServeGit's temporary folder.
func (f *Server) removeGit() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.git != nil {
		os.RemoveAll(f.git.root)
	}
}

// gitHostFor is the git host when r is a request for the repository.
func (f *Server) gitHostFor(r *http.Request) *gitHost {
	if !strings.HasPrefix(r.URL.Path, "/"+f.path+".git/") {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.git
}

// serveGit answers a git smart HTTP request; it is called without mu held.
func (f *Server) serveGit(w http.ResponseWriter, r *http.Request, g *gitHost) {
	user, pass, ok := r.BasicAuth()
	if !ok || pass != f.token || user != "oauth2" && user != f.bot {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitLab"`)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, "HTTP Basic: Access denied. If a password was provided for Git authentication, the password was incorrect or you're required to use a token instead of a password.\n")
		return
	}
	push := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
	h := &cgi.Handler{
		Path: g.backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + f.bot},
	}
	h.ServeHTTP(w, r)
	if push && r.Method == http.MethodPost {
		f.syncRefs(g)
	}
}

// syncRefs brings the fake's branches in line with the repository after a
// push by the bot and queues the webhooks GitLab sends.
func (f *Server) syncRefs(g *gitHost) {
	refs, err := readRefs(g.bare)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, sha := range refs {
		before, ok := f.branches[name]
		if ok && before == sha {
			continue
		}
		if !ok {
			before = zeroSHA
		}
		f.branches[name] = sha
		f.pushHook(name, before, sha, f.bot, f.pushCommits(g.bare, name, before, sha, refs))
		for _, mr := range f.mrs {
			if mr.State == "opened" && mr.Source == name && mr.SHA != sha {
				prev := mr.UpdatedAt
				old := mr.SHA
				mr.SHA, mr.UpdatedAt = sha, f.tick()
				f.mrHook(mr, "update", f.bot, old, nil, prev)
			}
		}
	}
	for name, sha := range f.branches {
		if _, ok := refs[name]; !ok {
			delete(f.branches, name)
			f.pushHook(name, sha, zeroSHA, f.bot, nil)
		}
	}
}

// pushCommits are the commits a push of branch from before to after brought,
// newest first and at most 20, as a Push Hook lists them; for a new branch,
// those no other branch has.
func (f *Server) pushCommits(bare, branch, before, after string, refs map[string]string) []any {
	args := []string{"-C", bare, "log", "-n", "20", "--format=%H%x00%an%x00%ae%x00%aI%x00%s%x00%B%x1e", after}
	if before != zeroSHA {
		args = append(args, "^"+before)
	} else {
		for name, sha := range refs {
			if name != branch {
				args = append(args, "^"+sha)
			}
		}
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return nil
	}
	commits := []any{}
	for _, rec := range strings.Split(string(out), "\x1e") {
		p := strings.SplitN(strings.TrimLeft(rec, "\n"), "\x00", 6)
		if len(p) != 6 {
			continue
		}
		added, modified, removed := changedFiles(bare, p[0])
		commits = append(commits, map[string]any{
			"id": p[0], "message": p[5], "title": p[4], "timestamp": p[3],
			"url":    fmt.Sprintf("%s/%s/-/commit/%s", f.srv.URL, f.path, p[0]),
			"author": map[string]any{"name": p[1], "email": p[2]},
			"added":  added, "modified": modified, "removed": removed,
		})
	}
	return commits
}

// changedFiles are the paths commit sha added, modified and removed.
func changedFiles(bare, sha string) (added, modified, removed []string) {
	added, modified, removed = []string{}, []string{}, []string{}
	out, err := exec.Command("git", "-C", bare, "diff-tree", "--no-commit-id", "--name-status", "-r", "--root", sha).Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		status, path, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		switch status[:1] {
		case "A":
			added = append(added, path)
		case "D":
			removed = append(removed, path)
		default:
			modified = append(modified, path)
		}
	}
	return
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
