package fakeforge

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// ZeroSHA is the commit id of a branch that does not exist (yet, or any
// more), as pushes and push webhooks write it.
const ZeroSHA = "0000000000000000000000000000000000000000"

// GitOptions say how a GitHost serves its repository.
type GitOptions struct {
	// Path is the repository's URL path, "/alice/demo.git": requests under
	// Path+"/" are git's.
	Path string
	// TempPattern names the temporary folder the host makes (os.MkdirTemp).
	TempPattern string
	// User is the REMOTE_USER git http-backend is run as.
	User string
	// Authorize decides whether r may be served; push says whether r is part
	// of a push (git-receive-pack). When it returns false it has written the
	// answer (a 401 with the forge's challenge) and r is not served.
	Authorize func(w http.ResponseWriter, r *http.Request, push bool) bool
	// Pushed, when set, is called after a push was served with the
	// repository's branches as they are then (name -> commit). It is not
	// called when they cannot be read.
	Pushed func(refs map[string]string)
}

// GitHost serves a bare repository over smart HTTP with the real git (git
// http-backend) at a URL path, checking credentials with its Authorize and
// reading the branches back after each push for its Pushed.
type GitHost struct {
	opt     GitOptions
	bare    string // the bare repository, absolute
	root    string // GIT_PROJECT_ROOT: a directory holding Path -> bare
	backend string
}

// NewGitHost hosts the bare repository at bare as opt says, and returns it
// with the repository's branches (name -> commit). It needs the git CLI and
// git http-backend; Remove removes the temporary folder it makes.
func NewGitHost(bare string, opt GitOptions) (*GitHost, map[string]string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("serve git: the git CLI is needed: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, nil, fmt.Errorf("serve git: git http-backend is needed: %w", err)
	}
	abs, err := filepath.Abs(bare)
	if err != nil {
		return nil, nil, fmt.Errorf("serve git: %w", err)
	}
	refs, err := ReadRefs(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("serve git: %w", err)
	}
	root, err := os.MkdirTemp("", opt.TempPattern)
	if err != nil {
		return nil, nil, fmt.Errorf("serve git: %w", err)
	}
	link := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(opt.Path, "/")))
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		os.RemoveAll(root)
		return nil, nil, fmt.Errorf("serve git: %w", err)
	}
	if err := os.Symlink(abs, link); err != nil {
		os.RemoveAll(root)
		return nil, nil, fmt.Errorf("serve git: %w", err)
	}
	return &GitHost{opt: opt, bare: abs, root: root, backend: backend}, refs, nil
}

// Bare is the bare repository's absolute path.
func (g *GitHost) Bare() string { return g.bare }

// Serves says whether r is a request for the repository.
func (g *GitHost) Serves(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, g.opt.Path+"/")
}

// Remove removes the host's temporary folder.
func (g *GitHost) Remove() { os.RemoveAll(g.root) }

// ServeHTTP answers a git smart HTTP request, once Authorize lets it, and
// after a push hands the branches to Pushed.
func (g *GitHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	push := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
	if g.opt.Authorize != nil && !g.opt.Authorize(w, r, push) {
		return
	}
	h := &cgi.Handler{
		Path: g.backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + g.opt.User},
	}
	h.ServeHTTP(w, r)
	if push && r.Method == http.MethodPost && g.opt.Pushed != nil {
		refs, err := ReadRefs(g.bare)
		if err != nil {
			return
		}
		g.opt.Pushed(refs)
	}
}

// ReadRefs are the branches of the repository at bare: name -> commit.
func ReadRefs(bare string) (map[string]string, error) {
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

// RefChange is a branch that differs between two sets of refs: Before is
// ZeroSHA for a branch created, After ZeroSHA for one deleted.
type RefChange struct {
	Branch, Before, After string
}

// Created says whether the change creates the branch.
func (c RefChange) Created() bool { return c.Before == ZeroSHA }

// Deleted says whether the change deletes the branch.
func (c RefChange) Deleted() bool { return c.After == ZeroSHA }

// RefChanges are how the branches after differ from those of before: first
// the branches created or moved, then those deleted, each by name.
func RefChanges(before, after map[string]string) []RefChange {
	var moved, deleted []RefChange
	for name, sha := range after {
		old, ok := before[name]
		switch {
		case !ok:
			moved = append(moved, RefChange{name, ZeroSHA, sha})
		case old != sha:
			moved = append(moved, RefChange{name, old, sha})
		}
	}
	for name, sha := range before {
		if _, ok := after[name]; !ok {
			deleted = append(deleted, RefChange{name, sha, ZeroSHA})
		}
	}
	byName := func(a, b RefChange) int { return strings.Compare(a.Branch, b.Branch) }
	slices.SortFunc(moved, byName)
	slices.SortFunc(deleted, byName)
	return append(moved, deleted...)
}
