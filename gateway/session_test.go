package gateway

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is a clock the test moves by hand.
type testClock struct{ n atomic.Int64 }

func (c *testClock) now() time.Time     { return time.Unix(0, c.n.Load()) }
func (c *testClock) set(t time.Time)    { c.n.Store(t.UnixNano()) }
func (c *testClock) at(m int) time.Time { return time.Date(2026, 5, 1, 9, m, 0, 0, time.UTC) }

// waitIdle waits until no request of s is being answered: its handler has
// returned (the client may have read the whole answer a moment before).
func waitIdle(t *testing.T, s *Session) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.busy.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a request is still being answered")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLastActivity: a session is active when it opens, when a request
// arrives and while it is answered (a streamed answer included), and while
// bytes go through a tunnel; an open connection that carries nothing is not
// activity.
func TestLastActivity(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "data: {\"type\":\"ping\"}\n\n")
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("hold") != "" {
			<-release
		}
		_, _ = io.WriteString(w, "data: {\"type\":\"done\"}\n\n")
	}))
	defer up.Close()
	echo := echoServer(t)
	var clock testClock
	clock.set(clock.at(0))
	g, _ := newGateway(t, Options{Providers: []Provider{Anthropic(up.URL, realKey)}, Allow: []string{echo}, Clock: clock.now})
	s := open(t, g, "run")
	c := socketClient(s.SocketPath())
	check := func(what string, want time.Time) {
		t.Helper()
		if got := s.LastActivity(); !got.Equal(want) {
			t.Errorf("%s: LastActivity %v, want %v", what, got, want)
		}
	}

	check("opened", clock.at(0))
	clock.set(clock.at(1))
	check("nothing since", clock.at(0))

	clock.set(clock.at(2))
	if code, _, _ := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", "{}", map[string]string{"x-api-key": s.Token()}); code != 200 {
		t.Fatalf("status %d", code)
	}
	waitIdle(t, s)
	clock.set(clock.at(5))
	check("after an answer", clock.at(2))

	br, _ := heldStream(t, c, s.Token())
	clock.set(clock.at(30))
	check("while the answer streams", clock.at(30))
	clock.set(clock.at(40))
	check("still streaming", clock.at(40))
	close(release)
	if _, err := io.ReadAll(br); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s)
	clock.set(clock.at(50))
	check("after the stream", clock.at(40))

	conn, cresp := connectConn(t, s, echo, s.Token())
	defer conn.Close()
	if cresp.StatusCode != 200 {
		t.Fatalf("CONNECT: status %d", cresp.StatusCode)
	}
	clock.set(clock.at(55))
	check("an idle tunnel", clock.at(50))
	_, _ = io.WriteString(conn, "ping\n")
	if line, err := bufio.NewReader(conn).ReadString('\n'); line != "ping\n" {
		t.Fatalf("echo %q %v", line, err)
	}
	check("bytes through the tunnel", clock.at(55))
}
