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
