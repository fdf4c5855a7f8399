package forgejotest

import (
	"net/http"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// ServeGit hosts the bare repository at bare at CloneURL(), so that git clones,
// fetches and pushes over HTTP as with Forgejo: any user name with the bot's
// token as password (fetching needs no credentials, like a public repository).
// The fake's branches then follow the repository's refs: after each push it
// updates them and delivers what Forgejo 7 sends (create for a new branch,
// push, delete for a removed one, pull_request_sync "synchronized" for open pull
// requests from a pushed branch). It needs the git CLI and git http-backend.
func (s *Server) ServeGit(bare string) error {
	g, refs, err := fakeforge.NewGitHost(bare, fakeforge.GitOptions{
		Path:        "/" + Owner + "/" + Repo + ".git",
		TempPattern: "forgejotest-git-",
		User:        Bot,
		Authorize:   authorizeGit,
		Pushed:      s.syncRefs,
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.git = g
	for name, sha := range refs {
		s.branches[name] = sha
	}
	return nil
}

// authorizeGit lets a push through with the bot's token as password, and
// anything else without credentials, as Forgejo does a public repository.
func authorizeGit(w http.ResponseWriter, r *http.Request, push bool) bool {
	if _, pass, ok := r.BasicAuth(); push && (!ok || pass != BotToken) {
		w.Header().Set("WWW-Authenticate", `Basic realm="Gitea"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return false
	}
	return true
}

// syncRefs brings the fake's branches in line with the repository's refs
// after a push and queues the webhooks Forgejo would send; it is called
// without s.mu held.
func (s *Server) syncRefs(refs map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range fakeforge.RefChanges(s.branches, refs) {
		if c.Deleted() {
			if c.Branch != DefaultBranch {
				delete(s.branches, c.Branch)
				s.hookDelete(c.Branch, Bot)
			}
			continue
		}
		s.branches[c.Branch] = c.After
		if c.Created() {
			o := hookObject("hook-create.json")
			o["ref"], o["ref_type"], o["sha"] = "refs/heads/"+c.Branch, "branch", c.After
			o["repository"], o["sender"] = s.repoJSON(), s.userJSON(Bot)
			s.enqueue("create", "create", o)
		}
		s.hookPush(c.Branch, c.Before, c.After, Bot)
		for _, is := range s.pullsByState("open") {
			if is.pull.head == c.Branch {
				s.moved(is, c.After)
				s.enqueue("pull_request", "pull_request_sync", s.pullPayload(is, "synchronized", Bot, nil))
			}
		}
	}
}
