package grok

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// Tests against the real CLI, installed by scripts/agent-clis.sh; they find
// it through ALFRED_AGENT_CLIS_BIN.

// cliBin returns the folder holding the CLI, failing (skipping under -short)
// when it is missing.
func cliBin(t *testing.T, exe string) string {
	t.Helper()
	dir := os.Getenv("ALFRED_AGENT_CLIS_BIN")
	msg := ""
	switch {
	case dir == "":
		msg = "ALFRED_AGENT_CLIS_BIN is not set: run scripts/agent-clis.sh and export ALFRED_AGENT_CLIS_BIN=<the folder it prints>"
	default:
		if _, err := os.Stat(filepath.Join(dir, exe)); err != nil {
			msg = exe + " is missing from ALFRED_AGENT_CLIS_BIN=" + dir + ": run scripts/agent-clis.sh"
		}
	}
	if msg != "" {
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return dir
}

// hostPath is PATH for the CLI: its folder and node's.
func hostPath(t *testing.T, bin string) string {
	t.Helper()
	p := []string{bin}
	if node, err := exec.LookPath("node"); err == nil {
		p = append(p, filepath.Dir(node))
	}
	return strings.Join(append(p, "/usr/local/bin", "/usr/bin", "/bin"), ":")
}

// homeRunner stands for the image runner on the host: every attempt gets a
// fresh HOME (the container's tmpfs home), and the session mount becomes a
// symlink from HOME/<SessionStatePath below /home/agent> to the mounted host
// folder, which is how the state survives from one run to the next.
type homeRunner struct {
	t     *testing.T
	inner *sandbox.HostRunner
	// seed prepares each fresh HOME (provider settings…); may be nil.
	seed func(home string)
}

func (r *homeRunner) Name() string { return "host" }

func (r *homeRunner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	home, err := os.MkdirTemp(r.t.TempDir(), "home")
	if err != nil {
		return nil, err
	}
	if r.seed != nil {
		r.seed(home)
	}
	if m := spec.Session; m != nil {
		rel, ok := strings.CutPrefix(m.Container, agents.AgentHome+"/")
		if !ok {
			r.t.Fatalf("session mount %q is not under %s", m.Container, agents.AgentHome)
		}
		link := filepath.Join(home, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			return nil, err
		}
		if err := os.Symlink(m.Host, link); err != nil {
			return nil, err
		}
		spec.Session = nil
	}
	env := make(map[string]string, len(spec.Env))
	for k, v := range spec.Env {
		env[k] = v
	}
	env["HOME"] = home
	spec.Env = env
	return r.inner.Run(ctx, spec)
}

func TestRealVersion(t *testing.T) {
	bin := cliBin(t, Executable)
	res, err := sandbox.NewHostRunner(sandbox.HostOptions{}).Run(context.Background(), sandbox.Spec{
		Argv: CLI{}.VersionArgv(), Timeout: time.Minute,
		Env: map[string]string{"HOME": t.TempDir(), "PATH": hostPath(t, bin)},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := CLI{}.ParseVersion(res.Stdout, res.Stderr)
	if err != nil {
		t.Fatalf("%v (exit %d, stderr %q)", err, res.ExitCode, res.Stderr)
	}
	if v.String() != "1.0.1" {
		t.Fatalf("version %s, want the pinned 1.0.1", v)
	}
	if !inRange(t, v.String()) {
		t.Fatalf("pinned version %s outside the verified range %s", v, VerifiedRange)
	}
}
