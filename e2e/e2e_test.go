// Package e2e drives the built alfred binary from webhook to merge request:
// a fake Forgejo that speaks the Forgejo 7 API over HTTP and sends signed
// webhooks (forges/forgejo/forgejotest), the real Docker daemon make test
// starts, and the real Claude Code in the agent container, talking to a mock
// model server inside that container.
package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/state"
)

// need reads a variable make test sets; without it the test fails (it skips
// only under -short).
func need(t *testing.T, name, why string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if testing.Short() {
			t.Skipf("%s is not set (%s)", name, why)
		}
		t.Fatalf("%s is not set: %s; run make test or make e2e", name, why)
	}
	return v
}

type bot struct {
	t     *testing.T
	bin   string
	env   []string
	addr  string
	cmd   *exec.Cmd
	state string
}

// run runs one alfred subcommand to its end.
func (b *bot) run(args ...string) string {
	b.t.Helper()
	cmd := exec.Command(b.bin, args...)
	cmd.Env = b.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.t.Fatalf("alfred %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// serve starts alfred serve and waits until it is ready.
func (b *bot) serve() {
	b.t.Helper()
	b.cmd = exec.Command(b.bin, "serve")
	b.cmd.Env = b.env
	logf, err := os.OpenFile(filepath.Join(b.t.TempDir(), "alfred.log"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		b.t.Fatal(err)
	}
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	cmd := b.cmd
	b.t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait(); logf.Close(); dumpLog(b.t, logf.Name()) })
	waitFor(b.t, 30*time.Second, "alfred serve ready", func() bool {
		resp, err := http.Get("http://" + b.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func dumpLog(t *testing.T, path string) {
	if t.Failed() {
		b, _ := os.ReadFile(path)
		t.Logf("alfred's log:\n%s", b)
	}
}

// look reads the state branch beside the running bot.
func (b *bot) look(f func(st *state.Store)) {
	st, err := state.Open(context.Background(), b.state, state.Options{ReadOnly: true})
	if err != nil {
		return
	}
	defer st.Close()
	f(st)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestE2E(t *testing.T) {
	started := time.Now()
	dockerHost := need(t, "ALFRED_TEST_DOCKER_HOST", "the private Docker daemon of scripts/dockerd.sh")
	clis := need(t, "ALFRED_AGENT_CLIS_BIN", "the agent CLIs of scripts/agent-clis.sh")
	claude, err := filepath.EvalSymlinks(filepath.Join(clis, "claude"))
	if err != nil {
		t.Fatalf("claude: %v", err)
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	instance := "e2e-" + hex.EncodeToString(suffix)
	image := "alfred-e2e/claude:" + instance
	buildImage(t, dockerHost, claude, image)
	t.Cleanup(func() { exec.Command("docker", "-H", dockerHost, "rmi", "-f", image).Run() })

	alfredBin := filepath.Join(t.TempDir(), "alfred")
	if out, err := exec.Command("go", "build", "-o", alfredBin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	fj := forgejotest.NewServer(t)
	repo := filepath.Join(t.TempDir(), "demo.git")
	seedRepo(t, repo)
	if err := fj.ServeGit(repo); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	b := &bot{t: t, bin: alfredBin, addr: freeAddr(t), state: filepath.Join(data, "state.git")}
	b.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + data,
		"ALFRED_LISTEN=" + b.addr, "ALFRED_PUBLIC_URL=http://" + b.addr,
		"ALFRED_STATE_DIR=" + b.state, "ALFRED_DATA_DIR=" + data, "ALFRED_LOG_FORMAT=json",
		"ALFRED_FORGE=forgejo", "ALFRED_FORGE_URL=" + fj.URL(), "ALFRED_FORGE_TOKEN=" + forgejotest.BotToken,
		"ALFRED_WEBHOOK_SECRETS=s3cret", "ALFRED_PUBLIC_PROJECTS=*",
		"ALFRED_RUNNER=image", "ALFRED_DOCKER_HOST=" + dockerHost, "ALFRED_AGENT_IMAGE=" + image, "ALFRED_INSTANCE=" + instance,
		"ALFRED_POLL_INTERVAL=300ms",
		"ALFRED_AGENT_ENV=ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:4000", "ANTHROPIC_API_KEY=sk-e2e-do-not-show",
	}
	if out := b.run("labels", "sync", "-project", "alice/demo"); !strings.Contains(out, "17 labels created") {
		t.Fatalf("labels sync: %s", out)
	}
	b.run("settings", "set", "AGENT_NETWORK", "none", "-org", "alice")
	b.serve()
	fj.SetWebhook("http://"+b.addr+"/webhooks/forgejo", "s3cret")

	// Detection runs claude --version in the image at start.
	waitFor(t, time.Minute, "claude-code detected as resumable", func() (ok bool) {
		b.look(func(st *state.Store) {
			all, _ := st.Installations()
			for _, in := range all {
				ok = ok || in.AdapterID == "claude-code" && in.Image == image && in.ResumableSessions
			}
		})
		return ok
	})

	key := state.MailboxKey{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 1}
	var mb state.Mailbox
	var runs []state.Run
	var sessions []state.LLMSession
	waitStatus := func(status string) {
		t.Helper()
		waitFor(t, 3*time.Minute, "status "+status, func() (ok bool) {
			b.look(func(st *state.Store) {
				m, err := st.Mailbox(key)
				if err != nil || m.Status != status || m.ActiveRunID != "" {
					return
				}
				mb, runs, sessions = m, nil, nil
				runs, _ = st.Runs(m.ID)
				for _, r := range runs {
					_, ls, _ := st.RunWithSessions(r.ID)
					sessions = append(sessions, ls...)
				}
				ok = true
			})
			return ok
		})
	}
	lastSession := func() state.LLMSession { return sessions[len(sessions)-1] }

	// Assign: acknowledgement, analysis, plan, waiting for validation.
	fj.ActOpenIssue(forges.Issue{Number: 1, Title: "Greet the users", Body: "The demo should greet its users.", Author: "alice", Labels: []string{"type::task"}})
	assigned := time.Now()
	if d, err := fj.ActAssign(1, forgejotest.Bot, "alice"); err != nil || d.Status != http.StatusAccepted {
		t.Fatalf("assign: %+v %v", d, err)
	}
	waitStatus("waiting_validation")
	first := sessions[0]
	// The llm_session is recorded right before the agent's container is created.
	webhookToAgent := first.CreatedAt.Sub(assigned)
	if first.SessionName == nil || *first.SessionName != "agent/issue-1-greet-the-users" || first.NativeSessionID == nil ||
		first.Resumed || first.ResumeFallback == nil || *first.ResumeFallback != "no_prior_session" {
		t.Fatalf("first session: %+v", first)
	}
	native := *first.NativeSessionID
	is, _ := fj.Issue(1)
	if sec, ok := forges.Section(is.Body); !ok || !strings.Contains(sec, "The demo should greet its users.") {
		t.Errorf("description section: %q", is.Body)
	}

	// ai::validate_plan: development resumes the session, pushes, opens the pull request.
	fj.ActLabel(1, "alice", []string{"ai::validate_plan"}, nil)
	waitStatus("in_ci")
	if s := lastSession(); !s.Resumed || *s.NativeSessionID != native {
		t.Fatalf("development session: %+v", s)
	}
	if mb.MergeRequestIID == 0 || !runs[len(runs)-1].Pushed {
		t.Fatalf("no pull request or push: %+v", mb)
	}
	// What was pushed is the file Claude Code wrote with its Write tool.
	tree, err := exec.Command("git", "-C", repo, "ls-tree", "--name-only", mb.HeadSHA).Output()
	if err != nil {
		t.Fatalf("git ls-tree %s: %v", mb.HeadSHA, err)
	}
	var written string
	for _, f := range strings.Fields(string(tree)) {
		if strings.HasPrefix(f, "greeting-") {
			out, _ := exec.Command("git", "-C", repo, "show", mb.HeadSHA+":"+f).Output()
			written = string(out)
		}
	}
	if !strings.Contains(written, "Written by the agent") {
		t.Fatalf("the development commit lacks the agent's file: tree %q", tree)
	}

	// A red commit status (found by polling): ci_fix, resumed; green: in review.
	fj.AddStatus(mb.HeadSHA, "ci/test", "failure", "1 test failed", "")
	waitFor(t, 3*time.Minute, "ci_fix", func() bool { waitStatus("in_ci"); return mb.CIFixAttempts == 1 })
	if s := lastSession(); !s.Resumed || *s.NativeSessionID != native {
		t.Fatalf("ci_fix session: %+v", s)
	}
	fj.AddStatus(mb.HeadSHA, "ci/test", "success", "ok", "")
	waitStatus("in_review")

	// The run page and the status comment show the session.
	resp, err := http.Get("http://" + b.addr + "/runs/" + runs[len(runs)-1].ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`data-test="session-mode">resumed<`, native, "agent/issue-1-greet-the-users"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "sk-e2e-do-not-show") {
		t.Error("run page shows the API key")
	}
	is, _ = fj.Issue(1)
	var status string
	for _, c := range is.Comments {
		if _, k, _ := forges.ParseMarker(c.Body); k == "session" {
			status = c.Body
		}
	}
	if !strings.Contains(status, native) || !strings.Contains(status, "resumed") || !strings.Contains(status, "fresh (no prior session)") {
		t.Errorf("status comment: %q", status)
	}

	// The session state deleted on disk: the next run falls back to fresh, silently.
	stateDir := filepath.Join(data, ".agent-sessions", "alice-demo-issue-1", "claude-code")
	entries, _ := os.ReadDir(stateDir)
	if len(entries) == 0 {
		t.Fatalf("no session state in %s", stateDir)
	}
	for _, e := range entries {
		os.RemoveAll(filepath.Join(stateDir, e.Name()))
	}
	fj.ActReview(mb.MergeRequestIID, "alice", "REQUEST_CHANGES", "Please greet in French too.")
	waitFor(t, 3*time.Minute, "review_fix", func() bool { waitStatus("in_ci"); return runs[len(runs)-1].Phase == "review_fix" })
	if s := lastSession(); s.Resumed || s.ResumeFallback == nil || *s.ResumeFallback != "state_missing" || s.Outcome != "succeeded" {
		t.Fatalf("after deleting the state: %+v", s)
	}
	if mb.LLMRetries != 0 {
		t.Errorf("the fallback counted as a retry: %d", mb.LLMRetries)
	}
	native = *lastSession().NativeSessionID

	// Killed mid-run: the run is held back, the bot gets SIGKILL, a new bot finishes it once.
	commentsBefore := countKinds(fj)
	os.WriteFile(filepath.Join(stateDir, "e2e-slow"), nil, 0o644)
	fj.AddStatus(mb.HeadSHA, "ci/test", "failure", "flaky", "")
	waitFor(t, time.Minute, "the held run", func() (ok bool) {
		b.look(func(st *state.Store) {
			m, _ := st.Mailbox(key)
			if m.ActiveRunID != "" {
				r, _, _ := st.RunWithSessions(m.ActiveRunID)
				ok = r.Status == state.RunRunning && r.Phase == "ci_fix"
			}
		})
		return ok
	})
	time.Sleep(2 * time.Second) // the container is up
	b.cmd.Process.Signal(syscall.SIGKILL)
	b.cmd.Wait()
	os.Remove(filepath.Join(stateDir, "e2e-slow"))
	b.serve()
	waitFor(t, 3*time.Minute, "the interrupted ci_fix done", func() bool { waitStatus("in_ci"); return mb.CIFixAttempts == 2 })
	var canceled, fixes int
	for _, r := range runs {
		if r.Phase == "ci_fix" {
			fixes++
			if r.Status == state.RunCanceled {
				canceled++
			}
		}
	}
	if canceled != 1 || fixes != 3 {
		t.Errorf("ci_fix runs: %d, canceled %d; want 3 and 1", fixes, canceled)
	}
	if s := lastSession(); !s.Resumed || *s.NativeSessionID != native {
		t.Errorf("the session after the restart: %+v", s)
	}
	after := countKinds(fj)
	for k, n := range after {
		if k != "session" && n != commentsBefore[k] {
			t.Errorf("%s comments: %d before the kill, %d after", k, commentsBefore[k], n)
		}
	}
	// The new bot detects the agent CLIs in containers of its own, in the
	// background, after it starts: wait for those to end. A container left
	// behind by the killed bot or by a run never does.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, _ := exec.Command("docker", "-H", dockerHost, "ps", "-aq", "--filter", "label=alfred.instance="+instance).Output()
		if strings.TrimSpace(string(out)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers left behind: %s", out)
		}
	}

	// The issue closed: done, and the session state is gone.
	fj.ActClose(1, "alice")
	waitStatus("done")
	if _, err := os.Stat(filepath.Dir(stateDir)); !os.IsNotExist(err) {
		t.Errorf("session state still there: %v", err)
	}
	t.Logf("e2e wall time %s; webhook to the agent being started %s", time.Since(started).Round(time.Millisecond), webhookToAgent.Round(time.Millisecond))
}

func countKinds(fj *forgejotest.Server) map[string]int {
	is, _ := fj.Issue(1)
	out := map[string]int{}
	for _, c := range is.Comments {
		_, k, _ := forges.ParseMarker(c.Body)
		out[k]++
	}
	return out
}

// seedRepo makes the bare repository with one commit on main.
func seedRepo(t *testing.T, bare string) {
	t.Helper()
	work := t.TempDir()
	for _, args := range [][]string{
		{"git", "init", "--quiet", "--bare", "--initial-branch=main", bare},
		{"git", "-C", bare, "config", "http.receivepack", "true"},
		{"git", "-C", work, "init", "--quiet", "--initial-branch=main"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(work, "README.md"), []byte("demo\n"), 0o644)
	for _, args := range [][]string{
		{"git", "-C", work, "add", "."},
		{"git", "-C", work, "-c", "user.name=alice", "-c", "user.email=a@x", "commit", "--quiet", "-m", "initial"},
		{"git", "-C", work, "push", "--quiet", bare, "main"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}
