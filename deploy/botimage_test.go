package deploy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBotImage checks the image of the Dockerfile that scripts/images.sh built.
func TestBotImage(t *testing.T) {
	d := newDocker(t)
	image := need(t, envBotImage)
	cfg := d.imageConfig(t, image)

	t.Run("version", func(t *testing.T) {
		label := cfg.Labels["org.opencontainers.image.version"]
		if label == "" {
			t.Fatalf("label org.opencontainers.image.version is missing; labels: %v", cfg.Labels)
		}
		got := strings.TrimSpace(d.Must(t, "run", "--rm", "--network", "none", image, "version"))
		if got != label {
			t.Errorf("%s version = %q; the label says %q", image, got, label)
		}
		if want := os.Getenv(envBotVersion); want != "" && got != want {
			t.Errorf("%s version = %q; scripts/images.sh built %q", image, got, want)
		}
	})

	t.Run("runs as the agents' user, not root", func(t *testing.T) {
		agentUser := configReference(t)["ALFRED_AGENT_USER"]
		if cfg.User != agentUser {
			t.Errorf("USER = %q; want ALFRED_AGENT_USER's default %q (agents write in what the bot creates)", cfg.User, agentUser)
		}
		want := strings.SplitN(agentUser, ":", 2)
		for i, flag := range []string{"-u", "-g"} {
			got := strings.TrimSpace(d.Must(t, "run", "--rm", "--network", "none", "--entrypoint", "id", image, flag))
			if got == "0" || got != want[i] {
				t.Errorf("id %s in %s = %s; want %s", flag, image, got, want[i])
			}
		}
	})

	t.Run("no Go toolchain or sources", func(t *testing.T) {
		// alfred is looked for too: it proves the search went through the image.
		got := d.filesNamed(t, image, "alfred", "go", "gofmt", "*.go", "go.mod", "go.sum")
		if want := []string{"/usr/local/bin/alfred"}; !slices.Equal(got, want) {
			t.Errorf("files named alfred or of Go in %s: %v; want only %v", image, got, want)
		}
	})

	t.Run("serves the probes, is healthy, stops on SIGTERM", func(t *testing.T) {
		uid, gid, ok := strings.Cut(cfg.User, ":")
		if !ok {
			t.Fatalf("USER = %q; want uid:gid", cfg.User)
		}
		addr := freeAddr(t)
		name := containerName("bot")
		// The daemon has no bridge: the container shares this machine's
		// network and listens on loopback only.
		d.Must(t, "run", "-d", "--name", name, "--network", "host",
			"--tmpfs", fmt.Sprintf("/var/lib/alfred:rw,uid=%s,gid=%s,mode=0700", uid, gid),
			"-e", "ALFRED_LISTEN="+addr,
			"--health-interval", "1s", "--health-timeout", "5s", "--health-retries", "2",
			image)
		t.Cleanup(func() { d.Run("rm", "-f", name) })
		defer func() {
			if t.Failed() {
				logs, _ := d.Run("logs", name)
				t.Logf("logs of %s:\n%s", name, logs)
			}
		}()
		for _, probe := range []struct{ path, body string }{{"/healthz", "ok\n"}, {"/readyz", "ready\n"}} {
			code, body := waitHTTP(t, "http://"+addr+probe.path, 30*time.Second)
			if code != http.StatusOK || body != probe.body {
				t.Errorf("GET %s = %d %q; want 200 %q", probe.path, code, body, probe.body)
			}
		}
		if status := waitHealth(t, d, name, "healthy", 30*time.Second); status != "healthy" {
			t.Errorf("health status %q; want healthy", status)
		}
		d.Must(t, "stop", "-t", "20", name)
		if code := strings.TrimSpace(d.Must(t, "inspect", "--format", "{{.State.ExitCode}}", name)); code != "0" {
			t.Errorf("exit code after docker stop = %s; want 0 (a clean shutdown on SIGTERM)", code)
		}
	})

	t.Run("health check fails when nothing serves", func(t *testing.T) {
		name := containerName("idle")
		d.Must(t, "run", "-d", "--name", name, "--network", "none", "--entrypoint", "sleep",
			"--health-interval", "1s", "--health-timeout", "5s", "--health-retries", "1",
			"--health-start-period", "1s", image, "120")
		t.Cleanup(func() { d.Run("rm", "-f", name) })
		if status := waitHealth(t, d, name, "unhealthy", 30*time.Second); status != "unhealthy" {
			t.Errorf("health status %q with no server; want unhealthy", status)
		}
	})
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var containerSeq int

// containerName names a test container after this process, so parallel runs
// of the suite on one daemon do not collide.
func containerName(role string) string {
	containerSeq++
	return "alfred-deploy-test-" + role + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(containerSeq)
}

// waitHTTP gets url until it answers or timeout passes.
func waitHTTP(t *testing.T, url string, timeout time.Duration) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr != nil {
				t.Fatalf("read %s: %v", url, rerr)
			}
			return resp.StatusCode, string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: no answer within %s: %v", url, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitHealth waits until the container's health status is want, or is final
// the other way, or timeout passes; it returns the last status seen.
func waitHealth(t *testing.T, d dockerCLI, name, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		status := strings.TrimSpace(d.Must(t, "inspect", "--format", "{{if .State.Health}}{{.State.Health.Status}}{{end}}", name))
		switch {
		case status == want:
			return status
		case status == "":
			t.Fatalf("%s has no health check", name)
		case status != "starting" || time.Now().After(deadline):
			log, _ := d.Run("inspect", "--format", "{{json .State.Health.Log}}", name)
			t.Logf("health log of %s: %s", name, log)
			return status
		}
		time.Sleep(250 * time.Millisecond)
	}
}
