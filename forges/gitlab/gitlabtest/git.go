package gitlabtest

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

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
	var g *fakeforge.GitHost
	g, refs, err := fakeforge.NewGitHost(bare, fakeforge.GitOptions{
		Path:        "/" + f.path + ".git",
		TempPattern: "gitlabtest-git-",
		User:        f.bot,
		Authorize:   f.authorizeGit,
		Pushed:      func(refs map[string]string) { f.syncRefs(g.Bare(), refs) },
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.git != nil {
		f.git.Remove()
	}
	f.git = g
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
		f.git.Remove()
	}
}

// gitHostFor is the git host when r is a request for the repository.
func (f *Server) gitHostFor(r *http.Request) *fakeforge.GitHost {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.git == nil || !f.git.Serves(r) {
		return nil
	}
	return f.git
}

// authorizeGit lets r through with the bot's token as password and the user
// "oauth2" or the bot's login, and answers anything else 401 as GitLab does.
func (f *Server) authorizeGit(w http.ResponseWriter, r *http.Request, _ bool) bool {
	user, pass, ok := r.BasicAuth()
	if !ok || pass != f.token || user != "oauth2" && user != f.bot {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitLab"`)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, "HTTP Basic: Access denied. If a password was provided for Git authentication, the password was incorrect or you're required to use a token instead of a password.\n")
		return false
	}
	return true
}

// syncRefs brings the fake's branches in line with refs, those of the
// repository at bare after a push by the bot, and queues the webhooks GitLab
// sends; it is called without mu held.
func (f *Server) syncRefs(bare string, refs map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range fakeforge.RefChanges(f.branches, refs) {
		if c.Deleted() {
			delete(f.branches, c.Branch)
			f.pushHook(c.Branch, c.Before, c.After, f.bot, nil)
			continue
		}
		f.branches[c.Branch] = c.After
		f.pushHook(c.Branch, c.Before, c.After, f.bot, f.pushCommits(bare, c.Branch, c.Before, c.After, refs))
		for _, mr := range f.mrs {
			if mr.State == "opened" && mr.Source == c.Branch && mr.SHA != c.After {
				prev := mr.UpdatedAt
				old := mr.SHA
				mr.SHA, mr.UpdatedAt = c.After, f.tick()
				f.mrHook(mr, "update", f.bot, old, nil, prev)
			}
		}
	}
}

// pushCommits are the commits a push of branch from before to after brought,
// newest first and at most 20, as a Push Hook lists them; for a new branch,
// those no other branch has.
func (f *Server) pushCommits(bare, branch, before, after string, refs map[string]string) []any {
	args := []string{"-C", bare, "log", "-n", "20", "--format=%H%x00%an%x00%ae%x00%aI%x00%s%x00%B%x1e", after}
	if before != fakeforge.ZeroSHA {
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
