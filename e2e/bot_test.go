package e2e

import (
	"context"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// need reads a variable make test sets; without it the test fails (it skips
// only under -short).
func need(t testing.TB, name, why string) string {
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

// bot is the built alfred binary with its environment, and the serve process.
type bot struct {
	t     testing.TB
	bin   string
	env   []string
	addr  string
	cmd   *exec.Cmd
	state string
	data  string
	model *mockllm.Server // the agents' model, behind the bot's gateway
	// exited closes when the serve process last started has exited;
	// served says a start got ready once (its address is then kept).
	exited <-chan struct{}
	served bool
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

// serve starts alfred serve and waits until it is ready. The first start
// moves to another free port when its own was taken meanwhile (freeAddr
// closes the port it found, and a parallel test may bind it before the bot
// does); a later start keeps its address, which the forge's webhooks name.
func (b *bot) serve() {
	b.t.Helper()
	for try := 1; ; try++ {
		log, ready := b.start()
		if ready {
			b.served = true
			return
		}
		if b.served || try == 3 || !strings.Contains(log, "address already in use") {
			b.t.Fatalf("alfred serve on %s did not get ready:\n%s", b.addr, log)
		}
		b.moveTo(freeAddr(b.t))
	}
}

// start starts alfred serve once: ready, or what it logged before it
// exited or the wait ended.
func (b *bot) start() (log string, ready bool) {
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
	cmd, exited := b.cmd, make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.exited = exited
	b.t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); <-exited; logf.Close(); dumpLog(b.t, logf.Name()) })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			out, _ := os.ReadFile(logf.Name())
			return string(out), false
		default:
		}
		// A port taken by another listener may accept and never answer.
		if resp, err := readyClient.Get("http://" + b.addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return "", true
			}
		}
	}
	out, _ := os.ReadFile(logf.Name())
	return "timed out waiting for /readyz; its log:\n" + string(out), false
}

// readyClient asks for /readyz: a short timeout, so that a port held by
// another program that never answers does not hold the wait.
var readyClient = &http.Client{Timeout: 2 * time.Second}

// moveTo makes addr the bot's address, in its environment too.
func (b *bot) moveTo(addr string) {
	for i, kv := range b.env {
		switch {
		case strings.HasPrefix(kv, "ALFRED_LISTEN="):
			b.env[i] = "ALFRED_LISTEN=" + addr
		case strings.HasPrefix(kv, "ALFRED_PUBLIC_URL="):
			b.env[i] = "ALFRED_PUBLIC_URL=http://" + addr
		}
	}
	b.addr = addr
}

// kill ends the serve process with SIGKILL, as a crash would.
func (b *bot) kill() {
	b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.exited
}

func dumpLog(t testing.TB, path string) {
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

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
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

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// agentImage builds the e2e agent image (the real Claude Code and the mock
// model) into the private daemon, under a tag of its own instance.
func agentImage(t testing.TB) (dockerHost, image, instance string) {
	t.Helper()
	dockerHost = need(t, "ALFRED_TEST_DOCKER_HOST", "the private Docker daemon of scripts/dockerd.sh")
	clis := need(t, "ALFRED_AGENT_CLIS_BIN", "the agent CLIs of scripts/agent-clis.sh")
	claude, err := filepath.EvalSymlinks(filepath.Join(clis, "claude"))
	if err != nil {
		t.Fatalf("claude: %v", err)
	}
	instance = instanceOf(t)
	image = "alfred-e2e/claude:" + instance
	buildImage(t, dockerHost, claude, image)
	t.Cleanup(func() { exec.Command("docker", "-H", dockerHost, "rmi", "-f", image).Run() })
	return dockerHost, image, instance
}

// instanceOf is the test's own ALFRED_INSTANCE: an image tag and a label
// value, unique to the run.
func instanceOf(t testing.TB) string {
	return "e2e-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name())) + "-" + randomSuffix(t)
}

// shippedImage is the agent image Alfred ships (scripts/images.sh), with
// every CLI in it, and the test's own instance.
func shippedImage(t testing.TB) (dockerHost, image, instance string) {
	t.Helper()
	dockerHost = need(t, "ALFRED_TEST_DOCKER_HOST", "the private Docker daemon of scripts/dockerd.sh")
	image = need(t, "ALFRED_TEST_AGENT_IMAGE", "the agent image of scripts/images.sh")
	return dockerHost, image, instanceOf(t)
}

// newBot builds the binary and sets up its environment: the forge's
// variables, the private daemon and the agent image, a mock model key that
// must never show.
func newBot(t testing.TB, forgeEnv []string, dockerHost, image, instance string) *bot {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "alfred")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := t.TempDir()
	model := startModel(t)
	b := &bot{t: t, bin: bin, addr: freeAddr(t), state: filepath.Join(data, "state.git"), data: data, model: model}
	b.env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + data,
		"ALFRED_LISTEN=" + b.addr, "ALFRED_PUBLIC_URL=http://" + b.addr,
		"ALFRED_STATE_DIR=" + b.state, "ALFRED_DATA_DIR=" + data, "ALFRED_LOG_FORMAT=json",
		"ALFRED_WEBHOOK_SECRETS=s3cret", "ALFRED_PUBLIC_PROJECTS=*",
		"ALFRED_RUNNER=image", "ALFRED_DOCKER_HOST=" + dockerHost, "ALFRED_AGENT_IMAGE=" + image, "ALFRED_INSTANCE=" + instance,
		"ALFRED_POLL_INTERVAL=300ms",
		"ALFRED_AGENT_ENV=ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY",
		"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=" + apiKey,
	}, forgeEnv...)
	return b
}

// startModel starts the mock model on this machine's loopback: the
// upstream provider of the bot's gateway, which the agents' sealed
// containers reach only through it.
func startModel(t testing.TB) *mockllm.Server {
	model := mockllm.Start(mockllm.Options{Reply: agentReply, WriteDir: "/workspace",
		ReadOnlyPhrase: "Do not change any file", ResolvePhrase: "left conflicts"})
	t.Cleanup(model.Close)
	return model
}

// apiKey is the model key the bot hands the agent; no page may show it.
const apiKey = "sk-e2e-do-not-show"
