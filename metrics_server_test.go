package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
