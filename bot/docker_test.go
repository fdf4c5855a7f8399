package bot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// dockerRunner connects to the test daemon that make test starts. It fails,
// never skips, without it (but under -short).
func dockerRunner(t *testing.T) (sandbox.Runner, string) {
	t.Helper()
	const how = "start the test daemon with eval \"$(scripts/dockerd.sh start)\" (make test does)"
	host, image := requireEnv(t, "ALFRED_TEST_DOCKER_HOST", how), requireEnv(t, "ALFRED_TEST_IMAGE", how)
	r, err := sandbox.NewImageRunner(context.Background(), sandbox.ImageOptions{Host: host, Instance: "bot-tests"})
	if err != nil {
		t.Fatal(err)
	}
	return r, image
}

// requireEnv is the environment variable name that a test needs: without
// it the test fails, saying how to set it, and skips only under -short.
func requireEnv(t *testing.T, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set: " + how
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return v
}

// TestSessionMountsInDocker runs the engine's runs in real containers: the
// agent (a shell standing in for the CLI) writes into its session folder as
// the non-root agent user, the session folder survives from one run to the
// next on the host, and the worktree is read-only in analysis and writable in
// development.
func TestSessionMountsInDocker(t *testing.T) {
	t.Parallel()
	runner, image := dockerRunner(t)
	probe := strings.Join([]string{
		"id -u > " + fake.SessionStatePath + "/uid",
		"echo run >> " + fake.SessionStatePath + "/runs",
		"touch " + filepath.Dir(fake.SessionStatePath) + "/beside",
		"if touch /workspace/.probe 2>/dev/null; then echo rw; else echo ro; fi >> " + fake.SessionStatePath + "/workspace",
	}, "; ")
	h := newHarness(t, func(s *setup) {
		fa, err := fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply, Exec: []string{"sh", "-c", probe}})
		if err != nil {
			t.Fatal(err)
		}
		s.adapter = &scripted{Adapter: fa}
		s.runner = "image"
		s.installation = &state.AgentInstallation{Runner: "image", Image: image, Version: fake.Version, ResumableSessions: true}
		s.settings = append(s.settings, projectSetting("AGENT_NETWORK", "none"))
	})
	h.engine.Close()
	cfg := h.engine.cfg
	cfg.Runner, cfg.Sandbox.Image, cfg.Sandbox.UID, cfg.Sandbox.GID = runner, image, 1000, 1000
	e := h.startWith(cfg)

	mb, ls := h.twoRuns(nil)
	dir := e.cfg.Sessions.Dir(mb, fake.ID)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the agent's session file %s: %v", name, err)
		}
		return string(b)
	}
	if got := read("uid"); got != "1000\n" {
		t.Errorf("agent uid %q", got)
	}
	if got := read("runs"); got != "run\nrun\n" {
		t.Errorf("the session folder did not carry over from analysis to development: %q", got)
	}
	if got := read("workspace"); got != "ro\nrw\n" {
		t.Errorf("worktree access per phase (analysis, development): %q", got)
	}
	if !ls[1].Resumed || *ls[1].NativeSessionID != *ls[0].NativeSessionID {
		t.Errorf("second run did not resume: %+v", ls[1])
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("session folder: %v %v", fi, err)
	}
}
