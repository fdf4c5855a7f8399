package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// waitLong bounds every wait of these tests: a failure, never a measure.
const waitLong = 30 * time.Second

func openTestStore(t *testing.T) (*state.Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state.git")
	st, err := state.Open(context.Background(), dir, state.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

// versionRunner answers claude --version with its version and every other
// CLI as absent (exit 127).
type versionRunner struct{ name, claude string }

func (r versionRunner) Name() string { return r.name }
func (r versionRunner) Run(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	if spec.Argv[0] == "claude" {
		return &sandbox.Result{Outcome: sandbox.OutcomeExited, Stdout: []byte(r.claude + " (Claude Code)\n")}, nil
	}
	return &sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: 127, Stderr: []byte(spec.Argv[0] + ": not found")}, nil
}

func testAdapters(t *testing.T) map[string]agents.Adapter {
	t.Helper()
	adapters, err := newAdapters(&config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return adapters
}

func TestVerifiedRanges(t *testing.T) {
	adapters := testAdapters(t)
	c := &config.Config{AgentVerifiedRanges: map[string]string{"claude-code": ">=2.0.0 <3.0.0"}}
	if got, err := verifiedRanges(c, adapters); err != nil || got["claude-code"] != ">=2.0.0 <3.0.0" {
		t.Errorf("verifiedRanges = %v, %v", got, err)
	}
	c.AgentVerifiedRanges = map[string]string{"api": ">=1.0.0"} // not a CLI: nothing to detect
	if _, err := verifiedRanges(c, adapters); err == nil || !strings.Contains(err.Error(), "ALFRED_AGENT_VERIFIED_RANGES") ||
		!strings.Contains(err.Error(), `unknown adapter "api"`) || !strings.Contains(err.Error(), "claude-code, codex") {
		t.Errorf("an adapter that is no CLI: %v", err)
	}
}

// TestRefreshWithoutServer: `alfred agents detect --refresh` with no server
// holding the store detects, records with the configured ranges (a version
// past the adapter's own range resumes once the range is widened), and
// prints the table.
func TestRefreshWithoutServer(t *testing.T) {
	tests := []struct {
		name      string
		ranges    map[string]string
		resumable bool
		shown     string
	}{
		{"adapter's own range", nil, false, "outside the verified range >=2.1.101, <=2.1.332"},
		{"range widened", map[string]string{"claude-code": ">=2.1.101, <3.0.0"}, true, ">=2.1.101, <3.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			c := &config.Config{StateDir: dir, AgentImage: "alfred-agent:1"}
			r := newRefresher(c, versionRunner{name: "image", claude: "2.5.0"}, testAdapters(t), tt.ranges, slog.New(slog.DiscardHandler))
			var out bytes.Buffer
			if err := r.Run(context.Background(), &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "claude-code") || !strings.Contains(out.String(), "2.5.0") || !strings.Contains(out.String(), tt.shown) {
				t.Errorf("printed:\n%s\nwant claude-code 2.5.0 and %q", out.String(), tt.shown)
			}
			st, err := state.Open(context.Background(), dir, state.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			recs, _ := st.Installations()
			if len(recs) != 1 || recs[0].AdapterID != "claude-code" || recs[0].Version != "2.5.0" || recs[0].ResumableSessions != tt.resumable {
				t.Errorf("recorded %+v, want claude-code 2.5.0 resumable %v", recs, tt.resumable)
			}
		})
	}
}

// TestSharedInstallations: the state store as --refresh sees it: held by
// this process (the "server"), it says so and names this process, and the
// records the holder commits are read beside it, as they were recorded;
// once free, it opens to be written.
func TestSharedInstallations(t *testing.T) {
	st, dir := openTestStore(t)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	want := agents.Record{AdapterID: "gemini", Runner: "image", Image: "alfred-agent:1",
		Reason: "installed but does not start: gemini --version exited 1", DetectedAt: at}
	if err := (installations{st}).Put(context.Background(), []agents.Record{want}); err != nil {
		t.Fatal(err)
	}
	shared := sharedInstallations{dir: dir, log: slog.New(slog.DiscardHandler)}
	if recs, _, held, err := shared.Open(context.Background()); err != nil || !held || recs != nil {
		t.Fatalf("Open of a held store: %v, held %v, %v", recs, held, err)
	}
	if pid, err := shared.Holder(); err != nil || pid != os.Getpid() {
		t.Fatalf("Holder = %d, %v; want this process, %d", pid, err, os.Getpid())
	}
	if got, err := shared.Read(context.Background()); err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, want)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	recs, closeRecs, held, err := shared.Open(context.Background())
	if err != nil || held {
		t.Fatalf("Open of a free store: held %v, %v", held, err)
	}
	defer closeRecs()
	if got, err := recs.Installations(); err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("Installations = %+v, %v; want %+v", got, err, want)
	}
}

// TestRefreshAServingAlfred is the whole path with real processes: `alfred
// serve` (a forge, the host runner, a claude on PATH, no schedule) detects at
// start; `alfred agents detect --refresh` finds it through the state store's
// lock, sends it SIGHUP, and prints the detection it records.
func TestRefreshAServingAlfred(t *testing.T) {
	bin := buildBinary(t)
	dir, tools := t.TempDir(), t.TempDir()
	script := "#!/bin/sh\necho '2.1.197 (Claude Code)'\n"
	if err := os.WriteFile(filepath.Join(tools, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	fj := forgejotest.NewServer(t)
	env := []string{"PATH=" + tools + ":" + os.Getenv("PATH"), "HOME=" + dir,
		"ALFRED_STATE_DIR=" + filepath.Join(dir, "state.git"), "ALFRED_DATA_DIR=" + dir,
		"ALFRED_FORGE=forgejo", "ALFRED_FORGE_URL=" + fj.URL(), "ALFRED_FORGE_TOKEN=" + forgejotest.BotToken,
		"ALFRED_RUNNER=host", "ALFRED_AGENT_DETECT_INTERVAL=0", "ALFRED_LOG_FORMAT=json"}
	srv := exec.Command(bin, "serve", "-listen", freePort(t))
	srv.Dir, srv.Env = dir, env
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	log := watch(stderr)
	log.waitFor(t, `"why":"start"`, waitLong)

	refresh := exec.Command(bin, "agents", "detect", "--refresh")
	refresh.Dir, refresh.Env = dir, env
	out, err := refresh.Output()
	if err != nil {
		t.Fatalf("agents detect --refresh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "claude-code  host    2.1.197") {
		t.Errorf("printed:\n%s", out)
	}
	log.waitFor(t, `"msg":"agent detection requested","by":"hangup"`, waitLong)
	log.waitFor(t, `"why":"request"`, waitLong)
	if err := srv.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the server did not survive SIGHUP: %v", err)
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
	for _, want := range []string{"claude-code  host    2.1.332", "codex", "opencode", "copilot", "gemini", "grok", "the host runner never resumes sessions"} {
		if !strings.Contains(out, want) {
			t.Errorf("agents detect output lacks %q:\n%s", want, out)
		}
	}
}
