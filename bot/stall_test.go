package bot

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/state"
)

// stallClock is a clock and an activity source the test moves by hand.
type stallClock struct {
	base  time.Time
	now   atomic.Int64 // the clock, in ns after base
	seen  atomic.Int64 // the source's last activity, in ns after base; -1: none
	calls atomic.Int32 // how often the watchdog asked the source
}

func newStallClock() *stallClock {
	c := &stallClock{base: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)}
	c.seen.Store(-1)
	return c
}

func (c *stallClock) clock() time.Time { return c.base.Add(time.Duration(c.now.Load())) }

func (c *stallClock) source() time.Time {
	c.calls.Add(1)
	if n := c.seen.Load(); n >= 0 {
		return c.base.Add(time.Duration(n))
	}
	return time.Time{}
}

// looked waits until the watchdog has asked the source n more times: it has
// judged the sources at least n-1 times since.
func (c *stallClock) looked(t *testing.T, n int32) {
	t.Helper()
	want := c.calls.Load() + n
	waitUntil(t, func() bool { return c.calls.Load() >= want })
}

const stallTimeout = 100 * time.Millisecond

// TestStallWatch: the watchdog stops a run once no source has moved for the
// timeout, not before; a source's activity moves the deadline; with no
// source nothing is watched; a run that ends otherwise is no stall.
func TestStallWatch(t *testing.T) {
	tests := []struct {
		name    string
		sealed  bool // the source is the gateway's, not the output's
		active  bool // the source is active just before the timeout
		want    error
		stopped bool
	}{
		{"a silent output stalls", false, false, errStalled{idle: stallTimeout}, true},
		{"a quiet gateway session stalls", true, false, errStalled{idle: stallTimeout, gateway: true}, true},
		{"output moves the deadline", false, true, nil, false},
		{"a model request moves the deadline", true, true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newStallClock()
			w := stallWatch{timeout: stallTimeout, now: c.clock}
			if tt.sealed {
				w.gateway = c.source
				c.seen.Store(0) // the session opened with the run
			} else {
				w.output = c.source
			}
			ctx, stop := w.start(context.Background())
			c.looked(t, 2)
			if ctx.Err() != nil {
				t.Fatal("stopped before any time passed")
			}
			if tt.active {
				c.seen.Store(int64(stallTimeout - time.Millisecond))
			}
			c.now.Store(int64(stallTimeout))
			if tt.stopped {
				<-ctx.Done() // the test's deadline bounds it
			} else {
				c.looked(t, 3)
			}
			if got := stop(); got != tt.want {
				t.Errorf("stop() = %v, want %v", got, tt.want)
			}
			if ctx.Err() == nil {
				t.Error("the watched context outlives stop")
			}
		})
	}
}

// TestStallWatchSealedSession: a sealed run's gateway session keeps the run
// alive while a model answer is still coming, however long; once the
// session is quiet for the timeout, the run stalls.
func TestStallWatchSealedSession(t *testing.T) {
	inFlight, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		close(inFlight)
		<-release
		_, _ = io.WriteString(w, "data: {}\n\n")
	}))
	defer up.Close()
	dir, err := os.MkdirTemp("", "gws") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c := newStallClock()
	g, err := gateway.New(gateway.Options{Providers: []gateway.Provider{gateway.Anthropic(up.URL, "sk-real")}, Dir: dir, Clock: c.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := g.Open("run-1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := stallWatch{timeout: stallTimeout, now: c.clock, gateway: func() time.Time {
		c.calls.Add(1)
		return s.LastActivity()
	}}.start(context.Background())
	defer stop()

	answered := make(chan error, 1)
	go func() { answered <- modelRequest(s) }()
	<-inFlight
	c.now.Store(int64(10 * stallTimeout)) // the model thinks for long
	c.looked(t, 3)
	if ctx.Err() != nil {
		t.Fatal("stopped while a model answer was still coming")
	}
	close(release)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	// The gateway's handler ends a moment after the client has read all.
	waitUntil(t, func() bool { c.now.Add(int64(time.Millisecond)); return s.LastActivity().Before(c.clock()) })
	c.now.Store(int64(s.LastActivity().Sub(c.base) + stallTimeout))
	<-ctx.Done()
	if got, want := stop(), (errStalled{idle: stallTimeout, gateway: true}); got != want {
		t.Errorf("stop() = %v, want %v", got, want)
	}
}

// modelRequest sends one model request through the session's socket and
// reads its whole answer.
func modelRequest(s *gateway.Session) error {
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", s.SocketPath())
	}}}
	req, err := http.NewRequest(http.MethodPost, "http://gateway/anthropic/v1/messages", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("x-api-key", s.Token())
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

func TestStallWatchOff(t *testing.T) {
	c := newStallClock()
	for name, w := range map[string]stallWatch{
		"no source":  {timeout: stallTimeout, now: c.clock},
		"no timeout": {now: c.clock, output: c.source},
	} {
		t.Run(name, func(t *testing.T) {
			parent := context.Background()
			ctx, stop := w.start(parent)
			if ctx != parent || stop() != nil {
				t.Error("watched")
			}
		})
	}
}

// TestStallWatchEndsWithTheRun: a run stopped on purpose is no stall, and
// the watchdog stops with it.
func TestStallWatchEndsWithTheRun(t *testing.T) {
	c := newStallClock()
	parent, cancel := context.WithCancelCause(context.Background())
	ctx, stop := stallWatch{timeout: stallTimeout, now: c.clock, output: c.source}.start(parent)
	stopped := errors.New("finish")
	cancel(stopped)
	<-ctx.Done()
	if err := stop(); err != nil {
		t.Errorf("stop() = %v, want nil", err)
	}
	if !errors.Is(context.Cause(ctx), stopped) {
		t.Errorf("cause %v", context.Cause(ctx))
	}
}

func TestStallTick(t *testing.T) {
	for timeout, want := range map[time.Duration]time.Duration{
		time.Millisecond:       10 * time.Millisecond,
		300 * time.Millisecond: 37500 * time.Microsecond,
		2 * time.Minute:        5 * time.Second,
	} {
		if got := stallTick(timeout); got != want {
			t.Errorf("stallTick(%s) = %s, want %s", timeout, got, want)
		}
	}
}

func TestErrStalledSaysWhatWasWatched(t *testing.T) {
	tests := []struct {
		err  errStalled
		want string
	}{
		{errStalled{idle: 2 * time.Minute, gateway: true}, "the agent stalled: no output and no model request for 2m0s, so Alfred stopped it (AGENT_STALL_TIMEOUT); check the CLI's provider settings"},
		{errStalled{idle: 2 * time.Minute}, "the agent stalled: no output for 2m0s, so Alfred stopped it (AGENT_STALL_TIMEOUT); check the CLI's provider settings"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

// TestDecideStalledRunBlocksAtOnce: a stalled run blocks its mailbox with
// its outcome in the comment, retries left or not; another failure retries.
func TestDecideStalledRunBlocksAtOnce(t *testing.T) {
	why := errStalled{idle: 2 * time.Minute, gateway: true}.Error()
	r := lifecycle.Rules{LLMRetries: 2}
	tests := []struct {
		name    string
		run     state.Run
		step    lifecycle.Step
		blocked bool
	}{
		{"stalled", state.Run{Status: state.RunFailed, Stalled: true, Outcome: why}, lifecycle.StepBlocked, true},
		{"failed otherwise", state.Run{Status: state.RunFailed, Outcome: "crash"}, lifecycle.StepRunFailed, false},
		{"canceled", state.Run{Status: state.RunCanceled, Stalled: true, Outcome: "canceled: finish"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run.ID, tt.run.Phase = "run-1", string(agents.PhaseDevelopment)
			mb := state.Mailbox{Status: string(lifecycle.StatusInDevelopment), ActiveRunID: "run-1"}
			got, a := lifecycle.DecideRunEnd(mb, tt.run, r)
			if a.Step != tt.step || got.ActiveRunID != "" {
				t.Errorf("step %q, active run %q", a.Step, got.ActiveRunID)
			}
			if said := a.Say != nil && a.Say.Kind == lifecycle.KindBlocked && strings.Contains(a.Say.Text, why); said != tt.blocked {
				t.Errorf("blocked comment %+v", a.Say)
			}
		})
	}
}

// reportingOnHost is onHost for an adapter that says its CLI prints as it
// works, so that its silence is watched without a gateway.
type reportingOnHost struct{ onHost }

func (reportingOnHost) ReportsProgress() bool { return true }

// stallHarness is a harness whose fake agent runs exec on the host with
// AGENT_STALL_TIMEOUT=1s (long enough that a loaded machine's slow process
// start is no stall); reporting says whether the adapter declares
// that its CLI prints as it works.
func stallHarness(t *testing.T, reporting bool, exec ...string) *harness {
	t.Helper()
	fa, err := fake.New(fake.Options{Reply: analysisReply, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, func(s *setup) {
		s.runner = "host"
		s.adapter = &scripted{Adapter: fa}
		s.wrap = func(a agents.Adapter) agents.Adapter {
			if reporting {
				return reportingOnHost{onHost{a}}
			}
			return onHost{a}
		}
		s.settings = append(s.settings, projectSetting("AGENT_STALL_TIMEOUT", "1s"))
	})
}

// TestStalledAgentIsStoppedAndSaid: a CLI that prints nothing is stopped
// long before its sleep ends; the run failed (not canceled), the mailbox
// blocks at once (LLM_MAX_RETRIES is 2) and the thread says why.
func TestStalledAgentIsStoppedAndSaid(t *testing.T) {
	t.Parallel()
	h := stallHarness(t, true, "sleep", "30")
	h.assign(7)
	mb := h.waitStatus(7, lifecycle.StatusBlocked)
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1: a stall is not retried", len(runs))
	}
	run := runs[0]
	const why = "the agent stalled: no output for 1s, so Alfred stopped it (AGENT_STALL_TIMEOUT)"
	if run.Status != state.RunFailed || !run.Stalled || !strings.HasPrefix(run.Outcome, why) {
		t.Errorf("run: status %s stalled %v outcome %q", run.Status, run.Stalled, run.Outcome)
	}
	if d := run.FinishedAt.Sub(run.StartedAt); d >= 30*time.Second {
		t.Errorf("the run lasted %s: it was not stopped before its sleep ended", d)
	}
	if body := h.commentOf(7, lifecycle.KindBlocked); !strings.Contains(body, why) {
		t.Errorf("blocked comment:\n%s", body)
	}
}

// TestAgentsThatShowLifeAreNotStopped: a CLI that keeps printing is not
// stopped, nor a silent one whose adapter does not say it prints as it
// works (Claude Code's JSON comes at its end) and that has no gateway.
func TestAgentsThatShowLifeAreNotStopped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reporting bool
		exec      []string
	}{
		{"it keeps printing", true, []string{"sh", "-c", "i=0; while [ $i -lt 30 ]; do echo tick; sleep 0.1; i=$((i+1)); done"}}, // 3 s, past the timeout
		{"its silence says nothing", false, []string{"sleep", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := stallHarness(t, tt.reporting, tt.exec...)
			h.assign(7)
			mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
			for _, run := range mustRuns(t, h.store, mb.ID) {
				if run.Status != state.RunSucceeded || run.Stalled {
					t.Errorf("run: status %s stalled %v outcome %q", run.Status, run.Stalled, run.Outcome)
				}
			}
		})
	}
}

// commentOf is the body of the issue's comment of kind.
func (h *harness) commentOf(iid int64, kind string) string {
	comments, _ := h.forge.Comments(context.Background(), h.issueTarget(iid))
	for _, c := range comments {
		if _, k, _ := forges.ParseMarker(c.Body); k == kind {
			return c.Body
		}
	}
	return ""
}
