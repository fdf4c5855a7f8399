package views

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/state"
)

// liveMap is a LiveRuns of fixed outputs by run id.
type liveMap map[string]*live.Output

func (m liveMap) Follow(id string) (*live.Output, bool) {
	o, ok := m[id]
	return o, ok
}

const fixtureSecret = "sk-live-0123456789" // the fixture's Deps.Secrets

// sseEvent is one server-sent event, or a comment line.
type sseEvent struct {
	event, id, comment string
	data               []string
}

// sseClient reads the events of one stream.
type sseClient struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
}

// openStream GETs url and checks that it is an event stream.
func openStream(t *testing.T, url string, header http.Header) *sseClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sseClient{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next reads the next event or comment, skipping the retry field; ok is
// false at the end of the stream.
func (c *sseClient) next() (sseEvent, bool) {
	c.t.Helper()
	var ev sseEvent
	seen := false
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			if seen {
				c.t.Fatalf("stream ended inside an event: %+v", ev)
			}
			return ev, false
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return ev, true
			}
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			ev.comment = value
		case "event":
			ev.event = value
		case "id":
			ev.id = value
		case "data":
			ev.data = append(ev.data, value)
		case "retry":
			seen = false
		default:
			c.t.Fatalf("unknown field in %q", line)
		}
	}
}

// message reads the next event, which must be a message, and returns the
// texts of its lines.
func (c *sseClient) message() (texts []string, id string) {
	c.t.Helper()
	lines, id := c.typed()
	for _, l := range lines {
		texts = append(texts, l.Text)
	}
	return texts, id
}

// typed reads the next event, which must be a message, and returns its
// lines: each data line one JSON object.
func (c *sseClient) typed() (lines []live.Line, id string) {
	c.t.Helper()
	ev, ok := c.next()
	if !ok || ev.event != "" || ev.comment != "" {
		c.t.Fatalf("want a message, got %+v (ok %v)", ev, ok)
	}
	for _, d := range ev.data {
		var l live.Line
		if err := json.Unmarshal([]byte(d), &l); err != nil {
			c.t.Fatalf("data line %q is no JSON line: %v", d, err)
		}
		lines = append(lines, l)
	}
	return lines, ev.id
}

// end reads the next event, which must be the end, and the end of the stream.
func (c *sseClient) end() live.End {
	c.t.Helper()
	ev, ok := c.next()
	var e live.End
	if !ok || ev.event != "end" || len(ev.data) != 1 || json.Unmarshal([]byte(ev.data[0]), &e) != nil {
		c.t.Fatalf("want the end event, got %+v (ok %v)", ev, ok)
	}
	if ev, ok := c.next(); ok {
		c.t.Fatalf("the stream goes on after its end: %+v", ev)
	}
	return e
}

// TestLiveStream follows a run in progress: the lines so far, redacted, then
// the lines that come while it goes, then its end, then the stream closes.
func TestLiveStream(t *testing.T) {
	f := newFixture(t)
	out := live.New([]string{"tok-engine-known"}, 0)
	d := f.deps()
	d.Live = liveMap{f.resumed: out}
	srv := serve(t, d)

	write(t, out, "reading the issue\nkey "+fixtureSecret+" and tok-engine-known\npartial")
	c := openStream(t, srv.URL+"/runs/"+f.resumed+"/live", nil)
	lines, id := c.message()
	if want := []string{"reading the issue", "key [redacted] and [redacted]"}; !slices.Equal(lines, want) || id != "2" {
		t.Errorf("first message %q id %q, want %q id 2", lines, id, want)
	}

	write(t, out, " line ends\nwriting hello.go\n")
	if lines, id := c.message(); !slices.Equal(lines, []string{"partial line ends", "writing hello.go"}) || id != "4" {
		t.Errorf("next message %q id %q", lines, id)
	}

	out.Close(live.End{Status: "failed", Outcome: "failed: the token " + fixtureSecret + " was refused"})
	if e := c.end(); e.Status != "failed" || e.Outcome != "failed: the token [redacted] was refused" {
		t.Errorf("end %+v", e)
	}

	// A browser that reconnects sends the id it got last: it gets the rest.
	c = openStream(t, srv.URL+"/runs/"+f.resumed+"/live", http.Header{"Last-Event-Id": {"3"}})
	if lines, _ := c.message(); !slices.Equal(lines, []string{"writing hello.go"}) {
		t.Errorf("resumed at 3: %q", lines)
	}
	if e := c.end(); e.Status != "failed" {
		t.Errorf("resumed end %+v", e)
	}
}

func TestLiveStreamOfRunsNotFollowed(t *testing.T) {
	f := newFixture(t)
	d := f.deps()
	d.Live = liveMap{}
	srv := serve(t, d)

	// Finished: its record says how it ended.
	c := openStream(t, srv.URL+"/runs/"+f.fresh+"/live", nil)
	if e := c.end(); e.Status != "succeeded" {
		t.Errorf("end of a finished run %+v", e)
	}

	tests := []struct {
		name string
		deps func() Deps
		run  string
		want int
	}{
		{"in progress but not followed here: the page refreshes", func() Deps { return d }, f.resumed, http.StatusNoContent},
		{"no live source at all", f.deps, f.resumed, http.StatusNoContent},
		{"unknown run", func() Deps { return d }, "nope", http.StatusNotFound},
		{"signed out, with access control", func() Deps {
			g := d
			g.Access = newOAuthForge(t).access("http://unused", nil)
			return g
		}, f.resumed, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, _ := get(t, serve(t, tt.deps()).URL+"/runs/"+tt.run+"/live"); code != tt.want {
				t.Errorf("status %d, want %d", code, tt.want)
			}
		})
	}
}

// TestLiveStreamOutlivesTheWriteTimeout: the server's WriteTimeout (60 s in
// serve) would cut a stream; each write extends the deadline instead. Its
// ReadTimeout (30 s) does not end the request either.
func TestLiveStreamOutlivesTheWriteTimeout(t *testing.T) {
	f := newFixture(t)
	out := live.New(nil, 0)
	d := f.deps()
	d.Live = liveMap{f.resumed: out}
	r := mux.NewRouter()
	Register(r, d)
	srv := httptest.NewUnstartedServer(r)
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Config.ReadTimeout = srv.Config.WriteTimeout
	srv.Start()
	t.Cleanup(srv.Close)

	write(t, out, "before\n")
	c := openStream(t, srv.URL+"/runs/"+f.resumed+"/live", nil)
	if lines, _ := c.message(); !slices.Equal(lines, []string{"before"}) {
		t.Fatalf("first message %q", lines)
	}
	time.Sleep(3 * srv.Config.WriteTimeout) // past the server's deadline, not the stream's
	write(t, out, "after\n")
	if lines, _ := c.message(); !slices.Equal(lines, []string{"after"}) {
		t.Errorf("after the WriteTimeout %q", lines)
	}
	out.Close(live.End{Status: "succeeded"})
	c.end()
}

// TestLiveStreamKeepsAliveAndStops: a quiet stream sends comment lines, and
// ends when the server stops (which would wait for it otherwise).
func TestLiveStreamKeepsAliveAndStops(t *testing.T) {
	f := newFixture(t)
	out := live.New(nil, 0)
	stopping := make(chan struct{})
	d := f.deps()
	d.Live, d.Stopping = liveMap{f.resumed: out}, stopping
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.follow(r.Context(), newEventStream(w, time.Minute), out, 0, 10*time.Millisecond)
	}))
	t.Cleanup(srv.Close)

	c := openStream(t, srv.URL, nil)
	if ev, ok := c.next(); !ok || ev.comment != "keep-alive" {
		t.Fatalf("want a keep-alive comment, got %+v", ev)
	}
	close(stopping)
	for {
		ev, ok := c.next()
		if !ok {
			break
		}
		if ev.comment != "keep-alive" {
			t.Fatalf("after the stop: %+v", ev)
		}
	}
}

func TestRunPageFollowsLiveOnlyWhileInProgress(t *testing.T) {
	f := newFixture(t)
	d := f.deps()
	d.Live = liveMap{}
	srv := serve(t, d)

	_, body := get(t, srv.URL+"/runs/"+f.resumed)
	for _, want := range []string{`data-src="/runs/` + f.resumed + `/live"`, `<noscript><meta http-equiv="refresh" content="5"></noscript>`, "new EventSource("} {
		if !strings.Contains(body, want) {
			t.Errorf("the page of a run in progress lacks %q", want)
		}
	}
	_, body = get(t, srv.URL+"/runs/"+f.fresh)
	if strings.Contains(body, "EventSource") || strings.Contains(body, "refresh") {
		t.Error("the page of a finished run follows it")
	}
	_, body = get(t, serve(t, f.deps()).URL+"/runs/"+f.resumed)
	if strings.Contains(body, "EventSource") || strings.Contains(body, "<noscript>") {
		t.Error("without a live source, the page of a run in progress has a stream")
	}
}

// TestLiveOutputInABrowser: Chromium shows the lines of a run in progress as
// they come, before the run ends, then its outcome, without reloading.
func TestLiveOutputInABrowser(t *testing.T) {
	f := newFixture(t)
	out := live.New(nil, 0)
	d := f.deps()
	d.Live = liveMap{f.resumed: out}
	srv := serve(t, d)
	ctx := browser(t)

	write(t, out, "step 1: reading the issue\nstep 2: key "+fixtureSecret+"\n")
	open(t, ctx, srv.URL+"/runs/"+f.resumed, `[data-test="live"]`)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.samePage = true`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, `#live`, "step 2: key [redacted]")
	write(t, out, "step 3: writing hello.go\n")
	waitText(t, ctx, `#live`, "step 3: writing hello.go")

	got := text(t, ctx, `[data-test="live"]`)
	if want := "step 1: reading the issue\nstep 2: key [redacted]\nstep 3: writing hello.go"; got != want || strings.Contains(got, fixtureSecret) {
		t.Errorf("live output %q, want %q", got, want)
	}
	if n := count(t, ctx, `[data-test="live-end"]:not([hidden])`); n != 0 {
		t.Error("the end shows before the run has ended")
	}
	if got := text(t, ctx, `[data-test="status"]`); !strings.HasPrefix(got, "running") {
		t.Errorf("status while running %q", got)
	}

	finishRun(t, f, "step 1: reading the issue\n...\n")
	out.Close(live.End{Status: "succeeded", Outcome: "succeeded"})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-test="live-end"]`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, `[data-test="live-end"]`); !strings.HasPrefix(got, "Run ended: succeeded.") {
		t.Errorf("end %q", got)
	}
	if got := text(t, ctx, `[data-test="status"]`); got != "succeeded" {
		t.Errorf("status after the end %q", got)
	}
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.samePage === true`)); err != nil || !same {
		t.Errorf("the page reloaded while following the run (%v)", err)
	}

	// The link shows the recorded run, which no longer streams.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-test="live-reload"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-test="log"]`))); err != nil {
		t.Fatal(err)
	}
	if n := count(t, ctx, `[data-test="live"]`); n != 0 {
		t.Error("the finished run's page still streams")
	}
	if got := text(t, ctx, `[data-test="log"]`); !strings.Contains(got, "step 1: reading the issue") {
		t.Errorf("recorded output %q", got)
	}
}

// waitText waits until the element sel holds want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	js := `(document.querySelector(` + jsString(sel) + `) || {textContent: ""}).textContent.includes(` + jsString(want) + `)`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		t.Fatalf("%s never showed %q (it shows %q): %v", sel, want, got, err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// finishRun records the fixture's running run as succeeded, with log.
func finishRun(t *testing.T, f fixture, log string) {
	t.Helper()
	run, _, err := f.store.RunWithSessions(f.resumed)
	if err != nil {
		t.Fatal(err)
	}
	run.Status, run.Outcome, run.Log, run.FinishedAt = state.RunSucceeded, "succeeded", log, run.StartedAt.Add(time.Minute)
	if err := f.store.Update(context.Background(), func(tx *state.Tx) error { return tx.PutRun(run) }); err != nil {
		t.Fatal(err)
	}
}

// write writes text to the output's stdout, as the agent would.
func write(t *testing.T, out *live.Output, text string) {
	t.Helper()
	if _, err := out.Stdout().Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
}
