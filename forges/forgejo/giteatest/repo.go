package giteatest

import (
	"context"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
)

// DefaultBranch is the default branch of the repositories NewRepo makes.
const DefaultBranch = "main"

// Repo is a repository of the instance.
type Repo struct {
	in    *Instance
	Owner string
	Name  string
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// NewRepo creates a public repository of owner, named after the test with a
// unique suffix, with an initial commit (a README) on DefaultBranch. It is
// deleted when the test ends, unless the test failed: it is then kept, and
// its URL logged, for a look.
func (in *Instance) NewRepo(t testing.TB, owner string) *Repo {
	t.Helper()
	in.EnsureUser(t, owner)
	base := t.Name()
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	base = strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if len(base) > 60 {
		base = base[:60]
	}
	r := &Repo{in: in, Owner: owner, Name: base + "-" + randomHex(t, 4)}
	_, _, err := in.Client(t, owner).CreateRepo(gitea.CreateRepoOption{
		Name: r.Name, AutoInit: true, Readme: "Default", DefaultBranch: DefaultBranch,
	})
	check(t, err, "create repository %s", r.FullName())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept repository %s for a look", r.URL())
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		c, err := in.client(ctx, "")
		if err == nil {
			_, err = c.DeleteRepo(r.Owner, r.Name)
		}
		if err != nil {
			t.Errorf("delete repository %s: %v", r.FullName(), err)
		}
	})
	return r
}

// NewBotRepo is NewRepo of the person (User) with the bot an admin
// collaborator: the forges let only site and repository admins read
// another user's permission, which the bot asks before obeying anyone.
func (in *Instance) NewBotRepo(t testing.TB) *Repo {
	t.Helper()
	r := in.NewRepo(t, in.User.Login)
	r.SetPermission(t, in.Bot.Login, forges.PermissionAdmin)
	return r
}

// SetPrivate makes the repository private (or public again).
func (r *Repo) SetPrivate(t testing.TB, private bool) {
	t.Helper()
	_, _, err := r.in.Client(t, "").EditRepo(r.Owner, r.Name, gitea.EditRepoOption{Private: &private})
	check(t, err, "make %s private=%v", r.FullName(), private)
}

// FullName is owner/name.
func (r *Repo) FullName() string { return r.Owner + "/" + r.Name }

// URL is the repository's web page.
func (r *Repo) URL() string { return r.in.URL + "/" + r.FullName() }

// CloneURL is the repository's clone URL over HTTP.
func (r *Repo) CloneURL() string { return r.URL() + ".git" }

// SetPermission gives login (created if missing) permission p on the
// repository as a collaborator; PermissionNone removes the collaborator
// (anyone may still read a public repository).
func (r *Repo) SetPermission(t testing.TB, login string, p forges.Permission) {
	t.Helper()
	r.in.EnsureUser(t, login)
	c := r.in.Client(t, "")
	if p == forges.PermissionNone {
		_, err := c.DeleteCollaborator(r.Owner, r.Name, login)
		check(t, err, "remove collaborator %s of %s", login, r.FullName())
		return
	}
	mode := map[forges.Permission]gitea.AccessMode{
		forges.PermissionRead: gitea.AccessModeRead, forges.PermissionWrite: gitea.AccessModeWrite, forges.PermissionAdmin: gitea.AccessModeAdmin,
	}[p]
	if mode == "" {
		t.Fatalf("set permission of %s on %s: unknown permission %v", login, r.FullName(), p)
	}
	_, err := c.AddCollaborator(r.Owner, r.Name, login, gitea.AddCollaboratorOption{Permission: &mode})
	check(t, err, "add collaborator %s (%s) to %s", login, mode, r.FullName())
}

// CreateBranch creates branch name at the head of branch from.
func (r *Repo) CreateBranch(t testing.TB, name, from string) {
	t.Helper()
	_, _, err := r.in.Client(t, "").CreateBranch(r.Owner, r.Name, gitea.CreateBranchOption{BranchName: name, OldBranchName: from})
	check(t, err, "create branch %s from %s on %s", name, from, r.FullName())
}

// DeleteBranch deletes branch, as the admin.
func (r *Repo) DeleteBranch(t testing.TB, branch string) {
	t.Helper()
	_, _, err := r.in.Client(t, "").DeleteRepoBranch(r.Owner, r.Name, branch)
	check(t, err, "delete branch %s of %s", branch, r.FullName())
}

// BranchExists tells whether branch exists.
func (r *Repo) BranchExists(t testing.TB, branch string) bool {
	t.Helper()
	_, resp, err := r.in.Client(t, "").GetRepoBranch(r.Owner, r.Name, branch)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return false
	}
	check(t, err, "read branch %s of %s", branch, r.FullName())
	return true
}

// Commit writes content to path on branch as author, in a commit of its own
// (Gitea's contents API: a real commit, pushed as by git), and returns the
// commit's SHA. A missing branch is created from the head of from
// (DefaultBranch when empty).
func (r *Repo) Commit(t testing.TB, author, branch, from, path, content string) string {
	t.Helper()
	if from == "" {
		from = DefaultBranch
	}
	r.in.EnsureUser(t, author)
	c := r.in.Client(t, author)
	opts := gitea.FileOptions{Message: "Update " + path, BranchName: branch}
	ref := branch
	if !r.BranchExists(t, branch) {
		opts.BranchName, opts.NewBranchName, ref = from, branch, from
	}
	data := base64.StdEncoding.EncodeToString([]byte(content))
	old, resp, err := c.GetContents(r.Owner, r.Name, ref, path)
	var res *gitea.FileResponse
	switch {
	case err == nil:
		res, _, err = c.UpdateFile(r.Owner, r.Name, path, gitea.UpdateFileOptions{FileOptions: opts, SHA: old.SHA, Content: data})
	case resp != nil && resp.StatusCode == http.StatusNotFound:
		res, _, err = c.CreateFile(r.Owner, r.Name, path, gitea.CreateFileOptions{FileOptions: opts, Content: data})
	}
	check(t, err, "commit %s on %s of %s as %s", path, branch, r.FullName(), author)
	if res.Commit == nil || res.Commit.SHA == "" {
		t.Fatalf("commit %s on %s of %s: Gitea answered no commit", path, branch, r.FullName())
	}
	return res.Commit.SHA
}
