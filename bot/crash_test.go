package bot

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// The test binary doubles as a bot process for TestKilledMidRun: with
// childEnv set, TestMain runs an engine and its webhook endpoint until killed.
const childEnv = "ALFRED_BOT_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(botChild())
	}
	code := m.Run()
	if code == 0 {
		code = checkEveryStepWalked()
	}
	os.Exit(code)
}

// botChild serves webhooks on ALFRED_CHILD_LISTEN for the Forgejo at
// ALFRED_CHILD_FORGE, with its state in ALFRED_CHILD_DATA, and runs the fake
// agent as `sh -c $ALFRED_CHILD_AGENT` on the host runner.
func botChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	data := os.Getenv("ALFRED_CHILD_DATA")
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	fail := func(err error) int { log.Error("child", "err", err); return 2 }
	st, err := state.Open(ctx, filepath.Join(data, "state.git"), state.Options{Logger: log})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	forge, err := forgejo.New(forgejo.Options{BaseURL: os.Getenv("ALFRED_CHILD_FORGE"), Token: forgejotest.BotToken})
	if err != nil {
		return fail(err)
	}
	fa, err := fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply, Exec: []string{"sh", "-c", os.Getenv("ALFRED_CHILD_AGENT")}})
	if err != nil {
		return fail(err)
	}
	e, err := New(Config{
		Forges: map[string]forges.Forge{"forgejo": forge}, Store: st,
		Adapters: map[string]agents.Adapter{fake.ID: fa}, Runner: sandbox.NewHostRunner(sandbox.HostOptions{}),
		Sandbox:  sandbox.Spec{UID: os.Getuid(), GID: os.Getgid(), Env: map[string]string{"PATH": os.Getenv("PATH")}},
		Repos:    &botrun.Repos{Base: data, Name: "Alfred", Email: "alfred@example.invalid"},
		Sessions: botrun.SessionStore{Base: data}, Defaults: map[string]string{"AGENT_ADAPTER": fake.ID},
		RetryDelay: 10 * time.Millisecond, Logger: log,
	})
	if err != nil {
		return fail(err)
	}
	if err := e.Start(ctx); err != nil {
		return fail(err)
	}
	defer e.Close()
	ln, err := net.Listen("tcp", os.Getenv("ALFRED_CHILD_LISTEN"))
	if err != nil {
		return fail(err)
	}
	srv := &http.Server{Handler: forges.NewWebhookHandler("forgejo", forgejo.Hooks{}, []string{"s3cret"}, e.Intake, log)}
	go srv.Serve(ln)
	fmt.Println("ready")
	<-ctx.Done()
	srv.Close()
	return 0
}

// TestKilledMidRun kills the bot process with SIGKILL while a run is going
// (its event recorded, its effects not applied) and starts another one on the
// same state: the work finishes once, and no comment is doubled.
func TestKilledMidRun(t *testing.T) {
	t.Parallel()
	fj := forgejotest.NewServer(t)
	g := &gitForge{root: t.TempDir()}
	if err := fj.ServeGit(g.seed(t, forgejotest.Owner, forgejotest.Repo)); err != nil {
		t.Fatal(err)
	}
	forge, err := forgejo.New(forgejo.Options{BaseURL: fj.URL(), Token: forgejotest.BotToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := forges.SyncLabels(context.Background(), forge, forges.Project{Forge: "forgejo", Owner: forgejotest.Owner, Name: forgejotest.Repo}, lifecycle.Labels()); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	addr := freeAddr(t)
	fj.SetWebhook("http://"+addr+"/", "s3cret")
	marker := filepath.Join(data, "agent-started")

	start := func(agent string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "ALFRED_CHILD_DATA="+data, "ALFRED_CHILD_FORGE="+fj.URL(),
			"ALFRED_CHILD_LISTEN="+addr, "ALFRED_CHILD_AGENT="+agent)
		cmd.Stderr = os.Stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
			t.Fatalf("child did not start: %q %v", buf, err)
		}
		return cmd
	}

	// The first bot's agent hangs: it is killed with SIGKILL in the middle.
	first := start("echo $$ > " + marker + "; exec sleep 120")
	fj.ActOpenIssue(forges.Issue{Number: 1, Title: "Say hello", Body: "Greet.", Author: forgejotest.Owner, Labels: []string{"type::task"}})
	if d, err := fj.ActAssign(1, forgejotest.Bot, forgejotest.Owner); err != nil || d.Status != http.StatusAccepted {
		t.Fatalf("assign delivery: %+v %v", d, err)
	}
	var agent int
	waitUntil(t, func() bool {
		b, _ := os.ReadFile(marker)
		agent, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return agent > 0
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	// The agent on the host runner dies with the bot.
	for deadline := time.Now().Add(10 * time.Second); alive(agent); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(agent, syscall.SIGKILL)
			t.Fatalf("the agent (pid %d) outlived the bot", agent)
		}
	}

	// The second bot finishes the work.
	start("true")
	key := state.MailboxKey{Forge: "forgejo", Owner: forgejotest.Owner, Project: forgejotest.Repo, Kind: state.KindIssue, IID: 1}
	var mb state.Mailbox
	waitUntil(t, func() bool {
		st, err := state.Open(context.Background(), filepath.Join(data, "state.git"), state.Options{ReadOnly: true})
		if err != nil {
			return false
		}
		defer st.Close()
		mb, _ = st.Mailbox(key)
		if mb.Status != string(lifecycle.StatusWaitingValidation) || mb.ActiveRunID != "" {
			return false
		}
		runs, _ := st.Runs(mb.ID)
		if len(runs) != 2 || runs[0].Status != state.RunCanceled || runs[1].Status != state.RunSucceeded {
			t.Fatalf("runs after the restart: %+v", runs)
		}
		return true
	})
	is, _ := fj.Issue(1)
	kinds := map[string]int{}
	for _, c := range is.Comments {
		_, k, _ := forges.ParseMarker(c.Body)
		kinds[k]++
	}
	if kinds[lifecycle.KindAcknowledgement] != 1 || kinds[lifecycle.KindPlan] != 1 || kinds[lifecycle.KindSession] != 1 || len(is.Comments) != 3 {
		t.Errorf("comments after the restart: %v", kinds)
	}
	if !strings.Contains(strings.Join(is.Labels, ","), "status::waiting_validation") {
		t.Errorf("labels %q", is.Labels)
	}
}

// alive tells whether process pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
