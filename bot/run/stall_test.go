package run

import (
	"context"
	"encoding/json"
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

	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/internal/live"
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

// TestStallNamesTheLastStep: the watchdog's errStalled names the last step
// it was given when it stops the run.
func TestStallNamesTheLastStep(t *testing.T) {
	c := newStallClock()
	w := stallWatch{timeout: stallTimeout, now: c.clock, output: c.source, step: func() string { return "a call of Bash `sleep 600`" }}
	ctx, stop := w.start(context.Background())
	c.looked(t, 2)
	c.now.Store(int64(stallTimeout))
	<-ctx.Done()
	if got, want := stop(), (errStalled{idle: stallTimeout, last: "a call of Bash `sleep 600`"}); got != want {
		t.Errorf("stop() = %v, want %v", got, want)
	}
}

// TestLastStepSaid: each kind of step in a few words, the agent's words
// clipped and on one line.
func TestLastStepSaid(t *testing.T) {
	tests := []struct {
		line live.Line
		want string
	}{
		{live.Line{Kind: "tool_call", Tool: "Bash", Args: `{"command":"go test ./...","description":"run the tests"}`}, "a call of Bash `go test ./...`"},
		{live.Line{Kind: "tool_call", Tool: "exec_command", Args: `{"cmd":["bash","-lc","ls\n-la"]}`}, "a call of exec_command `ls -la`"},
		{live.Line{Kind: "tool_call", Tool: "Write", Args: `{"file_path":"/workspace/a.go","content":"x"}`}, "a call of Write `/workspace/a.go`"},
		{live.Line{Kind: "tool_call", Tool: "todo", Args: `{"items":[1]}`}, "a call of todo `{\"items\":[1]}`"},
		{live.Line{Kind: "tool_call", Tool: "Bash", Args: "{\"command\":\"echo `x`\"}"}, "a call of Bash `echo 'x'`"},
		{live.Line{Kind: "tool_call", Tool: "noargs"}, "a call of noargs"},
		{live.Line{Kind: "tool_result", Tool: "Bash", Failed: true}, "a failed result of Bash"},
		{live.Line{Kind: "tool_result"}, "a result of a tool"},
		{live.Line{Kind: "edit", Path: "main.go"}, "an edit of `main.go`"},
		{live.Line{Kind: "assistant", Text: "Let me look at\nthe " + strings.Repeat("code ", 30)}, "the answer `Let me look at the code code code code code code code code code code code code …`"},
		{live.Line{Kind: "assistant", Text: "![x](http://evil.example/t.png) `done`"}, "the answer `![x](http://evil.example/t.png) 'done'`"},
		{live.Line{Kind: "tool_call", Tool: "[Bash](http://evil.example)", Args: `{"command":"ls"}`}, "a call of Bashhttpevil.example `ls`"},
		{live.Line{Kind: "other", Text: "turn started"}, "`turn started`"},
	}
	for _, tt := range tests {
		if got := lastStep(tt.line); got != tt.want {
			t.Errorf("lastStep(%+v)\n = %s\nwant %s", tt.line, got, tt.want)
		}
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
		{errStalled{idle: time.Minute, last: "a call of Bash `go test ./...`"}, "the agent stalled: no output for 1m0s after a call of Bash `go test ./...`, so Alfred stopped it (AGENT_STALL_TIMEOUT); check the CLI's provider settings"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

// waitUntil waits for cond, at most 20 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in time")
}

// TestLastOf: the last step of a live output, a result named by its call.
func TestLastOf(t *testing.T) {
	tests := []struct {
		name, stdout, want string
	}{
		{"nothing yet", "", ""},
		{"plain text only", "hello\n", ""},
		{"a call", `{"call":"Bash","args":{"command":"sleep 600"}}` + "\n", "a call of Bash `sleep 600`"},
		{"a result after its call", `{"call":"Bash","args":{"command":"echo hi"}}` + "\n" + `{"result":"hi"}` + "\n", "the result of a call of Bash `echo hi`"},
		{"an answer after a call", `{"call":"Bash","args":{"command":"echo hi"}}` + "\n" + `{"say":"done"}` + "\n", "the answer `done`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := live.New(nil, 0)
			out.Decode(func(line []byte) ([]live.Line, bool) {
				var e struct {
					Call, Say, Result string
					Args              json.RawMessage
				}
				if json.Unmarshal(line, &e) != nil {
					return nil, false
				}
				switch {
				case e.Call != "":
					return []live.Line{{Kind: "tool_call", Tool: e.Call, Args: string(e.Args)}}, true
				case e.Result != "":
					return []live.Line{{Kind: "tool_result", Text: e.Result}}, true
				}
				return []live.Line{{Kind: "assistant", Text: e.Say}}, true
			})
			_, _ = out.Stdout().Write([]byte(tt.stdout))
			if got := lastOf(out); got != tt.want {
				t.Errorf("lastOf = %q, want %q", got, tt.want)
			}
		})
	}
}
