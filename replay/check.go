package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/gitcmd"
	"github.com/alchemic-studio/alfred/sandbox"
)

// CheckResult is how a case's check ended on the pull request's branch.
type CheckResult struct {
	Commit   string          `json:"commit"`
	Outcome  sandbox.Outcome `json:"outcome"`
	ExitCode int             `json:"exit_code"`
	// Output is the end of the check's stdout and stderr (at most
	// maxOutput bytes each): what a person reads to see why it failed.
	Output   string        `json:"output,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Passed tells whether the check exited 0 by itself.
func (c CheckResult) Passed() bool { return c.Outcome == sandbox.OutcomeExited && c.ExitCode == 0 }

// maxOutput bounds each stream of a check's output kept in the report.
const maxOutput = 2048

// workspace is where the clone is mounted in the check's container.
const workspace = "/workspace"

// check clones branch of p with the bot's hardened git and credentials (a
// fresh clone: never the agent's .git) and runs the case's check on it in a
// container of the check image, with no network.
func check(ctx context.Context, cfg Config, c Case, p forges.Project, branch string) (CheckResult, error) {
	dir, err := os.MkdirTemp(cfg.WorkDir, "check-")
	if err != nil {
		return CheckResult{}, fmt.Errorf("check: %w", err)
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	commit, err := clone(ctx, cfg.Git, p, branch, ws)
	if err != nil {
		return CheckResult{}, err
	}
	// The container's user must write its clone (a build may), whatever
	// uid made it.
	if err := openUp(ws); err != nil {
		return CheckResult{}, err
	}
	spec := cfg.CheckSpec
	spec.Argv = c.Check
	spec.Workdir = workspace
	spec.Worktree = &sandbox.Mount{Host: ws, Container: workspace}
	spec.Network = sandbox.NetworkNone
	spec.Timeout = time.Duration(c.CheckLimit)
	spec.Labels = map[string]string{"alfred.replay.case": c.Name}
	r, err := cfg.Runner.Run(ctx, spec)
	if r == nil {
		return CheckResult{Commit: commit}, fmt.Errorf("check of %s on %s: %w", c.Name, p.FullName(), err)
	}
	return CheckResult{Commit: commit, Outcome: r.Outcome, ExitCode: r.ExitCode, Duration: r.Duration,
		Output: tail(r.Stdout) + tail(r.Stderr)}, nil
}

// clone makes a fresh clone of branch of p in dir and returns its commit.
func clone(ctx context.Context, g Git, p forges.Project, branch, dir string) (string, error) {
	url, err := g.CloneURL(ctx, p)
	if err != nil {
		return "", fmt.Errorf("check: the clone URL of %s: %w", p.FullName(), err)
	}
	user, pw, err := g.GitCredentials(ctx, p)
	if err != nil {
		return "", fmt.Errorf("check: the git credentials of %s: %w", p.FullName(), err)
	}
	auth, err := gitcmd.Credential(url, user, pw)
	if err != nil {
		return "", fmt.Errorf("check: %w", err)
	}
	cmd := gitcmd.Cmd{Config: auth, Protocols: []string{gitcmd.Protocol(url)}, Secrets: []string{pw, gitcmd.Basic(user, pw)}}
	if _, err := gitcmd.Run(ctx, cmd, "clone", "--quiet", "--no-hardlinks", "--depth", "1", "--single-branch", "--branch", branch, url, dir); err != nil {
		return "", fmt.Errorf("check: clone %s of %s: %w", branch, p.FullName(), err)
	}
	commit, err := gitcmd.Run(ctx, gitcmd.Cmd{GitDir: filepath.Join(dir, ".git")}, "rev-parse", "HEAD")
	if err != nil {
		return "", fmt.Errorf("check: %w", err)
	}
	return trimNL(commit), nil
}

// openUp lets every user read and write the clone: the check's container
// runs as the agent's uid, not the replay's.
func openUp(root string) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		mode := fi.Mode().Perm() | 0o666
		if d.IsDir() || mode&0o111 != 0 {
			mode |= 0o111
		}
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		return nil
	})
}

// tail is the end of b, at most maxOutput bytes.
func tail(b []byte) string {
	if len(b) > maxOutput {
		b = b[len(b)-maxOutput:]
	}
	return string(b)
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
