package kube

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alchemic-studio/alfred/sandbox"
)

var (
	forwarderOnce sync.Once
	forwarderPath string
	forwarderErr  error
)

// staticForwarder builds cmd/alfred-forward as the agent image gets it.
func staticForwarder(t *testing.T) string {
	t.Helper()
	forwarderOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kube-fwd")
		if err != nil {
			forwarderErr = err
			return
		}
		forwarderPath = filepath.Join(dir, "alfred-forward")
		cmd := exec.Command("go", "build", "-trimpath", "-o", forwarderPath, "../../cmd/alfred-forward")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			forwarderErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if forwarderErr != nil {
		t.Fatalf("build alfred-forward: %v", forwarderErr)
	}
	return forwarderPath
}

// TestRunnerBinds: a sealed run's binds, as the engine makes them, reach a
// Pod with no network: the forwarder (a read-only file) is staged, and the
// gateway's socket on this machine is relayed into the Pod through the API
// server, so the agent's HTTP request reaches the server behind it.
func TestRunnerBinds(t *testing.T) {
	t.Parallel()
	fwd := staticForwarder(t)
	r := newTestRunner(t, func(o *Options) { o.Relay = fwd })
	dir, err := os.MkdirTemp("", "kb") // short: a socket path has 107 bytes at most
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		seen.Add(1)
		fmt.Fprintf(w, "hello from the bot's side: %s", req.URL.Path)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	spec := r.spec(`wget -qO- http://127.0.0.1:47080/anthropic/v1/messages; echo; ls -l /run/alfred/alfred-forward`)
	spec.Network = sandbox.NetworkNone
	spec.Binds = []sandbox.Mount{
		{Host: sock, Container: "/run/alfred/gateway.sock"},
		{Host: fwd, Container: "/run/alfred/alfred-forward", ReadOnly: true},
	}
	spec.Prefix = []string{"/run/alfred/alfred-forward", "-port", "47080", "-socket", "/run/alfred/gateway.sock", "--"}
	res := r.run(t, spec)
	out := string(res.Stdout)
	if res.ExitCode != 0 || !strings.Contains(out, "hello from the bot's side: /anthropic/v1/messages") {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, out, res.Stderr)
	}
	if seen.Load() != 1 {
		t.Errorf("the server behind the socket saw %d requests, want 1", seen.Load())
	}
	if !strings.Contains(out, "-r-xr-xr-x") {
		t.Errorf("the read-only forwarder is writable in the Pod: %q", out)
	}
}
