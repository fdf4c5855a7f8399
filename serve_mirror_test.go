package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
)

// gitOut runs git and fails the test on an error.
func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func branchOf(dir string) string {
	out, _ := exec.Command("git", "--git-dir", dir, "for-each-ref", "--format=%(objectname)", "refs/heads/alfred/state").Output()
	return strings.TrimSpace(string(out))
}

// TestServeMirrorsTheState runs alfred serve with ALFRED_STATE_REMOTE on the
// Forgejo fake's git (the bot's token, taken from the forge on the same
// host): the branch is pushed after the writes, a fresh state folder is
// restored from the remote at start, and a folder the remote is ahead of
// is refused at start with how to resolve it.
func TestServeMirrorsTheState(t *testing.T) {
	fj := forgejotest.NewServer(t)
	remote := filepath.Join(t.TempDir(), "alfred-state.git")
	gitOut(t, "init", "--quiet", "--bare", remote)
	if err := fj.ServeGit(remote); err != nil {
		t.Fatal(err)
	}
	testMirror(t, mirrorForge{url: fj.URL(), token: forgejotest.BotToken, remote: fj.CloneURL(), head: func() string { return branchOf(remote) }})
}

// TestServeMirrorsTheStateRealForges: the same on the real Gitea and the
// real Forgejo, the state remote a private repository of the person where
// the bot is a collaborator; the remote's branch is read with git over
// HTTP, as the bot's token.
func TestServeMirrorsTheStateRealForges(t *testing.T) {
	giteatest.Each(t, func(t *testing.T, in *giteatest.Instance) {
		t.Parallel()
		repo := in.NewRepo(t, in.User.Login)
		repo.SetPrivate(t, true)
		repo.SetPermission(t, in.Bot.Login, forges.PermissionAdmin)
		head := func() string {
			out, err := exec.Command("git", "-c", "http.extraHeader=Authorization: token "+in.Bot.Token,
				"ls-remote", repo.CloneURL(), "refs/heads/alfred/state").Output()
			if err != nil {
				return "unreadable: " + err.Error()
			}
			sha, _, _ := strings.Cut(string(out), "\t")
			return strings.TrimSpace(sha)
		}
		testMirror(t, mirrorForge{url: in.URL, token: in.Bot.Token, remote: repo.CloneURL(), head: head})
	})
}

// mirrorForge is the forge of a mirror test and its state remote.
type mirrorForge struct {
	url, token, remote string
	head               func() string // the remote's alfred/state commit ("" when missing)
}

func testMirror(t *testing.T, f mirrorForge) {
	bin := buildBinary(t)
	const secret = "s3cret-hooks"
	env := func(stateDir string) map[string]string {
		data := t.TempDir()
		return map[string]string{"ALFRED_STATE_DIR": stateDir, "ALFRED_DATA_DIR": data, "ALFRED_STATE_REMOTE": f.remote,
			"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": f.url, "ALFRED_FORGE_TOKEN": f.token,
			"ALFRED_WEBHOOK_SECRETS": secret, "ALFRED_RUNNER": "host", "ALFRED_POLL_INTERVAL": "1h"}
	}
	dirA := filepath.Join(t.TempDir(), "state.git")
	a := serveAlfred(t, bin, env(dirA))
	h := newHooks(t, a, secret)
	h.paced("a", 20, 100, nil)
	waitUntil(t, 30*time.Second, "the writes recorded and pushed", func() bool {
		// recorded reads the state journal too: the branch has them once folded.
		return len(recorded(t, dirA)) == 20 && f.head() != "" && f.head() == branchOf(dirA)
	})
	waitUntil(t, 10*time.Second, "/readyz to say the mirror is up to date", func() bool {
		code, body := a.get("/readyz")
		return code == 200 && strings.Contains(body, "state mirror up to date")
	})
	if _, m := a.get("/metrics"); !strings.Contains(m, "alfred_state_mirror_behind_commits 0") || strings.Contains(m, `alfred_state_mirror_pushes_total{result="pushed"} 0`) {
		t.Errorf("/metrics does not show the mirror")
	}
	stop(t, a)

	dirB := filepath.Join(t.TempDir(), "state.git")
	b := serveAlfred(t, bin, env(dirB))
	waitUntil(t, 30*time.Second, "ready after the restore", func() bool { code, _ := b.get("/readyz"); return code == 200 })
	if b.logLines("INFO", "state restored from the state remote") != 1 || len(recorded(t, dirB)) != 20 {
		t.Fatalf("the fresh folder was not restored: %d events", len(recorded(t, dirB)))
	}
	if took, ok := b.logField("state restored from the state remote", "took").(float64); ok {
		t.Logf("restore at start: %s", time.Duration(took))
	}
	newHooks(t, b, secret).paced("b", 1, 10, nil)
	waitUntil(t, 30*time.Second, "B's write pushed", func() bool { return len(recorded(t, dirB)) == 21 && f.head() == branchOf(dirB) })
	stop(t, b)

	cmd := exec.Command(bin, "serve", "-listen", freePort(t))
	for k, v := range env(dirA) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "PATH="+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "has commits the local branch lacks") || !strings.Contains(string(out), "move "+dirA+" aside") ||
		strings.Contains(string(out), f.token) {
		t.Fatalf("a start behind the remote: %v\n%s", err, out)
	}
}

// stop ends a serve process with SIGTERM and waits for it.
func stop(t *testing.T, s *served) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("alfred serve did not stop on SIGTERM")
	}
}
