package main

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
)

// buildBinary builds alfred once per test run, as `make build` would.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "alfred")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	lines chan string
	all   bytes.Buffer
}

func watch(r io.Reader) *syncBuffer {
	b := &syncBuffer{lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		close(b.lines)
	}()
	return b
}

func (b *syncBuffer) waitFor(t *testing.T, substr string, d time.Duration) string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-b.lines:
			if !ok {
				t.Fatalf("output ended before %q; got:\n%s", substr, b.all.String())
			}
			b.all.WriteString(l + "\n")
			if strings.Contains(l, substr) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q within %s; got:\n%s", substr, d, b.all.String())
		}
	}
}

func TestServeHealthAndGracefulStop(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "-listen", addr, "-log-format", "json")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ALFRED_STATE_DIR=" + filepath.Join(dir, "state.git")}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	out := watch(stderr)
	out.waitFor(t, `"msg":"serving"`, 20*time.Second)

	for _, path := range []string{"/healthz", "/readyz", "/"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `"msg":"stopped"`, 20*time.Second)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("alfred did not exit after SIGTERM")
	}
}

func TestServeRefusesABadSetting(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "-log-format", "xml"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if msg := stderr.String(); !strings.Contains(msg, "ALFRED_LOG_FORMAT") || !strings.Contains(msg, "text or json") {
		t.Fatalf("message does not name the setting and what it accepts: %q", msg)
	}
}

func TestUnknownCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"frobnicate"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `unknown command "frobnicate"`) {
		t.Fatalf("stderr: %q", stderr.String())
	}
}

// alfred runs a subcommand in-process with env as its whole environment.
func alfred(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestSettingsAndStateCommands(t *testing.T) {
	env := map[string]string{
		"ALFRED_STATE_DIR": filepath.Join(t.TempDir(), "state.git"),
		"ALFRED_FORGE":     "forgejo",
		"ALFRED_FORGE_URL": "http://127.0.0.1:1",
	}
	if code, out, errOut := alfred(t, env, "settings", "set", "AGENT_SESSION_RESUME", "off", "-project", "alice/demo"); code != 1 || !strings.Contains(errOut, "true or false") {
		t.Fatalf("a wrong type was accepted: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := alfred(t, env, "settings", "set", "NO_SUCH_KEY", "1", "-org", "alice"); code != 1 || !strings.Contains(errOut, "unknown setting") {
		t.Fatalf("an unknown key was accepted: %d %q", code, errOut)
	}
	if code, _, errOut := alfred(t, env, "settings", "set", "AGENT_SESSION_RESUME", "1"); code != 2 || !strings.Contains(errOut, "-org") {
		t.Fatalf("a missing scope was accepted: %d %q", code, errOut)
	}
	if code, out, errOut := alfred(t, env, "settings", "set", "-project", "alice/demo", "AGENT_SESSION_RESUME", "FALSE"); code != 0 || !strings.Contains(out, "AGENT_SESSION_RESUME = false at project scope") {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	for _, tt := range []struct{ scope, want string }{{"-project=alice/demo", "false"}, {"-project=alice/other", "true"}, {"-org=alice", "true"}} {
		code, out, errOut := alfred(t, env, "settings", "get", "AGENT_SESSION_RESUME", tt.scope)
		if code != 0 || strings.TrimSpace(out) != tt.want {
			t.Errorf("get %s: %d %q %q, want %s", tt.scope, code, out, errOut, tt.want)
		}
	}
	code, out, _ := alfred(t, env, "state", "log", "-n", "5")
	if code != 0 || !strings.Contains(out, "settings/project/forgejo/alice/demo/AGENT_SESSION_RESUME.json") {
		t.Errorf("state log: %d %q", code, out)
	}
	code, out, _ = alfred(t, env, "state", "show", "settings/project/forgejo/alice/demo/AGENT_SESSION_RESUME.json")
	if code != 0 || !strings.Contains(out, `"value": "false"`) {
		t.Errorf("state show: %d %q", code, out)
	}
	if code, _, _ := alfred(t, env, "settings", "unset", "AGENT_SESSION_RESUME", "-project", "alice/demo"); code != 0 {
		t.Fatalf("unset: %d", code)
	}
	if _, out, _ := alfred(t, env, "settings", "get", "AGENT_SESSION_RESUME", "-project", "alice/demo"); strings.TrimSpace(out) != "true" {
		t.Errorf("after unset: %q", out)
	}
	if code, out, _ := alfred(t, env, "settings", "list"); code != 0 || !strings.Contains(out, "REQUIRE_PLAN_VALIDATION") {
		t.Errorf("settings list: %d %q", code, out)
	}
}

func TestLabelsSyncAgainstForgejo(t *testing.T) {
	fj := forgejotest.NewServer(t)
	env := map[string]string{
		"ALFRED_STATE_DIR":   filepath.Join(t.TempDir(), "state.git"),
		"ALFRED_FORGE":       "forgejo",
		"ALFRED_FORGE_URL":   fj.URL(),
		"ALFRED_FORGE_TOKEN": forgejotest.BotToken,
	}
	code, out, errOut := alfred(t, env, "labels", "sync", "-project", "alice/demo")
	if code != 0 || !strings.Contains(out, "19 labels created, 0 updated") {
		t.Fatalf("first sync: %d %q %q", code, out, errOut)
	}
	if code, out, _ := alfred(t, env, "labels", "sync", "-project", "alice/demo"); code != 0 || !strings.Contains(out, "0 labels created, 0 updated, 19 already right") {
		t.Fatalf("second sync is not idempotent: %d %q", code, out)
	}
	if code, _, errOut := alfred(t, env, "labels", "sync"); code != 2 || !strings.Contains(errOut, "-project") {
		t.Fatalf("missing project: %d %q", code, errOut)
	}
	env["ALFRED_FORGE_TOKEN"] = "wrong-token-0000"
	if code, _, errOut := alfred(t, env, "labels", "sync", "-project", "alice/demo"); code != 1 || strings.Contains(errOut, "wrong-token-0000") {
		t.Fatalf("bad token: %d %q", code, errOut)
	}
}

func TestAgentsDetectOnTheHost(t *testing.T) {
	bin := os.Getenv("ALFRED_AGENT_CLIS_BIN")
	if bin == "" {
		if testing.Short() {
			t.Skip("ALFRED_AGENT_CLIS_BIN is not set (make test installs the agent CLIs)")
		}
		t.Fatal("ALFRED_AGENT_CLIS_BIN is not set: run make test, which installs the agent CLIs with scripts/agent-clis.sh")
	}
	env := map[string]string{"PATH": bin + ":" + os.Getenv("PATH"), "ALFRED_RUNNER": "host"}
	code, out, errOut := alfred(t, env, "agents", "detect")
	if code != 0 {
		t.Fatalf("agents detect: %d %q", code, errOut)
	}
	for _, want := range []string{"claude-code  host    2.1.197", "codex", "opencode", "copilot", "gemini", "grok", "the host runner never resumes sessions"} {
		if !strings.Contains(out, want) {
			t.Errorf("agents detect output lacks %q:\n%s", want, out)
		}
	}
}
