package main

import (
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

	"github.com/alchemic-studio/alfred/views"
)

// TestShutdownEndsLiveStreams: a request that lasts as long as a run (a live
// stream) ends when the server shuts down, so Shutdown does not wait for the
// run; before an engine is set no run is followed.
func TestShutdownEndsLiveStreams(t *testing.T) {
	var pages views.Deps
	follow := followRuns(&pages)
	if _, ok := pages.Live.Follow("any"); ok {
		t.Error("a run is followed without an engine")
	}

	started := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		close(started)
		<-pages.Stopping // as the live stream does, with the run's output
	})}
	follow.stopOn(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)

	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a stream open: %v", err)
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

// TestMetricsListen: with ALFRED_METRICS_LISTEN, /metrics is served there
// only, behind the same token, and that server stops with the pages' one;
// without it, /metrics is on the pages' server.
func TestMetricsListen(t *testing.T) {
	bin := buildBinary(t)
	for name, own := range map[string]bool{"with the pages": false, "on its own address": true} {
		t.Run(name, func(t *testing.T) {
			pages, metricsAddr := freePort(t), freePort(t)
			dir := t.TempDir()
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ALFRED_STATE_DIR=" + filepath.Join(dir, "state.git"),
				"ALFRED_LISTEN=" + pages, "ALFRED_LOG_FORMAT=json", "ALFRED_METRICS_TOKEN=tok-metrics"}
			if own {
				env = append(env, "ALFRED_METRICS_LISTEN="+metricsAddr)
			} else {
				metricsAddr = pages
			}
			cmd := exec.Command(bin, "serve")
			cmd.Dir, cmd.Env = dir, env
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			out := watch(stderr)
			out.waitFor(t, `"msg":"serving"`, 20*time.Second)
			elsewhere := 200 // what the other server answers for the path it does not own
			if own {
				elsewhere = 404
			}

			for _, tc := range []struct {
				addr, path, token string
				code              int
			}{
				{metricsAddr, "/metrics", "tok-metrics", 200},
				{metricsAddr, "/metrics", "", 401},
				{metricsAddr, "/metrics", "wrong", 401},
				{pages, "/healthz", "", 200},
				{pages, "/metrics", "tok-metrics", elsewhere},
				{metricsAddr, "/healthz", "", elsewhere},
			} {
				code, body := getWithToken(t, tc.addr, tc.path, tc.token)
				if code != tc.code {
					t.Errorf("GET %s%s with token %q: %d, want %d", tc.addr, tc.path, tc.token, code, tc.code)
				}
				if code == 200 && tc.path == "/metrics" && !strings.Contains(body, "alfred_build_info{") {
					t.Errorf("GET %s/metrics: no alfred_build_info in\n%s", tc.addr, body)
				}
			}

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, `"msg":"stopped"`, 20*time.Second)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit after SIGTERM: %v", err)
			}
			if _, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
				t.Errorf("%s still answers after the stop", metricsAddr)
			}
		})
	}
}

func getWithToken(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
