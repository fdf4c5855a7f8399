// Package clitest owns the test harness for real agent CLIs: finding the
// pinned binaries (ALFRED_AGENT_CLIS_BIN, filled by scripts/agent-clis.sh, and
// ALFRED_AGENT_CLIS_PREVIOUS_BIN, by scripts/agent-clis.sh --previous)
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
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/sandbox"
)

// BinEnv names the variable holding the folder of the pinned CLIs, with the
// pinned node, npm and npx (scripts/agent-clis.sh).
const BinEnv = "ALFRED_AGENT_CLIS_BIN"

// PreviousBinEnv names the variable holding the folder of the previous pins
// (scripts/agent-clis.sh --previous): an older version of a CLI, inside its
// adapter's verified range, that the real tests run too.
const PreviousBinEnv = "ALFRED_AGENT_CLIS_PREVIOUS_BIN"

// Bin returns the folder of the pinned CLIs holding exe, or ends the test:
// t.Skip under -short, t.Fatal otherwise, saying what is missing.
func Bin(t testing.TB, exe string) string {
	t.Helper()
	return binIn(t, BinEnv, "scripts/agent-clis.sh", exe)
}

// PreviousBin returns the folder of the previous pins holding exe, or ends
// the test as Bin does.
func PreviousBin(t testing.TB, exe string) string {
	t.Helper()
	return binIn(t, PreviousBinEnv, "scripts/agent-clis.sh --previous", exe)
}

func binIn(t testing.TB, env, script, exe string) string {
	t.Helper()
	dir := os.Getenv(env)
	msg := ""
	switch {
	case dir == "":
		msg = fmt.Sprintf("%s is not set: run %s and export %s=<the folder it prints> (needs %s)", env, script, env, exe)
	default:
		if fi, err := os.Stat(filepath.Join(dir, exe)); err != nil || fi.IsDir() {
			msg = fmt.Sprintf("%s not found in %s=%s: run %s", exe, env, dir, script)
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

// Install is one installation of a CLI the real tests run: Name names its
// subtest, Bin is its folder.
type Install struct{ Name, Bin string }

// Installs returns the installations of exe to run: the current pin (Bin)
// and the previous one (PreviousBin). A missing one ends the test as Bin does.
func Installs(t testing.TB, exe string) []Install {
	t.Helper()
	return []Install{{Name: "current", Bin: Bin(t, exe)}, {Name: "previous", Bin: PreviousBin(t, exe)}}
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

// Mocked is a real CLI's adapter pointed at the mock model: what RoundTrip
// and CleanWorktree run.
type Mocked struct {
	Adapter agents.Adapter
	Runner  *HomeRunner
	Mock    *mockllm.Server
	// Env is the whole environment offered to the adapter (see Env).
	Env map[string]string
	// Timeout of each run; two minutes when zero.
	Timeout time.Duration
}

// Real is what a real-CLI test starts from: the adapter of cli, a mock
// model server answering as opts says (closed when the test ends), a host
// runner with a fresh home (Host), and the environment of the CLI's folder
// (Bin, Env). point then points the CLI at Mock (its Env, Runner.Setup,
// Timeout); it may be nil.
func Real(t testing.TB, cli agents.CLI, opts mockllm.Options, point func(m *Mocked)) Mocked {
	t.Helper()
	return RealIn(t, Bin(t, cli.Descriptor().Executable), cli, opts, point)
}

// RealIn is Real with the CLI of the folder bin (an Install's).
func RealIn(t testing.TB, bin string, cli agents.CLI, opts mockllm.Options, point func(m *Mocked)) Mocked {
	t.Helper()
	a, err := agents.NewLocal(cli)
	if err != nil {
		t.Fatalf("adapter of %s: %v", cli.Descriptor().ID, err)
	}
	m := Mocked{Adapter: a, Runner: Host(t), Mock: mockllm.Start(opts), Env: Env(bin, nil)}
	t.Cleanup(m.Mock.Close)
	if point != nil {
		point(&m)
	}
	return m
}

// HomeFile is a HomeRunner.Setup that writes content at rel under the home,
// as a credential or configuration mount would bring it.
func HomeFile(rel, content string) func(home string) error {
	return func(home string) error {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o600)
	}
}
