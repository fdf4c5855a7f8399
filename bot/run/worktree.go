package run

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/gitcmd"
)

// Repos keeps one cached bare clone per project under {base}/repos and makes,
// per run, the agent's working copy under {base}/worktrees and the bot's own
// repository of that run under {base}/private (docs/design.md, "The trust
// boundary").
//
// The agent's working copy is a full clone of the cache with its objects
// copied, never hard-linked, so the agent may run git in it and rewrite it
// at will: the bot never runs git with that .git again once the agent had
// it. What the agent changed is computed from its files alone, read as data
// through a work tree of the bot's private repository (whose objects borrow
// the cache's, read-only), checked (stage.go), committed by the bot and
// pushed from there to the forge's URL, given on the command line, with a
// credential valid for that forge's origin only.
//
// Every git command runs through internal/gitcmd (hardened: no hooks, no
// fsmonitor, no global configuration, no credential helper); the forge
// credentials travel in the environment of the one command that needs them.
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

// Worktree is one run's working copy: the agent's folder Dir, and the bot's
// private repository of the run.
type Worktree struct {
	Dir    string
	Branch string // the branch checked out
	// Pushable says whether the branch is the issue branch that may be
	// pushed (false for the temporary branch of a read-only phase).
	Pushable bool
	// Excludes are gitignore patterns of files that are never part of the
	// change (the agent CLI's own files).
	Excludes []string
	// Home is a folder of the bot's for the configuration files the
	// agent's CLI gets in its home (home.go); removed with the rest.
	Home  string
	start string // the commit checked out
	// onBranch says start is the head of the issue branch source (it
	// existed), not the base a new branch starts from; Branch is another
	// name for a read-only run.
	onBranch bool
	source   string
	merged   string // the commit merged in before the agent ran, the commit's second parent
	head     string // the bot's commit of the change, once made
	private  string // the bot's repository of this run
	cache    string
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
		if _, err := git(ctx, gitcmd.Cmd{GitDir: dir}, "init", "--bare", "--quiet"); err != nil {
			return "", err
		}
	}
	c, err := remote.cmd(dir)
	if err != nil {
		return "", err
	}
	if _, err := git(ctx, c, "fetch", "--prune", "--quiet", "--no-tags", remote.URL, "+refs/heads/*:refs/heads/*"); err != nil {
		return "", fmt.Errorf("fetch %s: %w", p.FullName(), err)
	}
	return dir, nil
}

// BranchExists tells whether the cache (as of the last Fetch) has branch.
func (r *Repos) BranchExists(ctx context.Context, p forges.Project, branch string) bool {
	_, err := git(ctx, gitcmd.Cmd{GitDir: r.cacheDir(p)}, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// Checkout makes the working copy of a run at {base}/worktrees/{runID}:
// branch when it exists (else a new branch of that name from base), or, with
// push false, a temporary branch alfred/run-{runID} that is never pushed.
// Call Fetch first.
func (r *Repos) Checkout(ctx context.Context, p forges.Project, remote Remote, runID, branch, base string, push bool) (*Worktree, error) {
	dir := filepath.Join(r.Base, "worktrees", runID)
	private := filepath.Join(r.Base, "private", runID+".git")
	home := filepath.Join(r.Base, "private", runID+".home")
	for _, d := range []string{dir, private, home} {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("clear old working copy: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(d), 0o700); err != nil {
			return nil, fmt.Errorf("create working copies folder: %w", err)
		}
	}
	cache := r.cacheDir(p)
	start, onBranch := base, r.BranchExists(ctx, p, branch)
	if onBranch {
		start = branch
	}
	sha, err := git(ctx, gitcmd.Cmd{GitDir: cache}, "rev-parse", "--verify", "--quiet", "refs/heads/"+start+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("find %s in the cache of %s: %w", start, p.FullName(), err)
	}
	w := &Worktree{Dir: dir, Branch: branch, Pushable: push, start: strings.TrimSpace(sha), onBranch: onBranch, source: branch, private: private, Home: home, cache: cache, remote: remote, repos: r}
	if !push {
		w.Branch = "alfred/run-" + runID
	}
	if err := w.agentCopy(ctx, start); err != nil {
		w.Remove()
		return nil, fmt.Errorf("check out %s from %s: %w", w.Branch, start, err)
	}
	return w, nil
}

// agentCopy makes the agent's clone: objects copied (--no-hardlinks), so
// nothing the agent writes reaches the cache; origin names the forge,
// without credentials. It is the last time the bot runs git in it.
func (w *Worktree) agentCopy(ctx context.Context, start string) error {
	if _, err := git(ctx, gitcmd.Cmd{}, "clone", "--no-hardlinks", "--quiet", "--no-checkout", w.cache, w.Dir); err != nil {
		return err
	}
	in := gitcmd.Cmd{Dir: w.Dir}
	if _, err := git(ctx, in, "checkout", "--quiet", "-B", w.Branch, w.start); err != nil {
		return err
	}
	_, err := git(ctx, in, "remote", "set-url", "origin", gitcmd.Redact(w.remote.URL))
	return err
}

// Head is the commit the run's branch is at: the bot's commit of the
// change once made, else the commit checked out.
func (w *Worktree) Head(context.Context) (string, error) {
	if w.head != "" {
		return w.head, nil
	}
	return w.start, nil
}

// Start is the commit checked out.
func (w *Worktree) Start() string { return w.start }

// CommitAll stages what the agent left (Stage), and commits it as the bot
// (Commit) when nothing was refused. It returns false when there was
// nothing to commit; a change with refused files is an *ErrRefused.
func (w *Worktree) CommitAll(ctx context.Context, message string) (bool, error) {
	ch, err := w.Stage(ctx)
	if err != nil {
		return false, err
	}
	if len(ch.Refused) > 0 {
		return false, &ErrRefused{Change: ch}
	}
	return w.Commit(ctx, ch, message)
}

// Commit makes the bot's commit of ch (parents: the commit checked out, and
// the merged target of a conflict resolution). It returns false when ch
// changes nothing and nothing was merged.
func (w *Worktree) Commit(ctx context.Context, ch *Change, message string) (bool, error) {
	if ch.Empty() && w.merged == "" {
		return false, nil
	}
	args := []string{"commit-tree", ch.Tree, "-p", w.start}
	if w.merged != "" {
		args = append(args, "-p", w.merged)
	}
	c := w.privateCmd()
	c.Stdin = strings.NewReader(message + "\n")
	c.Env = []string{"GIT_AUTHOR_NAME=" + w.repos.Name, "GIT_AUTHOR_EMAIL=" + w.repos.Email,
		"GIT_COMMITTER_NAME=" + w.repos.Name, "GIT_COMMITTER_EMAIL=" + w.repos.Email}
	out, err := git(ctx, c, args...)
	if err != nil {
		return false, fmt.Errorf("commit the change: %w", err)
	}
	w.head = strings.TrimSpace(out)
	return true, nil
}

// Ahead tells whether the bot made a commit of the change.
func (w *Worktree) Ahead(context.Context) (bool, error) { return w.head != "", nil }

// Merge merges the project's target branch (as of the last Fetch) into the
// working copy without committing, before the agent runs, and lists the
// files left with conflicts. None: a clean merge. With conflicts, the
// bot's commit of the resolution gets the target as its second parent.
func (w *Worktree) Merge(ctx context.Context, target string) ([]string, error) {
	sha, err := git(ctx, gitcmd.Cmd{GitDir: w.cache}, "rev-parse", "--verify", "--quiet", "refs/heads/"+target+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", target, err)
	}
	sha = strings.TrimSpace(sha)
	in := gitcmd.Cmd{Dir: w.Dir, Env: []string{"GIT_AUTHOR_NAME=" + w.repos.Name, "GIT_AUTHOR_EMAIL=" + w.repos.Email,
		"GIT_COMMITTER_NAME=" + w.repos.Name, "GIT_COMMITTER_EMAIL=" + w.repos.Email}}
	_, mergeErr := git(ctx, in, "merge", "--no-commit", "--no-ff", sha)
	out, err := git(ctx, gitcmd.Cmd{Dir: w.Dir}, "diff", "--name-only", "--diff-filter=U")
	if err != nil {
		return nil, err
	}
	files := strings.Fields(out)
	if mergeErr != nil && len(files) == 0 {
		return nil, fmt.Errorf("merge %s: %w", target, mergeErr)
	}
	if len(files) > 0 {
		w.merged = sha
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
	out, err := git(ctx, gitcmd.Cmd{GitDir: r.cacheDir(p)}, "merge-tree", "-z", "--write-tree", "--name-only", "--no-messages", "refs/heads/"+target, head)
	var gerr *gitcmd.Error
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &gerr) && gerr.ExitCode() == 1: // conflicts: the tree, then the files
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

// Push sends the bot's commit to the branch on the forge, from the bot's
// private repository to the URL the forge gave. A read-only run's worktree
// refuses, and so does one with no commit.
func (w *Worktree) Push(ctx context.Context) error {
	if !w.Pushable {
		return errors.New("push: a read-only run's branch is never pushed")
	}
	if w.head == "" {
		return errors.New("push: no commit of the change was made")
	}
	c, err := w.remote.cmd(w.private)
	if err != nil {
		return err
	}
	if _, err := git(ctx, c, "push", "--quiet", "--no-verify", w.remote.URL, w.head+":refs/heads/"+w.Branch); err != nil {
		return fmt.Errorf("push %s: %w", w.Branch, err)
	}
	return nil
}

// Remove deletes the working copy and the run's private repository.
func (w *Worktree) Remove() error {
	err := errors.Join(os.RemoveAll(w.Dir), os.RemoveAll(w.private), os.RemoveAll(w.Home))
	if err != nil {
		return fmt.Errorf("remove working copy: %w", err)
	}
	return nil
}

// cmd is a command on gitDir that talks to the remote: its transport
// allowed, its credential scoped to its origin, and both hidden from errors.
func (rm Remote) cmd(gitDir string) (gitcmd.Cmd, error) {
	c := gitcmd.Cmd{GitDir: gitDir, Protocols: []string{gitcmd.Protocol(rm.URL)}}
	if rm.Password == "" {
		return c, nil
	}
	cred, err := gitcmd.Credential(rm.URL, rm.Username, rm.Password)
	if err != nil {
		return c, err
	}
	c.Config = append(cred, "http.lowSpeedLimit=1000", "http.lowSpeedTime=60")
	c.Secrets = []string{rm.Password, gitcmd.Basic(rm.Username, rm.Password)}
	return c, nil
}

// git runs one hardened git command (internal/gitcmd).
func git(ctx context.Context, c gitcmd.Cmd, args ...string) (string, error) {
	return gitcmd.Run(ctx, c, args...)
}
