package agents

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/internal/logtest"
)

// waitLong bounds every wait of these tests: a failure, never a measure.
const waitLong = 30 * time.Second

// memRecords are records kept in memory (the wiring keeps them in the state
// store), which another process may hold (SharedRecords).
type memRecords struct {
	mu   sync.Mutex
	recs []Record
	held bool // Open says another process holds them
	pid  int  // that process
}

func (m *memRecords) Installations() ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs), nil
}

func (m *memRecords) Put(_ context.Context, recs []Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		i := slices.IndexFunc(m.recs, func(p Record) bool {
			return p.AdapterID == r.AdapterID && p.Runner == r.Runner && p.Image == r.Image
		})
		if i < 0 {
			m.recs = append(m.recs, r)
		} else {
			m.recs[i] = r
		}
	}
	return nil
}

func (m *memRecords) Open(context.Context) (Records, func() error, bool, error) {
	if m.held {
		return nil, nil, true, nil
	}
	return m, func() error { return nil }, false, nil
}

func (m *memRecords) Holder() (int, error) { return m.pid, nil }

func (m *memRecords) Read(context.Context) ([]Record, error) { return m.Installations() }

// countingDetect is a detection that reports each call on calls, after
// waiting for gate when one is set for that call.
type countingDetect struct {
	calls chan int
	mu    sync.Mutex
	n     int
	gates map[int]chan struct{}
	found []Installation
	panic int // the call that panics, 0 for none
}

func newCountingDetect(found ...Installation) *countingDetect {
	return &countingDetect{calls: make(chan int, 100), gates: map[int]chan struct{}{}, found: found}
}

func (c *countingDetect) detect(context.Context) []Installation {
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

func testDetector(recs Records, interval time.Duration) (*Detector, *fakeClock, *logtest.Book) {
	book := &logtest.Book{}
	d := NewDetector(recs, interval, nil, slog.New(book))
	clock := &fakeClock{tick: make(chan time.Time)}
	d.after = clock.after
	return d, clock, book
}

func runDetector(t *testing.T, d *Detector, detect DetectFunc) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	first, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		d.Run(ctx, detect, first)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	return first
}

var claude = Installation{AdapterID: "claude-code", Runner: "image", Image: "alfred-agent:1", Version: "2.1.197",
	VerifiedRange: ">=2.1.101, <=2.1.332", ResumableSessions: true}

// TestDetectorSchedule: the first detection is recorded before runs are let
// go, then each tick of the schedule detects again.
func TestDetectorSchedule(t *testing.T) {
	st := &memRecords{}
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
	st := &memRecords{}
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
	st := &memRecords{}
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
	st := &memRecords{}
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
	st := &memRecords{}
	broken := Installation{AdapterID: "gemini", Runner: "image", Image: "alfred-agent:1", Reason: ReasonBroken,
		Error: "gemini --version exited 1: SyntaxError"}
	missing := Installation{AdapterID: "grok", Runner: "image", Image: "alfred-agent:1", Reason: ReasonNotInstalled, Error: "exited 127"}
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
	st := &memRecords{}
	for _, tt := range []struct {
		name string
		det  *Detector
		want string
	}{
		{"with a detector", NewDetector(st, 0, nil, slog.New(slog.DiscardHandler)), "agent detection requested"},
		{"without forge", nil, "agent detection not requested: agents are detected only with a forge configured"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			book := &logtest.Book{}
			ctx, cancel := context.WithCancel(context.Background())
			sigs, done := make(chan os.Signal), make(chan struct{})
			go func() {
				defer close(done)
				ForwardRefresh(ctx, sigs, tt.det, slog.New(book))
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

// TestNotifyRefreshCatchesSIGHUP: once NotifyRefresh is set, a SIGHUP sent
// to the process arrives on its channel instead of ending the process.
func TestNotifyRefreshCatchesSIGHUP(t *testing.T) {
	sigs, stop := NotifyRefresh()
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
