package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/internal/logtest"

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

// countingDetect is a detection that reports each call on calls, after
// waiting for gate when one is set for that call.
type countingDetect struct {
	calls chan int
	mu    sync.Mutex
	n     int
	gates map[int]chan struct{}
	found []agents.Installation
	panic int // the call that panics, 0 for none
}

func newCountingDetect(found ...agents.Installation) *countingDetect {
	return &countingDetect{calls: make(chan int, 100), gates: map[int]chan struct{}{}, found: found}
}

func (c *countingDetect) detect(context.Context) []agents.Installation {
	c.mu.Lock()
	c.n++
	n, gate := c.n, c.gates[c.n]
	c.mu.Unlock()
	c.calls <- n
	if gate != nil {
		<-gate
	}
	if n == c.panic {
		panic("detection broke")
	}
	return c.found
}

func (c *countingDetect) waitCall(t *testing.T, want int) {
	t.Helper()
	select {
	case n := <-c.calls:
		if n != want {
			t.Fatalf("detection %d, want %d", n, want)
		}
	case <-time.After(waitLong):
		t.Fatalf("no detection %d", want)
	}
}

// fakeClock is the detector's schedule, ticked by the test.
type fakeClock struct {
	mu        sync.Mutex
	intervals []time.Duration
	tick      chan time.Time
}

func (f *fakeClock) after(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intervals = append(f.intervals, d)
	return f.tick
}

func testDetector(st *state.Store, interval time.Duration) (*detector, *fakeClock, *logtest.Book) {
	book := &logtest.Book{}
	d := newDetector(st, interval, nil, slog.New(book))
	clock := &fakeClock{tick: make(chan time.Time)}
	d.after = clock.after
	return d, clock, book
}

func runDetector(t *testing.T, d *detector, detect detectFunc) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	first, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		d.run(ctx, detect, first)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	return first
}

var claude = agents.Installation{AdapterID: "claude-code", Runner: "image", Image: "alfred-agent:1", Version: "2.1.197",
	VerifiedRange: ">=2.1.101, <=2.1.332", ResumableSessions: true}

// TestDetectorSchedule: the first detection is recorded before runs are let
// go, then each tick of the schedule detects again.
func TestDetectorSchedule(t *testing.T) {
	st, _ := openTestStore(t)
	d, clock, _ := testDetector(st, time.Hour)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return start }
	det := newCountingDetect(claude)
	first := runDetector(t, d, det.detect)

	det.waitCall(t, 1)
	select {
	case <-first:
	case <-time.After(waitLong):
		t.Fatal("runs were never let go after the first detection")
	}
	recs, err := st.Installations()
	if err != nil || len(recs) != 1 || recs[0].Version != "2.1.197" || !recs[0].DetectedAt.Equal(start) {
		t.Fatalf("recorded %+v (%v), want claude-code detected at %s", recs, err, start)
	}
	for i := 2; i <= 3; i++ {
		clock.tick <- time.Now()
		det.waitCall(t, i)
	}
	clock.mu.Lock()
	defer clock.mu.Unlock()
	if len(clock.intervals) < 2 || clock.intervals[0] != time.Hour {
		t.Errorf("schedule asked for %v, want waits of 1h", clock.intervals)
	}
}

// TestDetectorWithoutSchedule: interval 0 detects at start and on request only.
func TestDetectorWithoutSchedule(t *testing.T) {
	st, _ := openTestStore(t)
	d, clock, book := testDetector(st, 0)
	det := newCountingDetect(claude)
	runDetector(t, d, det.detect)
	det.waitCall(t, 1)
	d.Request()
	det.waitCall(t, 2)
	d.Request()
	det.waitCall(t, 3) // the second has been recorded and logged
	clock.mu.Lock()
	defer clock.mu.Unlock()
	if len(clock.intervals) != 0 {
		t.Errorf("a schedule was set: %v", clock.intervals)
	}
	if _, ok := book.Find("agents detected", "why", "request"); !ok {
		t.Error("the log does not say a request made the detection")
	}
}

// TestDetectorCoalescesRequests: requests made while a detection runs give
// one detection after it, not one each.
func TestDetectorCoalescesRequests(t *testing.T) {
	st, _ := openTestStore(t)
	d, _, _ := testDetector(st, 0)
	det := newCountingDetect(claude)
	gate2, gate3 := make(chan struct{}), make(chan struct{})
	det.gates[2], det.gates[3] = gate2, gate3
	runDetector(t, d, det.detect)
	det.waitCall(t, 1)

	d.Request()
	det.waitCall(t, 2) // running, held
	for range 3 {
		d.Request() // never blocks
	}
	close(gate2)
	det.waitCall(t, 3) // the one more, held: nothing else may be waiting
	if n := len(d.requests); n != 0 {
		t.Fatalf("%d requests still wait after the coalesced detection", n)
	}
	close(gate3)
	d.Request()
	det.waitCall(t, 4)
}

// TestDetectorRecoversAPanic: a detection that panics is logged and the loop
// goes on; the runs waiting for the first detection are let go all the same.
func TestDetectorRecoversAPanic(t *testing.T) {
	st, _ := openTestStore(t)
	d, _, book := testDetector(st, 0)
	det := newCountingDetect(claude)
	det.panic = 1
	first := runDetector(t, d, det.detect)
	det.waitCall(t, 1)
	select {
	case <-first:
	case <-time.After(waitLong):
		t.Fatal("a panic in the first detection held the runs")
	}
	if level, ok := book.Find("panic recovered", "in", "detection", "panic", "detection broke"); !ok || level != slog.LevelError {
		t.Errorf("panic logged: %v at %s", ok, level)
	}
	d.Request()
	det.waitCall(t, 2)
}

// TestRecordInstallations: installed CLIs and CLIs there but failing are
// recorded, missing ones are not; a scheduled detection logs at info level
// only what changed, the rest at debug.
func TestRecordInstallations(t *testing.T) {
	st, _ := openTestStore(t)
	broken := agents.Installation{AdapterID: "gemini", Runner: "image", Image: "alfred-agent:1", Reason: agents.ReasonBroken,
		Error: "gemini --version exited 1: SyntaxError"}
	missing := agents.Installation{AdapterID: "grok", Runner: "image", Image: "alfred-agent:1", Reason: agents.ReasonNotInstalled, Error: "exited 127"}
	d, clock, book := testDetector(st, time.Hour)
	det := newCountingDetect(claude, broken, missing)
	runDetector(t, d, det.detect)
	det.waitCall(t, 1)
	clock.tick <- time.Now() // the same again: nothing new
	det.waitCall(t, 2)
	d.Request()
	det.waitCall(t, 3) // the second has been recorded and logged

	recs, err := st.Installations()
	if err != nil || len(recs) != 2 {
		t.Fatalf("recorded %+v (%v), want claude-code and gemini", recs, err)
	}
	for _, r := range recs {
		if r.AdapterID == "gemini" && r.Reason != "installed but does not start: gemini --version exited 1: SyntaxError" {
			t.Errorf("gemini recorded as %+v", r)
		}
	}
	if level, ok := book.Find("agent detected", "adapter", "claude-code", "version", "2.1.197"); !ok || level != slog.LevelInfo {
		t.Errorf("first detection of claude-code logged: %v at %s, want info", ok, level)
	}
	levels := book.Levels("agent detected")
	if len(levels) < 6 || levels[3] != slog.LevelDebug || levels[4] != slog.LevelDebug {
		t.Errorf("levels of 'agent detected': %v, want info at start, debug when the schedule finds nothing new", levels)
	}
}

// TestForwardRefresh: each SIGHUP asks the detector for a detection; a
// server without detector says so and goes on.
func TestForwardRefresh(t *testing.T) {
	st, _ := openTestStore(t)
	for _, tt := range []struct {
		name string
		det  *detector
		want string
	}{
		{"with a detector", newDetector(st, 0, nil, slog.New(slog.DiscardHandler)), "agent detection requested"},
		{"without forge", nil, "agent detection not requested: agents are detected only with a forge configured"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			book := &logtest.Book{}
			ctx, cancel := context.WithCancel(context.Background())
			sigs, done := make(chan os.Signal), make(chan struct{})
			go func() {
				defer close(done)
				forwardRefresh(ctx, sigs, tt.det, slog.New(book))
			}()
			sigs <- syscall.SIGHUP
			sigs <- syscall.SIGHUP // handled after the first: both were taken
			cancel()
			<-done
			if level, ok := book.Find(tt.want); !ok || level != slog.LevelInfo {
				t.Errorf("log: %v at %s, want %q at info", ok, level, tt.want)
			}
			if tt.det != nil && len(tt.det.requests) != 1 {
				t.Errorf("%d requests waiting, want the two signals as one", len(tt.det.requests))
			}
		})
	}
}

// TestNotifyRefreshCatchesSIGHUP: once notifyRefresh is set, a SIGHUP sent
// to the process arrives on its channel instead of ending the process.
func TestNotifyRefreshCatchesSIGHUP(t *testing.T) {
	sigs, stop := notifyRefresh()
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-sigs:
		if s != syscall.SIGHUP {
			t.Fatalf("got %s", s)
		}
	case <-time.After(waitLong):
		t.Fatal("SIGHUP never arrived")
	}
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
			if err := r.run(context.Background(), &out); err != nil {
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

// TestRefreshThroughTheServer: with the store held (here by this process),
// --refresh signals the holder, waits for a detection recorded after its
// request and prints it; records older than the request do not answer it.
func TestRefreshThroughTheServer(t *testing.T) {
	st, dir := openTestStore(t) // the "server"
	old := claude
	old.Version = "2.1.150"
	if err := recordInstallations(context.Background(), st, []agents.Installation{old}, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	c := &config.Config{StateDir: dir, AgentImage: "alfred-agent:1"}
	newTestRefresher := func(signal func(int) error) refresher {
		r := newRefresher(c, versionRunner{name: "image"}, testAdapters(t), nil, slog.New(slog.DiscardHandler))
		r.detect = func(context.Context) []agents.Installation {
			t.Error("detected itself while a server holds the store")
			return nil
		}
		r.signal, r.poll = signal, 10*time.Millisecond
		return r
	}

	t.Run("the server detects", func(t *testing.T) {
		var signalled int
		serverDone := make(chan error, 1)
		r := newTestRefresher(func(pid int) error {
			signalled = pid
			go func() {
				serverDone <- recordInstallations(context.Background(), st, []agents.Installation{claude}, time.Now())
			}()
			return nil
		})
		var out bytes.Buffer
		if err := r.run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if err := <-serverDone; err != nil {
			t.Fatal(err)
		}
		if signalled != os.Getpid() {
			t.Errorf("signalled pid %d, want the holder %d", signalled, os.Getpid())
		}
		if !strings.Contains(out.String(), "2.1.197") || strings.Contains(out.String(), "2.1.150") {
			t.Errorf("printed:\n%s\nwant the new detection only", out.String())
		}
	})

	failures := []struct {
		name   string
		signal func(int) error
		want   string
	}{
		{"the signal fails", func(int) error { return errors.New("send SIGHUP: operation not permitted") },
			"ask the server holding the state store (pid "},
		{"the server records nothing", func(int) error { return nil }, "recorded no detection within"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRefresher(tt.signal)
			r.wait = 100 * time.Millisecond
			err := r.run(context.Background(), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
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
