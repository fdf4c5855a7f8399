package bot

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/alchemic-studio/alfred/forges"
)

// Repos keeps one cached bare clone per project under {base}/repos and makes a
// self-contained working copy per run under {base}/worktrees. Working copies
// are local clones of the cache (objects hard-linked, so they are cheap) rather
// than `git worktree`s: their .git is complete, so the agent can run git
// inside the container where the cache is not mounted.
//
// Every git command gets an argv, never a shell, and the forge credentials
// travel in the environment of the one command that needs them
// (GIT_CONFIG_*), never in a URL, a file or a log.
type Repos struct {
	Base string
	// Identity is the author and committer of the bot's commits.
	Name, Email string

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// Remote says where a project lives and how to authenticate to it.
type Remote struct {
	URL      string
	Username string
	Password string // a token; secret
}

// Worktree is one run's working copy.
type Worktree struct {
	Dir    string
	Branch string // the branch checked out
	// Pushable says whether the branch is the issue branch that may be
	// pushed (false for the temporary branch of a read-only phase).
	Pushable bool
	start    string // the commit checked out
	remote   Remote
	repos    *Repos
}

func (r *Repos) projectLock(key string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locks == nil {
		r.locks = map[string]*sync.Mutex{}
	}
	if r.locks[key] == nil {
		r.locks[key] = &sync.Mutex{}
	}
	return r.locks[key]
}

func (r *Repos) cacheDir(p forges.Project) string {
	return filepath.Join(r.Base, "repos", url.PathEscape(p.Forge), url.PathEscape(p.Owner), url.PathEscape(p.Name)+".git")
}

// Fetch brings the project's cache up to date, cloning it the first time.
func (r *Repos) Fetch(ctx context.Context, p forges.Project, remote Remote) (string, error) {
	lock := r.projectLock(p.Forge + "/" + p.FullName())
	lock.Lock()
	defer lock.Unlock()
	dir := r.cacheDir(p)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("create cache of %s: %w", p.FullName(), err)
		}
		if _, err := git(ctx, dir, nil, "init", "--bare", "--quiet"); err != nil {
			return "", err
		}
	}
	if _, err := git(ctx, dir, remote.env(), "fetch", "--prune", "--quiet", "--no-tags", remote.URL,
		"+refs/heads/*:refs/heads/*"); err != nil {
		return "", fmt.Errorf("fetch %s: %w", p.FullName(), err)
	}
	return dir, nil
}

// BranchExists tells whether the cache (as of the last Fetch) has branch.
func (r *Repos) BranchExists(ctx context.Context, p forges.Project, branch string) bool {
	_, err := git(ctx, r.cacheDir(p), nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// Checkout makes the working copy of a run at {base}/worktrees/{runID}:
// branch when it exists (else a new branch of that name from base), or, with
// push false, a temporary branch alfred/run-{runID} that is never pushed.
// Call Fetch first.
func (r *Repos) Checkout(ctx context.Context, p forges.Project, remote Remote, runID, branch, base string, push bool) (*Worktree, error) {
	dir := filepath.Join(r.Base, "worktrees", runID)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clear old working copy: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("create worktrees folder: %w", err)
	}
	cache := r.cacheDir(p)
	if _, err := git(ctx, "", nil, "clone", "--local", "--quiet", "--no-checkout", cache, dir); err != nil {
		return nil, fmt.Errorf("clone cache of %s: %w", p.FullName(), err)
	}
	start := base
	if r.BranchExists(ctx, p, branch) {
		start = branch
	}
	local := branch
	if !push {
		local = "alfred/run-" + runID
	}
	if _, err := git(ctx, dir, nil, "checkout", "--quiet", "-B", local, "origin/"+start); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("check out %s from %s: %w", local, start, err)
	}
	// The working copy pushes to the forge, not to the cache.
	_, err := git(ctx, dir, nil, "remote", "set-url", "origin", remote.URL)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	w := &Worktree{Dir: dir, Branch: local, Pushable: push, remote: remote, repos: r}
	if w.start, err = w.Head(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return w, nil
}

// Head is the commit checked out.
func (w *Worktree) Head(ctx context.Context) (string, error) {
	out, err := git(ctx, w.Dir, nil, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// CommitAll commits every change the agent left (tracked or not, .gitignore
// respected) as the bot. It returns false when there was nothing to commit.
func (w *Worktree) CommitAll(ctx context.Context, message string) (bool, error) {
	if _, err := git(ctx, w.Dir, nil, "add", "--all"); err != nil {
		return false, err
	}
	if _, err := git(ctx, w.Dir, nil, "diff", "--cached", "--quiet"); err == nil {
		return false, nil
	}
	identity := []string{"user.name=" + w.repos.Name, "user.email=" + w.repos.Email}
	if _, err := git(ctx, w.Dir, identity, "commit", "--quiet", "--no-verify", "-m", message); err != nil {
		return false, err
	}
	return true, nil
}

// Ahead tells whether the working copy has commits beyond the one it
// started from (the agent's own commits or CommitAll's).
func (w *Worktree) Ahead(ctx context.Context) (bool, error) {
	out, err := git(ctx, w.Dir, nil, "rev-list", "--count", w.start+"..HEAD")
	if err != nil {
		return false, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n > 0, nil
}

// Merge merges the forge's target branch into the working copy without
// committing, and lists the files left with conflicts (none: a clean merge,
// committed by CommitAll like any other change).
func (w *Worktree) Merge(ctx context.Context, target string) ([]string, error) {
	if _, err := git(ctx, w.Dir, w.remote.env(), "fetch", "--quiet", "origin", "refs/heads/"+target); err != nil {
		// The cache already holds the target as origin/<target>; a failed
		// fetch of the forge is fine when it does.
		if _, err2 := git(ctx, w.Dir, nil, "rev-parse", "--verify", "--quiet", "origin/"+target); err2 != nil {
			return nil, fmt.Errorf("fetch %s: %w", target, err)
		}
	}
	identity := []string{"user.name=" + w.repos.Name, "user.email=" + w.repos.Email}
	_, mergeErr := git(ctx, w.Dir, identity, "merge", "--no-commit", "--no-ff", "origin/"+target)
	out, err := git(ctx, w.Dir, nil, "diff", "--name-only", "--diff-filter=U")
	if err != nil {
		return nil, err
	}
	files := strings.Fields(out)
	if mergeErr != nil && len(files) == 0 {
		return nil, fmt.Errorf("merge %s: %w", target, mergeErr)
	}
	return files, nil
}

// Conflicts lists the files that merging target into head would leave in
// conflict, computed on the project's cache by git merge-tree, without a
// working copy; none means they merge cleanly. It is the bot's own answer to
// "is there a conflict", for forges whose mergeable flag also reads false
// while they are still checking (Forgejo and Gitea after every push). Call
// Fetch first.
func (r *Repos) Conflicts(ctx context.Context, p forges.Project, target, head string) ([]string, error) {
	out, err := git(ctx, r.cacheDir(p), nil, "merge-tree", "-z", "--write-tree", "--name-only", "--no-messages", "refs/heads/"+target, head)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1: // conflicts: the tree, then the files
		files := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
		return files[1:], nil
	}
	return nil, fmt.Errorf("merge %s into %s: %w", target, head, err)
}

// Renew replaces the credentials the working copy pushes with: a GitHub
// App's installation token lasts an hour, and a run may outlive the one it
// was checked out with.
func (w *Worktree) Renew(username, password string) {
	w.remote.Username, w.remote.Password = username, password
}

// Push sends the branch to the forge. A read-only run's worktree refuses.
func (w *Worktree) Push(ctx context.Context) error {
	if !w.Pushable {
		return errors.New("push: a read-only run's branch is never pushed")
	}
	if _, err := git(ctx, w.Dir, w.remote.env(), "push", "--quiet", "origin", "HEAD:refs/heads/"+w.Branch); err != nil {
		return fmt.Errorf("push %s: %w", w.Branch, err)
	}
	return nil
}

// Remove deletes the working copy.
func (w *Worktree) Remove() error {
	if err := os.RemoveAll(w.Dir); err != nil {
		return fmt.Errorf("remove working copy: %w", err)
	}
	return nil
}

// env carries the credentials as git configuration of one command, so they
// appear in no argv, URL or file.
func (rm Remote) env() []string {
	if rm.Password == "" {
		return nil
	}
	basic := base64.StdEncoding.EncodeToString([]byte(rm.Username + ":" + rm.Password))
	return []string{"http.extraHeader=Authorization: Basic " + basic}
}

// git runs one git command in dir with a minimal environment; config holds
// extra "key=value" git settings, passed as GIT_CONFIG_* variables. Working
// copies may belong to the sandbox's uid, so safe.directory is always open.
// Its error carries git's stderr, which never holds the credentials (they
// are in the environment, and git does not print headers).
func git(ctx context.Context, dir string, config []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	config = append([]string{"safe.directory=*"}, config...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.TempDir(),
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"LC_ALL=C",
		"GIT_CONFIG_COUNT=" + strconv.Itoa(len(config)),
	}
	for i, kv := range config {
		k, v, _ := strings.Cut(kv, "=")
		n := strconv.Itoa(i)
		cmd.Env = append(cmd.Env, "GIT_CONFIG_KEY_"+n+"="+k, "GIT_CONFIG_VALUE_"+n+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
