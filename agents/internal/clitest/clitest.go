// Package clitest owns the test harness for real agent CLIs: finding the
// pinned binaries (ALFRED_AGENT_CLIS_BIN, filled by scripts/agent-clis.sh)
// and a Runner that plays the container's /home/agent on the host, so that
// the shared flow, session mount included, runs a real CLI unchanged.
package clitest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

// BinEnv names the variable holding the folder of the pinned CLIs.
const BinEnv = "ALFRED_AGENT_CLIS_BIN"

// Bin returns the folder holding exe, or ends the test: t.Skip under
// -short, t.Fatal otherwise, saying what is missing.
func Bin(t testing.TB, exe string) string {
	t.Helper()
	dir := os.Getenv(BinEnv)
	msg := ""
	switch {
	case dir == "":
		msg = fmt.Sprintf("%s is not set: run scripts/agent-clis.sh and export %s=<the folder it prints> (needs %s)", BinEnv, BinEnv, exe)
	default:
		if fi, err := os.Stat(filepath.Join(dir, exe)); err != nil || fi.IsDir() {
			msg = fmt.Sprintf("%s not found in %s=%s: run scripts/agent-clis.sh", exe, BinEnv, dir)
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

// Env is a clean environment for a CLI run: HOME (the sandbox's), PATH with
// the CLI folder and the system's, a plain terminal and locale, plus extra.
func Env(bin string, extra map[string]string) map[string]string {
	env := map[string]string{
		"HOME": agents.AgentHome,
		"PATH": bin + ":/usr/local/bin:/usr/bin:/bin",
		"TERM": "dumb",
		"LANG": "C.UTF-8",
	}
	maps.Copy(env, extra)
	return env
}

// HomeRunner runs specs on the host with AgentHome played by Home: HOME is
// rewritten to Home, and a Session mount becomes a symlink from
// Home/<path under AgentHome> to the mount's host folder (a container bind
// mount, minus the isolation). Like the container's tmpfs home, Home starts
// empty on every run; Setup then fills it (as credential and configuration
// mounts would). Inner runs the rewritten spec.
type HomeRunner struct {
	Home  string
	Setup func(home string) error
	Inner sandbox.Runner
}

// Name implements sandbox.Runner.
func (r *HomeRunner) Name() string { return r.Inner.Name() }

// Run implements sandbox.Runner.
func (r *HomeRunner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	env := maps.Clone(spec.Env)
	if env["HOME"] == agents.AgentHome {
		env["HOME"] = r.Home
	}
	spec.Env = env
	if err := os.RemoveAll(r.Home); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.Home, 0o700); err != nil {
		return nil, err
	}
	if r.Setup != nil {
		if err := r.Setup(r.Home); err != nil {
			return nil, fmt.Errorf("clitest: set up home: %w", err)
		}
	}
	if m := spec.Session; m != nil {
		rel, ok := strings.CutPrefix(m.Container, agents.AgentHome+"/")
		if !ok {
			return nil, fmt.Errorf("clitest: session mount %s outside %s", m.Container, agents.AgentHome)
		}
		link := filepath.Join(r.Home, rel)
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(link); err != nil {
			return nil, err
		}
		if err := os.Symlink(m.Host, link); err != nil {
			return nil, err
		}
		spec.Session = nil
	}
	return r.Inner.Run(ctx, spec)
}

// Host returns a HomeRunner over the sandbox host runner, with a fresh
// temporary home.
func Host(t testing.TB) *HomeRunner {
	t.Helper()
	return &HomeRunner{Home: t.TempDir(), Inner: sandbox.NewHostRunner(sandbox.HostOptions{})}
}

// Real is what a real-CLI test starts from: the folder of the CLI's
// executable (as Bin), a mock model server closed when the test ends, and
// the adapter of cli.
func Real(t testing.TB, exe string, cli agents.CLI) (bin string, mock *mockllm.Server, a *agents.Local) {
	t.Helper()
	bin = Bin(t, exe)
	mock = mockllm.Start(mockllm.Options{})
	t.Cleanup(mock.Close)
	a, err := agents.NewLocal(cli)
	if err != nil {
		t.Fatalf("adapter of %s: %v", exe, err)
	}
	return bin, mock, a
}
